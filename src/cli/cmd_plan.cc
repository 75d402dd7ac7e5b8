// orch plan "<request>" [--out FILE] [--models FILE] [--model NAME] [--templates DIR]
//                       [--executor NAME] [--registry FILE] [--store PATH] [--workspace DIR] [--json]
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "cli/request_plan.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {

struct PlanArgs {
  std::string request;
  std::string out;
  std::string models;
  std::string registry;
  std::string store = kDefaultStore;
  std::string workspace = ".";
  bool json = false;
  RequestPlanArgs planner;
};

nlohmann::ordered_json planned_json(const flows::PlannedRequest& p) {
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  for (const auto& d : p.model_problems) problems.push_back(d.to_string());
  nlohmann::ordered_json trigger = {{"signal", flows::job_signal_name(p.trigger.signal)},
                                    {"explanation", p.trigger.explanation()}};
  if (!p.trigger.items.empty()) trigger["items"] = p.trigger.items;
  if (!p.trigger.phrase.empty()) trigger["phrase"] = p.trigger.phrase;
  if (!p.trigger.verbs.empty()) trigger["verbs"] = p.trigger.verbs;
  nlohmann::ordered_json out = {{"path", flows::plan_path_name(p.path)}};
  if (!p.template_name.empty()) out["template"] = p.template_name;
  out["why"] = p.why;
  out["trigger"] = trigger;
  out["planning_runs"] = p.planning_runs;
  out["model_problems"] = problems;
  out["steps"] = p.plan.steps.size();
  out["plan"] = p.text;
  return out;
}

}  // namespace

Command add_plan(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand(
      "plan", "Turn a request in words into a validated plan: one step, a template, or a model's plan.");
  sub->add_option("REQUEST", args->request, "what to do, in words")->required();
  sub->add_option("-o,--out", args->out, "write the plan to this file instead of stdout");
  sub->add_option("--models", args->models, "models file (default: .orch/models.yaml if present)");
  sub->add_option("--registry", args->registry, "tool registry (default: .orch/registry.yml if present)")
      ->check(not_empty("the tool registry file"));
  sub->add_option("--store", args->store, "ledger where planning calls are recorded (default: .orch/orch.db)")
      ->check(not_empty("the ledger's file (e.g. .orch/orch.db)"));
  sub->add_option("--workspace", args->workspace, "folder the plan's paths resolve in (default: .)")
      ->check(not_empty("the folder the plan's paths resolve in"));
  sub->add_flag("--json", args->json, "print {path, template, why, trigger, planning_runs, model_problems, steps, plan}");
  add_request_plan_flags(*sub, args->planner);
  return [args]() -> int {
    auto executors = cli_executors(args->models, args->registry);
    if (!executors) return report_error(executors.error());
    std::unique_ptr<Store> store;
    auto open = [&]() -> Expected<Store*> {
      if (!store) store = ORCH_TRY(open_store(args->store, false));  // once, for every planning call
      return store.get();
    };
    catch_stop_signals();  // and the planning call's engine while it runs
    auto planned = plan_from_cli(args->request, args->planner, *executors, args->workspace, open, args->json);
    run_has_ended();  // the plan is printed whatever comes
    if (!planned) return report_error(planned.error());
    if (!args->out.empty()) {
      // Written in place (not renamed over): --out may be a terminal, a pipe or /dev/stdout.
      std::FILE* file = std::fopen(args->out.c_str(), "wb");
      int err = file == nullptr ? errno : 0;
      if (file != nullptr) {
        if (std::fwrite(planned->text.data(), 1, planned->text.size(), file) != planned->text.size())
          err = errno;
        if (std::fclose(file) != 0 && err == 0) err = errno;
      }
      if (err != 0)
        return report_error(Error{
            ErrorCode::Io, fmt::format("{}: cannot write the plan: {}", args->out, std::strerror(err))});
    }
    if (args->json) {
      std::printf("%s\n", json_text(planned_json(*planned), 2).c_str());
    } else if (args->out.empty()) {
      std::fputs(planned->text.c_str(), stdout);
    } else {
      std::fprintf(stderr, "orch plan: wrote %s (%zu step%s)\n", args->out.c_str(), planned->plan.steps.size(),
                   planned->plan.steps.size() == 1 ? "" : "s");
    }
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
