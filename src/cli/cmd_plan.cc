// orch plan "<request>" [--out FILE] [--models FILE] [--model NAME] [--templates DIR]
//                       [--executor NAME] [--registry FILE] [--store PATH] [--workspace DIR] [--json]
//                       [--explain]
// --explain shows the planner's decision (flows/plan_decision.h) and plans nothing:
// no models file, no store, no model call.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/json_docs.h"
#include "cli/number_option.h"
#include "cli/request_plan.h"
#include "flows/plan_decision.h"
#include "util/json_text.h"
#include "util/strings.h"

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
  bool explain = false;
  RequestPlanArgs planner;
};

// What the planner would do with the request, and why; nothing is planned.
int explain_plan(const PlanArgs& args) {
  if (trim(args.request).empty())
    return report_error(Error{ErrorCode::InvalidInput, "the request is empty: say what is to be done"});
  auto templates = load_request_templates(args.planner);
  if (!templates) return report_error(templates.error());
  const flows::PlanDecision d = flows::decide_plan(args.request, &*templates);
  const std::string model = args.planner.model.empty() ? "llm" : "llm:" + args.planner.model;
  std::string way;
  switch (d.way) {
    case flows::PlanWay::SingleStep:
      way = fmt::format("single_step: one step with the request as its prompt ({}), no planning call",
                        args.planner.executor.empty() ? model : args.planner.executor);
      break;
    case flows::PlanWay::Template:
      way = fmt::format("template {}: its plan filled with the request, no model call",
                        d.chosen->plan_template->name);
      break;
    case flows::PlanWay::Model:
      way = fmt::format("model: no template matched, so `orch plan` makes one planning call ({}, from the "
                        "models file), validated before it is used",
                        model);
      break;
  }
  if (args.json) {
    nlohmann::ordered_json scores = nlohmann::ordered_json::array();
    for (const auto& m : d.scores)
      scores.push_back({{"name", m.plan_template->name},
                        {"score", m.score},
                        {"threshold", m.plan_template->match.threshold},
                        {"matches", m.score >= m.plan_template->match.threshold},
                        {"matched", m.matched}});
    nlohmann::ordered_json out = {{"way", flows::plan_way_name(d.way)}};
    if (d.chosen) out["template"] = d.chosen->plan_template->name;
    out["why"] = d.why;
    out["trigger"] = trigger_json(d.trigger);
    out["templates"] = scores;
    out["explanation"] = way;
    std::printf("%s\n", json_text(out, 2).c_str());
    return kExitSucceeded;
  }
  const std::string job = (d.trigger.is_job() ? "yes: " : "no: ") + d.trigger.explanation();
  std::printf("%-10s %s\n", "job", job.c_str());
  if (d.trigger.is_job()) {
    if (d.scores.empty()) std::printf("%-10s %s\n", "templates", "none");
    for (std::size_t i = 0; i < d.scores.size(); ++i) {
      const auto& m = d.scores[i];
      const int threshold = m.plan_template->match.threshold;
      std::string line = fmt::format("{} {}/{}", m.plan_template->name, m.score, threshold);
      if (m.score >= threshold) line += " matches";
      if (!m.matched.empty()) line += fmt::format(" ({})", join(m.matched, ", "));
      std::printf("%-10s %s\n", i == 0 ? "templates" : "", line.c_str());
    }
  }
  std::printf("%-10s %s\n", "way", way.c_str());
  return kExitSucceeded;
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
  sub->add_option(
         "--store", args->store,
         std::string(kStoreHelpPrefix) + ", where planning calls are recorded (default: .orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  sub->add_option("--workspace", args->workspace, "folder the plan's paths resolve in (default: .)")
      ->check(not_empty("the folder the plan's paths resolve in"));
  sub->add_flag("--json", args->json, "print {path, template, why, trigger, planning_runs, model_problems, steps, plan}");
  sub->add_flag("--explain", args->explain,
                "show how the plan would be made (job or not, each template's score, template or model) and "
                "plan nothing: no models file, store or model call");
  add_request_plan_flags(*sub, args->planner);
  return [args]() -> int {
    if (args->explain) return explain_plan(*args);
    auto executors = cli_executors(args->models, args->registry);
    if (!executors) return report_error(executors.error());
    std::unique_ptr<Ledger> store;
    auto open = [&]() -> Expected<Store*> {
      if (!store) store = ORCH_TRY(open_ledger(args->store, false));  // once, for every planning call
      return &store->runs();
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
