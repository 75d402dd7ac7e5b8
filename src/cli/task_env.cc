#include "cli/task_env.h"

#include <fmt/format.h>

#include <filesystem>

#include "cli/common.h"
#include "cli/number_option.h"
#include "exec/tool_registry.h"
#include "orch/clock.h"

namespace orch::cli {

namespace fs = std::filesystem;

OpenTask::OpenTask() = default;
OpenTask::~OpenTask() = default;
OpenTask::OpenTask(OpenTask&&) noexcept = default;

void add_task_flags(CLI::App& sub, TaskFlags& flags, bool executors) {
  sub.add_option("--store", flags.store,
                 std::string(kStoreHelpPrefix) + " (default: WORKSPACE/.orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  sub.add_option("--workspace", flags.workspace,
                 "the project folder: traces, memory and VERIFY commands (default: .)")
      ->check(not_empty("the project folder"));
  sub.add_flag("--json", flags.json, "print JSON (the trace document: schemas/trace.schema.json)");
  if (!executors) return;
  sub.add_option("--models", flags.models, "models file (default: .orch/models.yaml if present)")
      ->check(not_empty("the models file"));
  sub.add_option("--registry", flags.registry, "tool registry (default: .orch/registry.yml if present)")
      ->check(not_empty("the tool registry file"));
  sub.add_option("--workers", flags.workers, "workers file (default: .orch/workers.yaml if present)")
      ->check(not_empty("the workers file"));
}

Expected<OpenTask> open_task(const TaskFlags& flags, bool executors, bool quiet_planner) {
  OpenTask open;
  std::error_code ec;
  const fs::path workspace = fs::weakly_canonical(fs::absolute(flags.workspace), ec);
  if (ec || !fs::is_directory(workspace))
    return fail(ErrorCode::NotFound, fmt::format("--workspace {}: no such folder", flags.workspace));
  open.env.workspace = workspace;
  open.env.settings = ORCH_TRY(flows::load_task_settings(workspace));
  const std::string store_path = flags.store.empty() ? (workspace / kDefaultStore).string() : flags.store;
  open.ledger = ORCH_TRY(open_ledger(store_path, false, workspace));
  open.env.store = &open.ledger->runs();
  open.env.traces = &open.ledger->traces();
  open.env.now_ms = [] { return Clock::system().wall_ms(); };
  open.env.handle_signals = true;
  if (!executors) return open;

  // Relative default files are looked up in the workspace.
  auto in_workspace = [&](const std::string& flag, const char* fallback) {
    if (!flag.empty()) return flag;
    const fs::path f = workspace / fallback;
    return fs::exists(f) ? f.string() : std::string();
  };
  const std::string registry_file = in_workspace(flags.registry, kDefaultToolRegistry);
  const std::string models_file = in_workspace(flags.models, kDefaultModels);
  open.env.executors =
      ORCH_TRY(cli_executors(models_file, registry_file, in_workspace(flags.workers, kDefaultWorkers)));
  if (!registry_file.empty()) {
    open.registry = std::make_unique<ToolRegistry>(ORCH_TRY(load_tool_registry(registry_file)));
    open.env.registry = open.registry.get();
  }
  Store* store = &open.ledger->runs();
  auto executors_ptr = open.env.executors;
  RequestPlanArgs planner = flags.planner;
  if (planner.templates.empty() && fs::is_directory(workspace / kDefaultTemplates))
    planner.templates = (workspace / kDefaultTemplates).string();
  // With no model configured the PLAN stage can still use the templates; the
  // single-step plan it falls back to is then the request as text (builtin:echo)
  // rather than an llm step that could not run.
  if (models_file.empty() && planner.executor.empty()) planner.executor = "builtin:echo";
  open.env.planner = [store, executors_ptr, planner, workspace,
                      quiet_planner](const std::string& request) -> Expected<flows::PlannedRequest> {
    return plan_from_cli(
        request, planner, executors_ptr, workspace.string(), [store]() -> Expected<Store*> { return store; },
        quiet_planner);
  };
  return open;
}

std::string describe_trace(const flows::Trace& t) {
  using flows::task_state_name;
  std::string out;
  const char* status = t.result ? (*t.result == "pass" ? "done" : t.result->c_str()) : "open";
  out += fmt::format("trace {}  ({}, at {})\n", t.id, status, task_state_name(t.state()));
  out += fmt::format("  request     {}\n", t.request);
  if (!t.project.empty()) out += fmt::format("  project     {}\n", t.project);
  out += fmt::format("  intent      {}{}   complexity {}   strategy {}   llm {}\n",
                     t.intent.empty() ? "(ambiguous)" : t.intent, t.ambiguous ? " (assumed)" : "",
                     t.complexity, t.strategy, t.llm);
  std::string pipeline;
  for (auto s : t.pipeline) pipeline += (pipeline.empty() ? "" : " > ") + std::string(task_state_name(s));
  out += fmt::format("  pipeline    {}\n", pipeline);
  const auto next = flows::legal_next_states(t);
  if (!t.result) {
    std::string n;
    for (auto s : next) n += (n.empty() ? "" : " or ") + std::string(task_state_name(s));
    if (t.state() == flows::TaskState::Summarize) n += n.empty() ? "close --result pass|fail" : "; or close";
    if (n.empty()) n = "close --result fail";
    out += fmt::format("  next        {}\n", n);
  }
  if (t.budget.contains("tokens"))
    out += fmt::format("  budget      {} tokens (spent {})\n", t.budget.value("tokens", 0LL),
                       t.budget.value("spent_tokens", 0LL));
  out += fmt::format("  retries     {} of {}\n", t.retries, flows::kMaxRetries);
  if (!t.verify.empty()) {
    out += "  verify\n";
    int i = 0;
    for (const auto& item : t.verify) {
      ++i;
      const bool command = item.is_object() && item.contains("command");
      out +=
          fmt::format("    {}. [{}] {}{}\n", i, command ? "command" : "attest",
                      item.is_object() ? item.value("check", std::string()) : item.dump(),
                      command ? fmt::format("   $ {}", item["command"].get<std::string>()) : std::string());
    }
  }
  out += "  transitions\n";
  for (const auto& tr : t.transitions) {
    // One line each: the first line of the note, cut at 100 characters.
    std::string note = tr.note.substr(0, tr.note.find('\n'));
    if (note.size() > 100) note = note.substr(0, 97) + "...";
    out += fmt::format("    {}  {:<10} {}\n", tr.t, task_state_name(tr.state), note);
  }
  for (const auto& v : t.verifications) {
    out += fmt::format("  verdict     {} (confidence {:.2f}) at {}\n", flows::verdict_name(v.verdict),
                       v.confidence, v.t);
    for (const auto& o : v.items) {
      std::string detail = o.detail;
      if (auto nl = detail.find('\n'); nl != std::string::npos) detail = detail.substr(0, nl);
      out += fmt::format("    {:<10} {}{}\n", flows::check_status_name(o.status), o.check,
                         detail.empty() ? "" : "  (" + detail + ")");
    }
  }
  if (!t.engine_results.empty()) {
    out += "  engines\n";
    for (const auto& [name, r] : t.engine_results.items()) {
      const std::string st = r.is_object() ? r.value("status", std::string("?")) : "?";
      std::string detail = r.is_object() ? r.value("summary", std::string()) : std::string();
      if (st == "FAILED" && r.is_object()) detail = r.value("error", std::string());
      out += fmt::format("    {:<11} {}{}\n", name, st, detail.empty() ? "" : "  " + detail);
    }
  }
  if (!t.learning_results.empty()) {
    out += "  learning\n";
    for (const auto& [name, r] : t.learning_results.items()) {
      const std::string st = r.is_object() ? r.value("status", std::string("?")) : "?";
      const std::string detail =
          r.is_object() ? r.value(st == "FAILED" ? "error" : "summary", std::string()) : std::string();
      out += fmt::format("    {:<11} {}{}\n", name, st, detail.empty() ? "" : "  " + detail);
    }
  }
  if (!t.run_id.empty()) out += fmt::format("  run         {}\n", t.run_id);
  if (t.result) {
    std::string summary = t.summary.substr(0, t.summary.find('\n'));
    if (summary.size() > 100) summary = summary.substr(0, 97) + "...";
    out += fmt::format("  result      {}{}\n", *t.result, summary.empty() ? "" : ": " + summary);
  }
  return out;
}

}  // namespace orch::cli
