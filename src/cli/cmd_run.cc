// orch run PLAN ... (or orch run --request TEXT ...) and orch resume RUN_ID ...
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli/approval_prompt.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/detached_driver.h"
#include "cli/number_option.h"
#include "cli/output_style.h"
#include "cli/plan_input.h"
#include "cli/progress.h"
#include "cli/request_plan.h"
#include "cli/trace_export.h"
#include "cli/workers_dispatch.h"
#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/postgres_store.h"
#include "orch/report.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {

struct RunArgs {
  std::string plan;
  std::string run_id;
  std::string replan;
  int jobs = 0;
  bool keep_going = false;
  std::string store = kDefaultStore;
  std::string workspace = ".";
  bool json = false;
  std::string models;
  std::string request;      // run --request: plan it, then run it
  RequestPlanArgs planner;  // --model, --templates, --executor (with --request)
  std::string registry;
  std::string workers;
  std::vector<std::string> approve;
  bool approve_medium = false;
  bool on_workers = false;  // run --on-workers: the steps execute on `orch worker` processes
  bool detach = false;      // run --on-workers --detach: record the run, leave it to the workers
};

void add_approval_flags(CLI::App* sub, RunArgs& args) {
  // One step per --approve, so `--approve build plan.yaml` leaves the PLAN alone.
  sub->add_option(
         "--approve", args.approve,
         "approve this step for the risk guard (medium or high risk; repeatable); critical steps never run")
      ->allow_extra_args(false)
      ->option_text("STEP");
  sub->add_flag("--approve-medium", args.approve_medium, "approve every medium-risk step");
}

// Prints the report of the run that ended with `outcome`; the exit code: the run's, or an error's.
int print_run_report(const RunArgs& args, ProgressPrinter::Mode mode, Store& store,
                     const RunOutcome& outcome) {
  // In Lines mode the per-step lines were printed as steps finished: end with the summary.
  const bool lines = !args.json && mode != ProgressPrinter::Mode::Live;
  auto report = build_run_report(store, outcome.run_id, lines ? ReportDetail::Summary : ReportDetail::Full);
  if (!report) return report_error(report.error());
  if (args.json) {
    std::printf("%s\n", json_text(*report, 2).c_str());
  } else if (quiet()) {
    // --quiet: the exit code says how it ended; `orch status` shows the rest.
  } else if (lines) {
    std::printf("%s", format_report_summary(*report, status_style(stdout)).c_str());
  } else {
    std::printf("%s", format_report_table(*report, status_style(stdout)).c_str());
  }
  return outcome.exit_code();
}

// Drives `start` (a new run or a resume) with progress output, prints the
// result and exports the run's trace (when OTEL_* asks for it).
int drive(const RunArgs& args, Store& store, std::shared_ptr<ExecutorRegistry> executors,
          const std::function<Expected<RunOutcome>(Engine&)>& start) {
  ProgressPrinter::Mode mode = args.json || quiet() ? ProgressPrinter::Mode::Quiet
                               : stderr_is_tty()    ? ProgressPrinter::Mode::Live
                                                    : ProgressPrinter::Mode::Lines;
  ProgressPrinter progress(mode, color_on(mode == ProgressPrinter::Mode::Live ? stderr : stdout),
                           shows(LogLevel::Verbose));
  EngineOptions options;
  options.workspace = args.workspace;
  if (args.jobs > 0) options.concurrency = args.jobs;
  options.keep_going = args.keep_going;
  options.handle_signals = true;
  options.approve_steps = {args.approve.begin(), args.approve.end()};
  options.approve_medium = args.approve_medium;
  options.ask_approval = terminal_approval_prompt();
  options.on_progress = [&progress](const ProgressEvent& e) { progress.on_event(e); };
  // Also with --json (whose report goes to stdout): a long run's id is needed
  // before it ends, to watch, cancel or resume it.
  options.on_started = [&store](const std::string& id) {
    log(LogLevel::Note, fmt::format("run {} (store {})", id, store.folder().string()));
  };
  if (args.on_workers) {
    options.dispatch = Dispatch::Workers;
    auto remote = workers_executors(args.store, *executors);
    if (!remote) return report_error(remote.error());
    executors = std::move(*remote);
  }
  options.executors = std::move(executors);
  Engine engine(store, options);
  catch_stop_signals();  // and the engine's own handler while it drives the run
  auto outcome = start(engine);
  run_has_ended();  // the report is printed whatever comes
  progress.finish();
  if (!outcome) return report_error(outcome.error());
  const int code = print_run_report(args, mode, store, *outcome);
  // The trace goes once the run is over in the ledger and the report is out (a
  // slow collector delays only the exit); its failure is a line on stderr, never
  // the run's exit code.
  std::fflush(stdout);
  export_trace_if_asked(store, outcome->run_id);
  return code;
}

