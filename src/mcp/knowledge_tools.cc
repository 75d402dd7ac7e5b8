// mcp/knowledge_tools.cc — what orch knows and has recorded, over MCP: route,
// similarity, plan, review_show, cycle_status.
#include <fmt/format.h>

#include <filesystem>

#include "cli/cycle_report.h"
#include "cli/json_docs.h"
#include "mcp/orch_tools.h"
#include "memory/memory.h"
#include "orch/clock.h"
#include "orch/report.h"
#include "route/route_report.h"
#include "route/tables.h"

namespace orch::mcp {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

}  // namespace

Expected<ToolResult> OrchTools::route(const json& args) {
  auto tables = ORCH_TRY(route::RouteTables::load(open_.env.workspace.string()));
  auto report = ORCH_TRY(route::make_route_report(
      tables, open_.env.registry, args.value("request", std::string()), args.value("dry_run", false)));
  json doc = plain_json(route::route_report_json(report, iso_time(Clock::system().wall_ms())));
  std::string text = doc["output"].value("summary", std::string());
  return ToolResult::ok(std::move(doc), one_line(text));
}

Expected<ToolResult> OrchTools::similarity(const json& args) {
  const std::string text = args.value("text", std::string());
  const memory::MemoryPaths paths = memory::memory_paths(open_.env.workspace);
  // A workspace with no memory yet has nothing similar; its folder is not made to say so.
  bool any = false;
  std::error_code ec;
  for (const auto& p : {paths.db, paths.notes, paths.lessons, paths.traces}) any = any || fs::exists(p, ec);
  std::vector<memory::Hit> hits;
  if (any) {
    auto index = ORCH_TRY(memory::MemoryIndex::open(paths));
    ORCH_TRY(index->reindex());
    hits = ORCH_TRY(index->similar(text, args.value("limit", 5)));
  }
  std::size_t similar = 0;
  for (const auto& h : hits) similar += h.score >= memory::kSimilarThreshold ? 1 : 0;
  return ToolResult::ok(
      plain_json(cli::similarity_json(text, hits)),
      fmt::format("{} match{}, {} similar", hits.size(), hits.size() == 1 ? "" : "es", similar));
}

Expected<ToolResult> OrchTools::plan(const json& args) {
  if (!open_.env.planner) return fail(ErrorCode::Internal, "no planner");
  auto planned = ORCH_TRY(open_.env.planner(args.value("request", std::string())));
  return ToolResult::ok(plain_json(cli::planned_json(planned)),
                        fmt::format("a plan of {} step{} ({}): {}", planned.plan.steps.size(),
                                    planned.plan.steps.size() == 1 ? "" : "s",
                                    flows::plan_path_name(planned.path), one_line(planned.why)));
}

Expected<ToolResult> OrchTools::review_show(const json& args) {
  const std::string id = args.value("review", std::string());
  auto found = ORCH_TRY(open_.ledger->reviews().find_review(id));
  if (!found) return fail(ErrorCode::NotFound, fmt::format("no review '{}' in the ledger", id));
  json doc = json::parse(found->doc_json, nullptr, false);
  if (!doc.is_object())
    return fail(ErrorCode::Store, fmt::format("review '{}': the stored document is not JSON", id));
  return ToolResult::ok(std::move(doc),
                        fmt::format("review {}: {} ({} round{})", id, review_status_name(found->status),
                                    found->verdict.empty() ? "no verdict" : found->verdict, found->rounds,
                                    found->rounds == 1 ? "" : "s"));
}

Expected<ToolResult> OrchTools::cycle_status(const json& args) {
  CycleStore& cycles = open_.ledger->cycles();
  std::optional<CycleRecord> record;
  if (args.contains("run")) {
    record = ORCH_TRY(cycles.find_cycle(args["run"].get<std::string>()));
    if (!record)
      return fail(ErrorCode::NotFound,
                  fmt::format("no cycle run '{}' in the ledger", args["run"].get<std::string>()));
  } else {
    auto all = ORCH_TRY(cycles.list_cycles());
    if (all.empty())
      return fail(ErrorCode::NotFound, "no cycle run in the ledger (start one: `orch cycle run CYCLE.yaml`)");
    record = all.front();
  }
  auto doc = ORCH_TRY(cli::cycle_status_json(*record));
  return ToolResult::ok(std::move(doc), one_line(cli::cycle_status_text(doc)));
}

}  // namespace orch::mcp
