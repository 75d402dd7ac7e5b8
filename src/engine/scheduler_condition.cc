// Scheduler: a step's `when:` (plan/condition.h), read when the step is ready —
// every ancestor has settled — and before the risk guard: a step its condition
// skips is never run, never asked about.
#include <fmt/format.h>

#include "engine/scheduler.h"
#include "plan/condition.h"

namespace orch {

bool Scheduler::condition_holds(int i) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  const std::string& text = *s.step->when;
  // Validated before the run; a plan built in code that was not is refused here.
  auto condition = Condition::parse(text);
  if (!condition) {
    mark_failed(i, fmt::format("when: {}: {}", text, condition.error().message));
    return false;
  }
  Condition::Inputs in;
  in.status = [this](const std::string& id) -> std::optional<std::string> {
    auto it = index_of_.find(id);
    if (it == index_of_.end()) return std::nullopt;
    const StepStatus st = steps_[static_cast<std::size_t>(it->second)].rec.status;
    if (st != StepStatus::Done && st != StepStatus::Skipped) return std::nullopt;
    return std::string(step_status_name(st));
  };
  in.result = [this](const std::string& id) -> std::optional<std::string> {
    auto it = index_of_.find(id);
    if (it == index_of_.end()) return std::nullopt;
    const StepState& d = steps_[static_cast<std::size_t>(it->second)];
    if (d.rec.status != StepStatus::Done) return std::nullopt;
    return d.rec.result;
  };
  auto held = condition->evaluate(in);
  if (!held) {
    // Never read as false: a condition that cannot be read fails its step, with why.
    writer_.event("condition_evaluated", s.step->id, 0, {{"when", text}, {"error", held.error().message}});
    mark_failed(i, fmt::format("when: {} could not be evaluated: {}", text, held.error().message));
    return false;
  }
  writer_.event("condition_evaluated", s.step->id, 0, {{"when", text}, {"value", *held}});
  if (!*held) {
    skip_by_condition(i, fmt::format("when: {} was false", text));
    return false;
  }
  s.condition_held = true;
  return true;
}

// Skips step i, then each dependent whose dependencies have now all settled
// with none done (every one skipped by a condition, this way or earlier): a
// branch not taken is skipped to its end, and a join of branches runs when one
// of them was taken.
void Scheduler::skip_by_condition(int first, const std::string& reason) {
  std::vector<std::pair<int, std::string>> stack{{first, reason}};
  while (!stack.empty()) {
    auto [i, why] = std::move(stack.back());
    stack.pop_back();
    StepState& s = steps_[static_cast<std::size_t>(i)];
    s.rec.status = StepStatus::Skipped;
    s.rec.reason = why;
    s.rec.finished_at = now_ms();
    s.skipped_by_condition = true;
    save_step(s);
    writer_.event("step_skipped", s.step->id, 0, {{"reason", why}});
    report(ProgressEvent::Kind::StepFinished, i, why);
    for (int c : s.children) {
      StepState& child = steps_[static_cast<std::size_t>(c)];
      if (--child.deps_left != 0 || child.rec.status != StepStatus::Pending || child.in_flight) continue;
      bool any_done = false;
      for (const auto& d : child.step->deps)
        any_done =
            any_done || steps_[static_cast<std::size_t>(index_of_.at(d))].rec.status == StepStatus::Done;
      if (any_done) {
        ready_.insert(c);
      } else {
        stack.emplace_back(c, child.step->deps.size() == 1
                                  ? fmt::format("dependency '{}' was skipped", s.step->id)
                                  : std::string("every dependency was skipped"));
      }
    }
  }
}

}  // namespace orch
