#include "flows/plan_decision.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace orch::flows {

const char* plan_way_name(PlanWay way) {
  switch (way) {
    case PlanWay::SingleStep: return "single_step";
    case PlanWay::Template: return "template";
    case PlanWay::Model: return "model";
  }
  return "single_step";
}

PlanDecision decide_plan(std::string_view request, const TemplateLibrary* templates) {
  PlanDecision d;
  d.trigger = trigger_job(request);
  if (!d.trigger.is_job()) {
    d.way = PlanWay::SingleStep;
    d.why = d.trigger.explanation();
    return d;
  }
  if (templates) {
    for (const PlanTemplate& t : templates->templates()) d.scores.push_back(score_template(t, request));
    std::stable_sort(d.scores.begin(), d.scores.end(), [](const TemplateMatch& a, const TemplateMatch& b) {
      return a.score != b.score ? a.score > b.score : a.plan_template->name < b.plan_template->name;
    });
    d.chosen = templates->best_match(request);
  }
  if (d.chosen) {
    const PlanTemplate& t = *d.chosen->plan_template;
    d.way = PlanWay::Template;
    d.why = fmt::format("{}; template '{}' matched (score {} >= {}: {}), no model call", d.trigger.explanation(),
                        t.name, d.chosen->score, t.match.threshold, join(d.chosen->matched, ", "));
    return d;
  }
  d.way = PlanWay::Model;
  d.why = fmt::format("{}; no template matched", d.trigger.explanation());
  return d;
}

}  // namespace orch::flows