// run --detach: the run recorded and left to another process to drive — an
// `orch worker` (with --on-workers: one of them starts its driver,
// distrib/worker.h), or else an `orch resume` started here in a session of its
// own (cli/detached_driver.h).
int submit(const RunArgs& args, Store& store, const std::shared_ptr<ExecutorRegistry>& executors,
           PlanInput in) {
  if (!args.approve.empty() || args.approve_medium) {
    // No process of this command drives the run: approvals go into the ledger.
    return report_error(
        Error{ErrorCode::InvalidInput,
              "--approve and --approve-medium are given to the process that drives a run; with "
              "--detach approve its steps with `orch approve RUN STEP` once it is submitted"});
  }
  EngineOptions options;
  options.workspace = args.workspace;
  if (args.jobs > 0) options.concurrency = args.jobs;
  options.keep_going = args.keep_going;
  options.dispatch = args.on_workers ? Dispatch::Workers : Dispatch::Local;
  options.executors = executors;
  Engine engine(store, options);
  auto id = engine.submit(std::move(in.plan), in.text);
  if (!id) return report_error(id.error());
  nlohmann::ordered_json doc = {
      {"run_id", *id}, {"status", "running"}, {"dispatch", args.on_workers ? "workers" : "local"}};
  if (!args.on_workers) {
    DetachedDriver driver{
        orch_binary_path(),           *id, args.store, args.models, args.registry, args.workers,
        detached_log_path(store, *id)};
    auto pid = start_detached_driver(driver);
    if (!pid) {
      // Recorded but not driven: said plainly, with the way on.
      return report_error(
          Error{pid.error().code, fmt::format("run {} is recorded but {}; `orch resume {}` drives it", *id,
                                              pid.error().message, *id)});
    }
    doc["driver_pid"] = *pid;
    doc["log"] = driver.log.string();
  }
  if (args.json) {
    std::printf("%s\n", json_text(doc, 2).c_str());
  } else if (args.on_workers) {
    std::printf("run %s submitted: orch worker processes run it (follow it: orch status %s --store URL)\n",
                id->c_str(), id->c_str());
  } else {
    std::printf("run %s started in the background (driver pid %d, log %s; follow it: orch status %s)\n",
                id->c_str(), doc["driver_pid"].get<int>(), doc["log"].get<std::string>().c_str(),
                id->c_str());
  }
  return kExitSucceeded;
}

}  // namespace

