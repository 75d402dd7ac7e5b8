// flows/plan_decision.h — which way the planner goes for a request, decided with no model.
//
// The first two questions of plan_request (planner.h), answered the same way for
// it and for `orch plan --explain`: is the request a job (TriggerJob)? If not,
// one step. If it is, does a template of the library match? If one does, that
// template, with no model call; if none does, the planner would make a planning
// call. Nothing here reads a models file, opens a store or calls a model, so the
// decision can be shown before any of them exists. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flows/plan_template.h"
#include "flows/trigger_job.h"

namespace orch::flows {

enum class PlanWay { SingleStep, Template, Model };
const char* plan_way_name(PlanWay way);  // "single_step", "template", "model"

struct PlanDecision {
  PlanWay way = PlanWay::SingleStep;
  TriggerResult trigger;
  std::optional<TemplateMatch> chosen;  // PlanWay::Template
  // Every template scored (a job only), best first: the highest score, then the
  // name. A template matches when its score reaches its threshold.
  std::vector<TemplateMatch> scores;
  std::string why;  // one line
};

// `templates` may be null (no templates: a job goes to the model).
PlanDecision decide_plan(std::string_view request, const TemplateLibrary* templates);

}  // namespace orch::flows
