// orch chain --steps JSON|FILE [--max-steps N] [--budget-tokens N] [--budget-cost USD] [--dry-run] [--json]
//            [--approve ID]... [--approve-medium]
//            [--store PATH] [--workspace DIR] [--models FILE] [--registry FILE] [--workers FILE]
// orch chain --report RUN_ID [--json]
// A linear chain of tool/worker calls with abort-on-failure (docs/chains.md).
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "cli/approval_prompt.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "cli/progress.h"
#include "flows/chain.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {

struct ChainArgs {
  std::string steps;
  std::string report_run;
  int max_steps = 0;  // 0: ORCH_CHAIN_MAX_STEPS, else the default
  std::optional<std::int64_t> budget_tokens;
  std::optional<double> budget_cost;
  bool dry_run = false;
  bool json = false;
  std::string store = kDefaultStore;
  std::string workspace = ".";
  std::string models;
  std::string registry;
  std::string workers;
  std::vector<std::string> approve;
  bool approve_medium = false;
};

// --max-steps, else ORCH_CHAIN_MAX_STEPS, else 5.
Expected<int> step_limit(const ChainArgs& args) {
  if (args.max_steps > 0) return args.max_steps;
  const char* env = std::getenv("ORCH_CHAIN_MAX_STEPS");
  if (env == nullptr || *env == '\0') return flows::kDefaultChainMaxSteps;
  std::string_view text(env);
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1)
    return fail(ErrorCode::InvalidInput,
                fmt::format("ORCH_CHAIN_MAX_STEPS='{}' is not a whole number of at least 1", env));
  return value;
}

// Prints the report (JSON on stdout, or the summary for people) and returns the exit code.
int print_report(const ChainArgs& args, const nlohmann::ordered_json& report) {
  if (args.json) {
    std::printf("%s\n", json_text(report, 2).c_str());
  } else {
    // Commands, outputs and reasons in it came from steps: control characters escaped.
    std::printf("%s", terminal_lines(flows::format_chain_report(report)).c_str());
  }
  return flows::chain_exit_code(report);
}

// A chain that cannot run: the report says why (with --json), stderr always does.
int refuse(const ChainArgs& args, const std::string& code, const std::string& message, int limit,
           const std::vector<std::string>& problems, int exit_code) {
  std::fprintf(stderr, "orch: %s\n", message.c_str());
  for (const auto& p : problems) std::fprintf(stderr, "  %s\n", p.c_str());
  if (args.json)
    std::printf("%s\n", json_text(flows::chain_error_report(code, message, limit, problems), 2).c_str());
  return exit_code;
}

