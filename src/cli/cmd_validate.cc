// orch validate PLAN [--workspace DIR] [--json]
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/plan_input.h"
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
}  // namespace

Command add_validate(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub =
      app.add_subcommand("validate", "Check a plan without running it: every problem, with FILE:LINE.");
  sub->add_option("PLAN", args->plan, "plan file (YAML or JSON)")->required();
  sub->add_option("--workspace", args->workspace, "folder the plan's paths resolve in (default: .)");
  sub->add_flag("--json", args->json, "print {valid, steps, errors[]} as JSON");
  add_executor_file_flags(*sub, args->models, args->registry, args->workers);
  return [args]() -> int {
    auto executors = cli_executors(args->models, args->registry, args->workers);
    if (!executors) return report_error(executors.error());
    if (auto workspace = check_workspace(args->workspace); !workspace) return report_error(workspace.error());
    PlanInput in = read_and_validate(args->plan, args->workspace, **executors);
    if (!in.readable) return report_error(Error{ErrorCode::NotFound, in.read_error});
    if (args->json) {
      nlohmann::ordered_json errors = nlohmann::ordered_json::array();
      for (const auto& d : in.problems)
        errors.push_back({{"file", d.file}, {"line", d.line}, {"step", d.step_id}, {"message", d.message}});
      nlohmann::ordered_json out = {{"valid", in.problems.empty()},
                                    {"plan", args->plan},
                                    {"steps", in.plan.steps.size()},
                                    {"errors", errors}};
      std::printf("%s\n", json_text(out, 2).c_str());
    } else if (in.problems.empty()) {
      std::printf("%s: ok (%zu step%s)\n", args->plan.c_str(), in.plan.steps.size(),
                  in.plan.steps.size() == 1 ? "" : "s");
    } else {
      print_problems(in.problems);
      std::fprintf(stderr, "%s: %zu problem%s\n", args->plan.c_str(), in.problems.size(),
                   in.problems.size() == 1 ? "" : "s");
    }
    return in.problems.empty() ? kExitSucceeded : kExitInvalid;
  };
}

}  // namespace orch::cli
