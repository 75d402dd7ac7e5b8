// mcp/run_tools.cc — plans and runs over MCP: validate, run, status, logs.
#include <fmt/format.h>

#include <filesystem>

#include "cli/common.h"
#include "cli/detached_driver.h"
#include "cli/json_docs.h"
#include "cli/plan_input.h"
#include "mcp/orch_tools.h"
#include "orch/engine.h"
#include "orch/report.h"

namespace orch::mcp {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kPlanName = "plan.yaml";  // what messages call a plan given as text

std::string problems_text(const Diagnostics& problems) {
  std::string out;
  for (const auto& d : problems) out += "\n" + d.to_string();
  return out;
}

}  // namespace

Expected<ToolResult> OrchTools::validate(const json& args) {
  const std::string name = args.value("name", std::string(kPlanName));
  const ExecutorRegistry& executors = *open_.env.executors;
  cli::PlanInput in = cli::validate_plan_text(args.value("plan", std::string()), name,
                                              open_.env.workspace.string(), executors);
  Diagnostics warnings;
  if (in.problems.empty()) warnings = cli::critical_step_warnings(in.plan, executors, name);
  std::string text = in.problems.empty()
                         ? fmt::format("{}: ok ({} step{}, {} warning{})", name, in.plan.steps.size(),
                                       in.plan.steps.size() == 1 ? "" : "s", warnings.size(),
                                       warnings.size() == 1 ? "" : "s")
                         : fmt::format("{}: {} problem{}{}", name, in.problems.size(),
                                       in.problems.size() == 1 ? "" : "s", problems_text(in.problems));
  return ToolResult::ok(plain_json(cli::validation_json(name, in, warnings)), text);
}

Expected<ToolResult> OrchTools::run(const json& args) {
  const std::string workspace = open_.env.workspace.string();
  const ExecutorRegistry& executors = *open_.env.executors;
  cli::PlanInput in;
  std::string shown = kPlanName;
  if (args.contains("file")) {
    shown = args["file"].get<std::string>();
    const fs::path path = fs::path(shown).is_absolute() ? fs::path(shown) : open_.env.workspace / shown;
    in = cli::read_and_validate(path.string(), workspace, executors);
    if (!in.readable) return fail(ErrorCode::NotFound, in.read_error);
  } else {
    in = cli::validate_plan_text(args["plan"].get<std::string>(), shown, workspace, executors);
  }
  if (!in.problems.empty())
    return fail(ErrorCode::InvalidInput,
                fmt::format("{} is not valid ({} problem{}); nothing was run{}", shown, in.problems.size(),
                            in.problems.size() == 1 ? "" : "s", problems_text(in.problems)));
  // What the risk guard would refuse whatever is approved is refused here, before
  // anything is recorded: critical steps never run.
  if (const Diagnostics critical = cli::critical_step_warnings(in.plan, executors, shown); !critical.empty())
    return fail(ErrorCode::InvalidInput,
                fmt::format("{} has a critical-risk step, which orch never runs; nothing was recorded{}",
                            shown, problems_text(critical)));
  EngineOptions options;
  options.workspace = workspace;
  if (args.contains("jobs")) options.concurrency = args["jobs"].get<int>();
  options.keep_going = args.value("keep_going", false);
  options.dispatch = Dispatch::Local;
  options.executors = open_.env.executors;
  Store& store = open_.ledger->runs();
  std::string id;
  {
    Engine engine(store, options);
    id = ORCH_TRY(engine.submit(std::move(in.plan), in.text));
  }
  cli::DetachedDriver driver;
  driver.orch = cli::orch_binary_path();
  driver.run_id = id;
  driver.store = options_.flags.store.empty() ? (open_.env.workspace / cli::kDefaultStore).string()
                                              : options_.flags.store;
  driver.models = workspace_file(options_.flags.models, cli::kDefaultModels);
  driver.registry = workspace_file(options_.flags.registry, cli::kDefaultToolRegistry);
  driver.workers = workspace_file(options_.flags.workers, cli::kDefaultWorkers);
  driver.log = cli::detached_log_path(store, id);
  auto pid = cli::start_detached_driver(driver);
  if (!pid)
    return fail(pid.error().code, fmt::format("run {} is recorded but {}; `orch resume {}` drives it", id,
                                              pid.error().message, id));
  json doc = {{"run_id", id},
              {"status", "running"},
              {"dispatch", "local"},
              {"driver_pid", *pid},
              {"log", driver.log.string()}};
  return ToolResult::ok(std::move(doc),
                        fmt::format("run {} started; follow it with status (run {}) and logs", id, id));
}

Expected<ToolResult> OrchTools::status(const json& args) {
  Store& store = open_.ledger->runs();
  const std::string id =
      args.contains("run") ? args["run"].get<std::string>() : ORCH_TRY(cli::latest_run_id(store));
  auto report = plain_json(ORCH_TRY(build_run_report(store, id, ReportDetail::Full)));
  const json& run = report["run"];
  const json& counts = report["counts"];
  std::string text = fmt::format("run {} {}: {} done, {} failed, {} awaiting approval of {}", id,
                                 run.value("status", ""), counts.value("done", 0), counts.value("failed", 0),
                                 counts.value("awaiting_approval", 0), counts.value("total", 0));
  if (const std::string reason = run.value("reason", ""); !reason.empty()) text += " — " + one_line(reason);
  return ToolResult::ok(std::move(report), text);
}

Expected<ToolResult> OrchTools::logs(const json& args) {
  Store& store = open_.ledger->runs();
  cli::LogsQuery query{args.value("run", std::string()), args.value("step", std::string()),
                       args.value("attempt", 0), args.value("stream", std::string("stdout")) == "stderr"};
  const std::size_t max = args.value("max_bytes", std::size_t{65536});
  auto chosen = ORCH_TRY(cli::find_attempt(store, query));
  // Bounded: only the stream's last max_bytes are kept while it is read.
  std::string text;
  auto read = ORCH_TRY(store.read_attempt_output(
      chosen.attempt, query.err ? AttemptStream::Stderr : AttemptStream::Stdout, [&](std::string_view bytes) {
        text += bytes;
        if (text.size() > 2 * max) text.erase(0, text.size() - max);
      }));
  if (text.size() > max) text.erase(0, text.size() - max);
  auto doc = plain_json(cli::logs_json(query, chosen, read, text));
  return ToolResult::ok(
      std::move(doc),
      fmt::format("{} of {} attempt {}: {} of {} bytes", query.err ? "stderr" : "stdout", query.step,
                  chosen.attempt.number, text.size(), doc.value("bytes", std::int64_t{0})));
}

}  // namespace orch::mcp