int run_chain_command(const ChainArgs& args) {
  auto limit = step_limit(args);
  if (!limit)
    return refuse(args, "invalid_chain", limit.error().message, flows::kDefaultChainMaxSteps, {},
                  kExitInvalid);
  auto executors = cli_executors(args.models, args.registry, args.workers);
  if (!executors)
    return refuse(args, "invalid_chain", executors.error().message, *limit, {},
                  exit_code_for_error(executors.error()));

  if (!args.report_run.empty()) {
    auto store = open_ledger(args.store, true);
    if (!store)
      return refuse(args, "orch_error", store.error().message, *limit, {},
                    exit_code_for_error(store.error()));
    auto report = flows::build_chain_report((*store)->runs(), args.report_run, **executors);
    if (!report)
      return refuse(args, "orch_error", report.error().message, *limit, {},
                    exit_code_for_error(report.error()));
    return print_report(args, *report);
  }
  if (args.steps.empty())
    return refuse(args, "invalid_chain", "chain needs --steps JSON|FILE (or --report RUN_ID)", *limit, {},
                  kExitInvalid);
  if (auto workspace = check_workspace(args.workspace); !workspace)
    return refuse(args, "invalid_chain", workspace.error().message, *limit, {}, kExitInvalid);

  auto input = flows::read_chain_input(args.steps);
  if (!input)
    return refuse(args, input.error().code, input.error().message, *limit, input.error().problems,
                  kExitInvalid);
  flows::ChainOptions options;
  options.executors = *executors;
  options.workspace = args.workspace;
  options.max_steps = *limit;
  options.budget_tokens = args.budget_tokens;
  options.budget_cost_usd = args.budget_cost;
  auto chain = flows::build_chain(*input, options);
  if (!chain)
    return refuse(args, chain.error().code, chain.error().message, *limit, chain.error().problems,
                  kExitInvalid);

  // An unknown --approve is refused as a run would refuse it, by the dry run too, and
  // before the ledger is opened.
  if (auto approvals = flows::check_approvals(*chain, args.approve); !approvals)
    return refuse(args, approvals.error().code, approvals.error().message, *limit, approvals.error().problems,
                  kExitInvalid);

  if (args.dry_run) {
    flows::DryRunOptions dry;
    dry.workspace = args.workspace;
    dry.approve_steps = {args.approve.begin(), args.approve.end()};
    dry.approve_medium = args.approve_medium;
    return print_report(args, flows::chain_dry_run_report(*chain, **executors, dry));
  }

  auto store = open_ledger(args.store, false);
  if (!store)
    return refuse(args, "orch_error", store.error().message, *limit, {}, exit_code_for_error(store.error()));
  ProgressPrinter progress(!args.json && stderr_is_tty() ? ProgressPrinter::Mode::Live
                                                         : ProgressPrinter::Mode::Quiet);
  EngineOptions engine;
  engine.workspace = args.workspace;
  engine.executors = *executors;
  engine.handle_signals = true;
  engine.approve_steps = {args.approve.begin(), args.approve.end()};
  engine.approve_medium = args.approve_medium;
  engine.ask_approval = terminal_approval_prompt();
  engine.on_progress = [&progress](const ProgressEvent& e) { progress.on_event(e); };
  engine.on_started = [&args, &store](const std::string& id) {
    if (!args.json)
      std::fprintf(stderr, "orch: chain run %s (store %s)\n", id.c_str(),
                   (*store)->runs().folder().string().c_str());
  };
  catch_stop_signals();
  auto outcome = flows::run_chain((*store)->runs(), *chain, engine);
  run_has_ended();
  progress.finish();
  if (!outcome)
    return refuse(args, outcome.error().code == ErrorCode::InvalidInput ? "invalid_chain" : "orch_error",
                  outcome.error().message, *limit, {}, exit_code_for_error(outcome.error()));
  auto report = flows::build_chain_report((*store)->runs(), outcome->run_id, **executors);
  if (!report)
    return refuse(args, "orch_error", report.error().message, *limit, {},
                  exit_code_for_error(report.error()));
  print_report(args, *report);
  return outcome->exit_code();
}

}  // namespace

Command add_chain(CLI::App& app) {
  auto args = std::make_shared<ChainArgs>();
  CLI::App* sub = app.add_subcommand(
      "chain",
      "Run a linear chain of tool or worker calls: each step gets the previous one's output; "
      "a failure stops the chain (docs/chains.md).");
  CLI::Option* steps = sub->add_option(
      "--steps", args->steps, "the chain: a JSON array of steps inline, or a JSON/YAML file holding one");
  steps->check(not_empty("a JSON array of steps, or a JSON/YAML file holding one"));
  CLI::Option* report = sub->add_option(
      "--report", args->report_run, "print the chain report of an existing chain run (after `orch resume`)");
  steps->excludes(report);
  sub->add_option(
         "--max-steps", args->max_steps,
         "the most steps a chain may have (default: ORCH_CHAIN_MAX_STEPS, else 5); a longer chain is refused")
      ->transform(whole_number(1));
  sub->add_option(
         "--budget-tokens", args->budget_tokens,
         "the chain's token budget (failed attempts included); when it runs out no further step starts")
      ->transform(whole_number(0, std::numeric_limits<std::int64_t>::max()));
  sub->add_option("--budget-cost", args->budget_cost, "the chain's cost budget in USD")
      ->transform(number_at_least(0));
  sub->add_flag("--dry-run", args->dry_run,
                "show each step's executor, risk and exact command; run nothing, write nothing");
  sub->add_flag("--json", args->json,
                "print the report (schemas/skill-output.schema.json) instead of the summary");
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  sub->add_option("--workspace", args->workspace, "folder steps run in (default: .)")
      ->check(not_empty("the folder steps run in"));
  add_executor_file_flags(*sub, args->models, args->registry, args->workers);
  // One step per --approve (repeatable), as for `orch run`.
  sub->add_option(
         "--approve", args->approve,
         "approve this step for the risk guard (medium or high risk; repeatable); critical steps never run")
      ->allow_extra_args(false)
      ->option_text("ID");
  sub->add_flag("--approve-medium", args->approve_medium, "approve every medium-risk step");
  return [args]() -> int { return run_chain_command(*args); };
}

}  // namespace orch::cli
