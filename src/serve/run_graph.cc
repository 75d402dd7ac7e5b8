// A run's DAG drawn by Graphviz. See run_graph.h.
#include "serve/run_graph.h"

#include <fmt/format.h>
#include <graphviz/gvc.h>

#include <map>
#include <memory>
#include <mutex>

#include "orch/plan_loader.h"

namespace orch::serve {

namespace {

// libgvc keeps global state: one layout at a time in this process, in one
// context made at the first drawing and kept for the process's life (freeing a
// context and making another leaves its text-measuring plugin reading freed
// font data: seen with ASan on Debian's graphviz 2.43).
std::mutex g_graphviz;
GVC_t* g_context = nullptr;

// Graphviz takes char* for names and values it does not change.
char* c(const std::string& s) {
  return const_cast<char*>(s.c_str());
}
char* c(const char* s) {
  return const_cast<char*>(s);
}

// A label Graphviz shows as written: its escapes (\n, \l, \N...) doubled.
std::string literal_label(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

const char* status_colour(StepStatus status) {
  switch (status) {
    case StepStatus::Pending:
      return "#eeeeee";
    case StepStatus::Running:
      return "#9ecbff";
    case StepStatus::Done:
      return "#a7e3b5";
    case StepStatus::Failed:
      return "#ffaba8";
    case StepStatus::Skipped:
      return "#d0d7de";
    case StepStatus::Cancelled:
      return "#d0d7de";
    case StepStatus::AwaitingApproval:
      return "#ffdf5d";
  }
  return "#ffffff";
}

Expected<std::string> run_graph_svg(Store& store, const std::string& run_id) {
  auto run = ORCH_TRY(store.find_run(run_id));
  if (!run) return std::unexpected(store.no_run(run_id));
  // Counted first, without reading the plan: a run too large to draw is said at once.
  int total = 0;
  for (const auto& [status, n] : ORCH_TRY(store.step_status_counts(run_id))) total += n;
  if (total > kMaxDrawnSteps)
    return fail(ErrorCode::InvalidInput,
                fmt::format("run {} has {} steps: more than {} are not drawn (the steps "
                            "table lists them)",
                            run_id, total, kMaxDrawnSteps));
  const PlanVersion version = ORCH_TRY(store.latest_plan(run_id));
  LoadResult loaded = parse_plan(version.text, version.path);
  if (!loaded.checkable)
    return fail(ErrorCode::InvalidInput,
                fmt::format("run {}: its plan (version {}) cannot be read again to draw it", run_id,
                            version.version));
  const Plan& plan = loaded.plan;
  if (plan.steps.size() > static_cast<std::size_t>(kMaxDrawnSteps))
    return fail(ErrorCode::InvalidInput,
                fmt::format("run {} has {} steps: more than {} are not drawn (the steps "
                            "table lists them)",
                            run_id, plan.steps.size(), kMaxDrawnSteps));
  std::map<std::string, StepStatus> status;
  for (const StepRecord& s : ORCH_TRY(store.steps(run_id))) status[s.step_id] = s.status;

  std::lock_guard<std::mutex> hold(g_graphviz);
  if (g_context == nullptr) g_context = gvContext();
  GVC_t* gvc = g_context;
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> g(agopen(c("run"), Agdirected, nullptr), agclose);
  if (gvc == nullptr || !g) return fail(ErrorCode::Internal, "graphviz: out of memory");
  agattr(g.get(), AGRAPH, c("rankdir"), c("LR"));
  agattr(g.get(), AGNODE, c("shape"), c("box"));
  agattr(g.get(), AGNODE, c("style"), c("rounded,filled"));
  agattr(g.get(), AGNODE, c("fontname"), c("Helvetica"));
  agattr(g.get(), AGNODE, c("fillcolor"), c("#eeeeee"));
  agattr(g.get(), AGNODE, c("class"), c(""));
  agattr(g.get(), AGNODE, c("id"), c(""));
  agattr(g.get(), AGNODE, c("label"), c("\\N"));
  std::map<std::string, Agnode_t*> nodes;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    Agnode_t* n = agnode(g.get(), c(step.id), 1);
    auto it = status.find(step.id);
    const StepStatus st = it != status.end() ? it->second : StepStatus::Pending;
    agset(n, c("fillcolor"), c(status_colour(st)));
    agset(n, c("class"), c(fmt::format("status-{}", step_status_name(st))));
    agset(n, c("id"), c(fmt::format("step-{}", i)));
    agset(n, c("label"), c(literal_label(step.id)));
    nodes[step.id] = n;
  }
  for (const Step& step : plan.steps)
    for (const std::string& dep : step.deps)
      if (auto from = nodes.find(dep); from != nodes.end())
        agedge(g.get(), from->second, nodes[step.id], nullptr, 1);
  if (gvLayout(gvc, g.get(), "dot") != 0) return fail(ErrorCode::Internal, "graphviz: the dot layout failed");
  char* data = nullptr;
  unsigned int length = 0;
  const int rendered = gvRenderData(gvc, g.get(), "svg", &data, &length);
  std::string svg = rendered == 0 && data != nullptr ? std::string(data, length) : std::string();
  if (data != nullptr) gvFreeRenderData(data);
  gvFreeLayout(gvc, g.get());
  if (svg.empty()) return fail(ErrorCode::Internal, "graphviz: rendering SVG failed");
  return svg;
}

}  // namespace orch::serve
