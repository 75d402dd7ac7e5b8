// orch validate PLAN [--workspace DIR] [--json]
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
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
// reason one error (said on stderr too). A line "FILE:LINE: ..." keeps its file and line.
void print_invalid_json(const std::string& plan, const std::string& reason) {
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  std::size_t start = 0;
  while (start <= reason.size()) {
    std::size_t end = reason.find('\n', start);
    if (end == std::string::npos) end = reason.size();
    std::string line = reason.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    std::string file = plan;
    int number = 0;
    std::string message = line;
    if (auto colon = line.find(':'); colon != std::string::npos && colon > 0) {
      std::size_t digits = colon + 1;
      while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
      // A line number too large for an int is not one: the line stays whole.
      if (digits > colon + 1 && line.compare(digits, 2, ": ") == 0 &&
          std::from_chars(line.data() + colon + 1, line.data() + digits, number).ec == std::errc()) {
        file = line.substr(0, colon);
        message = line.substr(digits + 2);
      }
    }
    errors.push_back({{"file", file}, {"line", number}, {"step", ""}, {"message", message}});
  }
  nlohmann::ordered_json out = {{"valid", false},
                                {"plan", plan},
                                {"steps", 0},
                                {"errors", errors},
                                {"warnings", nlohmann::ordered_json::array()}};
  std::printf("%s\n", json_text(out, 2).c_str());
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
    std::vector<Diagnostic> warnings;
    if (in.problems.empty()) {
      for (const Step& step : in.plan.steps) {
        const Executor* executor = (*executors)->find(step.executor);
        if (executor == nullptr || executor->risk(step) != RiskLevel::Critical) continue;
        std::string why = step.risk == RiskLevel::Critical
                              ? std::string("the step is declared risk: critical")
                              : fmt::format("executor '{}' rates it critical", step.executor);
        if (std::string cause = executor->risk_reason(step);
            !cause.empty() && step.risk != RiskLevel::Critical)
          why += ": " + cause;
        warnings.push_back(Diagnostic{step.loc.file.empty() ? shown : step.loc.file, step.loc.line, step.id,
                                      "warning: the risk guard will refuse this step (" + why + ")"});
      }
    }
    if (args->json) {
      nlohmann::ordered_json errors = nlohmann::ordered_json::array();
      for (const auto& d : in.problems)
        errors.push_back({{"file", d.file}, {"line", d.line}, {"step", d.step_id}, {"message", d.message}});
      nlohmann::ordered_json warned = nlohmann::ordered_json::array();
      for (const auto& d : warnings)
        warned.push_back({{"file", d.file}, {"line", d.line}, {"step", d.step_id}, {"message", d.message}});
      nlohmann::ordered_json out = {{"valid", in.problems.empty()},
                                    {"plan", shown},
                                    {"steps", in.plan.steps.size()},
                                    {"errors", errors},
                                    {"warnings", warned}};
      std::printf("%s\n", json_text(out, 2).c_str());
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