Command add_run(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand("run", "Validate a plan, then run it to the end through the ledger.");
  CLI::Option* plan =
      sub->add_option("PLAN", args->plan, "plan file (YAML or JSON); - reads it from standard input");
  CLI::Option* request = sub->add_option(
      "--request", args->request, "plan this request (docs/planner.md) instead of reading PLAN, then run it");
  plan->excludes(request);
  add_request_plan_flags(*sub, args->planner);
  sub->add_option("-j,--jobs", args->jobs, "steps run at once (default: the plan's concurrency, else #CPUs)")
      ->transform(whole_number(1));
  sub->add_flag("--keep-going", args->keep_going,
                "on a failed step, go on with independent branches (on_failure: continue)");
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  sub->add_option("--workspace", args->workspace, "folder steps run in (default: .)")
      ->check(not_empty("the folder steps run in"));
  sub->add_flag("--json", args->json,
                "print the run report (schemas/run-report.schema.json) instead of progress");
  add_executor_file_flags(*sub, args->models, args->registry, args->workers);
  add_approval_flags(sub, *args);
  sub->add_flag("--on-workers", args->on_workers,
                "execute the steps on `orch worker` processes, which claim them from the PostgreSQL ledger "
                "(docs/workers-distributed.md); this process drives the run and reports");
  sub->add_flag("--detach", args->detach,
                "record the run, print its id and exit: an `orch resume` started in the background drives it "
                "(with --on-workers: a worker does); orch status follows it");
  return [args]() -> int {
    auto executors = cli_executors(args->models, args->registry, args->workers);
    if (!executors) return report_error(executors.error());
    if (args->on_workers && !is_postgres_url(args->store))
      return report_error(workers_need_postgres(args->store));
    if (args->detach && !args->request.empty())
      return report_error(
          Error{ErrorCode::InvalidInput,
                "--detach takes a PLAN file: a --request is planned by the process that asks"});
    if (args->plan.empty() && args->request.empty()) {
      // A usage error, said as the parser's are: with the help to read.
      std::fprintf(stderr,
                   "orch: run needs a PLAN file or --request TEXT\nRun `orch run --help` for usage.\n");
      return exit_code_for_error(Error{ErrorCode::InvalidInput, ""});
    }
    if (auto workspace = check_workspace(args->workspace); !workspace) return report_error(workspace.error());
    if (!args->request.empty()) {
      // The ledger is opened (or created) only when something is recorded: a
      // planning call, or the run. A request refused before either leaves no store.
      std::unique_ptr<Ledger> store;
      auto get_store = [&]() -> Expected<Store*> {
        if (!store) store = ORCH_TRY(open_ledger(args->store, false));
        return &store->runs();
      };
      catch_stop_signals();
      auto planned =
          plan_from_cli(args->request, args->planner, *executors, args->workspace, get_store, false);
      if (!planned) return report_error(planned.error());
      auto opened = get_store();
      if (!opened) return report_error(opened.error());
      return drive(*args, **opened, *executors, [&planned](Engine& engine) {
        return engine.run(std::move(planned->plan), planned->text);
      });
    }
    PlanInput in = read_and_validate(args->plan, args->workspace, **executors);
    if (!in.readable) return report_error(Error{ErrorCode::NotFound, in.read_error});
    if (!in.problems.empty()) {
      print_problems(in.problems);
      std::fprintf(stderr, "orch: %s is not valid (%zu problem%s); nothing was run\n",
                   plan_display_name(args->plan).c_str(), in.problems.size(),
                   in.problems.size() == 1 ? "" : "s");
      return kExitInvalid;
    }
    (*executors)->warm_up(in.plan);  // before the ledger is opened (or created)
    auto store = open_ledger(args->store, false);
    if (!store) return report_error(store.error());
    if (args->detach) return submit(*args, (*store)->runs(), *executors, std::move(in));
    return drive(*args, (*store)->runs(), *executors,
                 [&in](Engine& engine) { return engine.run(std::move(in.plan), in.text); });
  };
}

Command add_resume(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* sub = app.add_subcommand(
      "resume", "Continue a run after a crash, kill, interrupt or failure; done steps are never re-run.");
  sub->add_option("RUN_ID", args->run_id, "the run to continue")->required()->check(not_empty(kRunIdWanted));
  sub->add_option("-j,--jobs", args->jobs, "steps run at once (default: as the run was started)")
      ->transform(whole_number(1));
  sub->add_option("--replan", args->replan,
                  "continue with an edited plan (- reads it from standard input): done steps whose "
                  "fingerprint changed re-run, with their descendants")
      ->check(not_empty("the edited plan's file, or - to read it from standard input"));
  sub->add_flag("--keep-going", args->keep_going, "on a failed step, go on with independent branches");
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  sub->add_flag("--json", args->json, "print the run report instead of progress");
  add_executor_file_flags(*sub, args->models, args->registry, args->workers);
  add_approval_flags(sub, *args);
  return [args]() -> int {
    auto executors = cli_executors(args->models, args->registry, args->workers);
    if (!executors) return report_error(executors.error());
    auto store = open_ledger(args->store, true);
    if (!store) return report_error(store.error());
    std::optional<std::string> replan;
    if (!args->replan.empty()) replan = args->replan;
    if (args->replan == kStdinPlan) say_reading_stdin();
    // A run executed by workers goes on being executed by them.
    RunArgs resumed = *args;
    if (auto run = (*store)->runs().find_run(args->run_id);
        run && *run && (**run).dispatch == Dispatch::Workers)
      resumed.on_workers = true;
    return drive(resumed, (*store)->runs(), *executors,
                 [&](Engine& engine) { return engine.resume(args->run_id, replan); });
  };
}

}  // namespace orch::cli
