// orch validate PLAN [--workspace DIR] [--json]
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/json_docs.h"
#include "cli/number_option.h"
#include "cli/plan_input.h"
#include "orch/plan_loader.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {
struct ValidateArgs {
  std::string plan;
  std::string workspace = ".";
  bool json = false;
  std::string models;
  std::string registry;
  std::string workers;
};

// With --json the answer is JSON whatever it is: a plan that cannot be checked (its file,
// the executors' files or the workspace cannot be read) is an invalid one, each line of the
// reason one error (said on stderr too).
void print_invalid_json(const std::string& plan, const std::string& reason) {
  std::printf("%s\n", json_text(invalid_plan_json(plan, reason), 2).c_str());
}

}  // namespace

Command add_validate(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub =
      app.add_subcommand("validate", "Check a plan without running it: every problem, with FILE:LINE.");
  sub->add_option("PLAN", args->plan, "plan file (YAML or JSON); - reads it from standard input")->required();
  sub->add_option("--workspace", args->workspace, "folder the plan's paths resolve in (default: .)")
      ->check(not_empty("the folder the plan's paths resolve in"));
  sub->add_flag("--json", args->json, "print {valid, plan, steps, errors[], warnings[]} as JSON");
  add_executor_file_flags(*sub, args->models, args->registry, args->workers);
  return [args]() -> int {
    const std::string shown = plan_display_name(args->plan);  // "<stdin>" for -
    auto refuse = [&](const Error& e) {
      if (args->json) print_invalid_json(shown, e.message);
      return report_error(e);
    };
    auto executors = cli_executors(args->models, args->registry, args->workers);
    if (!executors) return refuse(executors.error());
    if (auto workspace = check_workspace(args->workspace); !workspace) return refuse(workspace.error());
    PlanInput in = read_and_validate(args->plan, args->workspace, **executors);
    if (!in.readable) return refuse(Error{ErrorCode::NotFound, in.read_error});
    // A valid plan may still hold a step the risk guard refuses whatever is
    // approved (a tool the registry has as pending or planned): it would fail at
    // run time. Said here as a warning; the plan is valid and may run its other steps.
    Diagnostics warnings;
    if (in.problems.empty()) warnings = critical_step_warnings(in.plan, **executors, shown);
    if (args->json) {
      std::printf("%s\n", json_text(validation_json(shown, in, warnings), 2).c_str());
    } else if (in.problems.empty()) {
      print_problems(warnings);
      std::printf(
          "%s: ok (%zu step%s)%s\n", shown.c_str(), in.plan.steps.size(),
          in.plan.steps.size() == 1 ? "" : "s",
          warnings.empty()
              ? ""
              : fmt::format(", {} warning{}", warnings.size(), warnings.size() == 1 ? "" : "s").c_str());
    } else {
      print_problems(in.problems);
      std::fprintf(stderr, "%s: %zu problem%s\n", shown.c_str(), in.problems.size(),
                   in.problems.size() == 1 ? "" : "s");
    }
    return in.problems.empty() ? kExitSucceeded : kExitInvalid;
  };
}

}  // namespace orch::cli
