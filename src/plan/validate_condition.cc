// A step's `when:` checked before the run (plan/condition.h): the syntax, the
// steps it names (each an ancestor of the step, so settled when it is read) and
// the types known before any result is.
#include <fmt/format.h>

#include "plan/condition.h"
#include "plan/validate_context.h"
#include "util/strings.h"

namespace orch::detail {

void check_condition(const ValidateContext& ctx, const Step& step) {
  if (!step.when) return;
  auto condition = Condition::parse(*step.when);
  if (!condition) {
    ctx.step_error(step, "when",
                   fmt::format("'when: {}' is not a condition: {}", quote_for_message(*step.when),
                               condition.error().message));
    return;
  }
  const int position = ctx.position(step);
  for (const ConditionRef& ref : condition->refs()) {
    const std::string intro = fmt::format("'when' refers to steps.{} (column {})", ref.step, ref.column);
    auto target = ctx.graph.index_of(ref.step);
    if (!target) {
      std::vector<std::string> ids;
      for (const Step& s : ctx.plan.steps) ids.push_back(s.id);
      ctx.step_error(step, "when", fmt::format("{}, an unknown step{}", intro, did_you_mean(ref.step, ids)));
    } else if (*target == position) {
      ctx.step_error(step, "when",
                     fmt::format("{}: a step's condition is read before it runs, so it cannot "
                                 "name the step itself",
                                 intro));
    } else if (!ctx.ancestors.is_ancestor(*target, position)) {
      ctx.step_error(
          step, "when",
          fmt::format("{}, which is not an ancestor of '{}' (add it to deps): the condition is read "
                      "once the steps it names have settled",
                      intro, step.id));
    }
  }
  for (const std::string& problem : condition->type_problems())
    ctx.step_error(step, "when", fmt::format("'when': {}", problem));
}

}  // namespace orch::detail
