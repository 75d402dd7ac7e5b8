// Scheduler: dispatch — which ready steps start now, under the run's -j, the
// open-files limit, overlapping `writes:`, their conditions, the risk guard and
// the budgets; and what an attempt reserves of the budget before it starts.
#include <fmt/format.h>

#include <algorithm>

#include "engine/attempt_render.h"
#include "engine/scheduler.h"

namespace orch {

int Scheduler::dispatch_ready(std::vector<int>& to_start) {
  int started_inline = 0;
  if (stop_ != StopKind::None) return 0;
  std::optional<std::string> blocked;
  for (auto it = ready_.begin();
       it != ready_.end() && in_flight_.count() < run_.concurrency && stop_ == StopKind::None;) {
    int i = *it;
    StepState& s = steps_[static_cast<std::size_t>(i)];
    // In order: a step held back for descriptors holds back those after it, so
    // a stream of cheaper ones cannot keep it waiting for ever.
    const InFlight::Room room = in_flight_.open_files_room(s.executor->open_files_per_attempt());
    if (room == InFlight::Room::FullFirstTime)
      writer_.event("concurrency_capped", "", 0,
                    {{"requested", run_.concurrency},
                     {"used", in_flight_.count()},
                     {"open_files_limit", in_flight_.open_files_limit()}});
    if (room != InFlight::Room::Fits) break;
    // Two steps that may change the same files do not run at once: a failed one's
    // restore would undo what the other did.
    if (in_flight_.writes_overlap(steps_, i, run_.workspace)) {
      ++it;
      continue;
    }
    if (s.step->when && !s.condition_held && !condition_holds(i)) {
      it = ready_.erase(it);
      continue;
    }
    if (!s.cleared) {
      Gate gate = risk_gate(i);
      if (gate == Gate::Ask) {
        ++it;
        continue;
      }
      if (gate != Gate::Go) {
        it = ready_.erase(it);
        continue;
      }
    }
    // The step's own budget: what it already spent plus this attempt must fit.
    const std::optional<std::string> step_short = step_budget_exhausted(s.step->budget, s.spent(), true);
    if (step_short) {
      it = ready_.erase(it);
      mark_failed(i, *step_short);
      continue;
    }
    std::optional<std::int64_t> token_cap;
    const Spend r = reservation(s, &token_cap);
    if (auto why = budget_->shortfall(r, wall_ms_now())) {
      blocked = why;
      ++it;
      continue;
    }
    it = ready_.erase(it);
    budget_->reserve(r);
    s.flight().reservation = r;
    s.flight().token_cap = token_cap;
    if (!prepare_attempt(i)) continue;
    if (s.executor->in_process()) {
      start_attempt(i);
      ++started_inline;
    } else {
      to_start.push_back(i);
    }
  }
  // Nothing running will free or spend budget; a retry that is waiting for its
  // delay and fits may still be made (it is judged like any ready step when it
  // comes due), so the run stops only when none does.
  if (blocked && in_flight_.count() == 0 && to_start.empty() && started_inline == 0 &&
      stop_ == StopKind::None && !a_waiting_retry_fits()) {
    request_stop(StopKind::Budget, "budget exhausted: " + *blocked);
  }
  return started_inline;
}

std::vector<Postcondition> Scheduler::default_post_of(int i) const {
  const StepState& s = steps_[static_cast<std::size_t>(i)];
  return s.executor != nullptr ? s.executor->default_post() : std::vector<Postcondition>{};
}

Spend Scheduler::reservation(const StepState& s, std::optional<std::int64_t>* token_cap) const {
  const BudgetLimits& sb = s.step->budget;
  SpendEstimate est = s.executor->estimate(*s.step);
  if (est.min_tokens > 0) {
    // A call held to its reservation is reckoned on the prompt it will send:
    // placeholders filled (a step's result can be most of the prompt).
    auto rendered = render_step(*s.step, result_lookup(), s.rec.last_attempt + 1, s.previous_failure);
    if (rendered) {
      Step filled = *s.step;
      filled.inputs = std::move(rendered->inputs);
      est = s.executor->estimate(filled);
    }
  }
  Spend r;
  r.attempts = 1;
  r.tokens = sb.tokens ? *sb.tokens - (s.rec.tokens_in + s.rec.tokens_out) : est.tokens;
  r.cost_usd = sb.cost_usd ? *sb.cost_usd - s.rec.cost_usd : est.cost_usd;
  if (est.min_tokens > 0) {
    // A call that can be held to fewer tokens asks for what the plan has left
    // rather than waiting for a budget that will never grow.
    if (auto left = budget_->tokens_left(); left && r.tokens > *left)
      r.tokens = std::max(*left, std::min(est.min_tokens, r.tokens));
    if (token_cap) *token_cap = r.tokens;
  }
  return r;
}

bool Scheduler::a_waiting_retry_fits() const {
  if (retries_waiting_ == 0) return false;
  for (const StepState& s : steps_)
    if (s.retry_timer != 0 && !budget_->shortfall(reservation(s), wall_ms_now())) return true;
  return false;
}

}  // namespace orch
