// What becomes of a step once an attempt of it ended. See attempt_settle.h.
#include "engine/attempt_settle.h"

#include <fmt/format.h>

#include "orch/postcondition.h"
#include "orch/report.h"
#include "util/strings.h"

namespace orch {

std::optional<EndingVerdict> status_of_ending(const AttemptOutcome& o, const std::string& timeout_is_budget) {
  if (o.ending == AttemptEnding::Exited) return std::nullopt;
  std::string why = o.message;
  if (o.ending == AttemptEnding::TimedOut && !timeout_is_budget.empty())
    why = timeout_is_budget;  // its time was what was left of a wall budget
  if (why.empty())
    why = o.ending == AttemptEnding::Signaled ? fmt::format("killed by signal {}", o.signal)
                                              : attempt_ending_name(o.ending);
  // A crash, or an exit its executor then found fault with (a tool that broke
  // its contract): what the process printed last is the cause, never masked.
  if (o.ending == AttemptEnding::Signaled || (o.ending == AttemptEnding::Error && o.exit_code > 0))
    why += failure_output_suffix(o.output_tail);
  const AttemptStatus status = o.ending == AttemptEnding::TimedOut  ? AttemptStatus::TimedOut
                               : o.ending == AttemptEnding::Stalled ? AttemptStatus::Stalled
                                                                    : AttemptStatus::Failed;
  return EndingVerdict{status, std::move(why)};
}

std::optional<std::string> step_budget_exhausted(const BudgetLimits& budget, const StepSpent& spent,
                                                 bool with_wall) {
  if (budget.tokens && spent.tokens > 0 && spent.tokens >= *budget.tokens)
    return fmt::format("step budget exhausted: tokens {} spent of {}", spent.tokens, *budget.tokens);
  if (budget.cost_usd && spent.cost_usd > 0 && spent.cost_usd >= *budget.cost_usd)
    return fmt::format("step budget exhausted: cost {} spent of {}", dollars(spent.cost_usd),
                       dollars(*budget.cost_usd));
  if (budget.attempts && spent.attempts >= *budget.attempts)
    return fmt::format("step budget exhausted: attempts {} made of {}", spent.attempts, *budget.attempts);
  if (with_wall && budget.wall && spent.wall_ms >= budget.wall->count())
    return fmt::format("step budget exhausted: wall {} ms used of {} ms", spent.wall_ms,
                       budget.wall->count());
  return std::nullopt;
}

std::string done_over_budget(const BudgetLimits& budget, const StepSpent& spent) {
  // Reserved at its declared maximum, a step can still have spent more than its
  // own budget in the attempt that succeeded.
  if (budget.tokens && spent.tokens > *budget.tokens)
    return fmt::format("done over its budget: tokens {} spent of {}", spent.tokens, *budget.tokens);
  if (budget.cost_usd && spent.cost_usd > *budget.cost_usd + 1e-12)
    return fmt::format("done over its budget: cost {} spent of {}", dollars(spent.cost_usd),
                       dollars(*budget.cost_usd));
  return "";
}

namespace {
SettleDecision failed_with(std::string reason, bool remember = true) {
  SettleDecision d;
  d.kind = SettleDecision::Kind::Fail;
  d.reason = std::move(reason);
  d.remember_failure = remember;
  return d;
}
}  // namespace

SettleDecision settle_attempt(const SettleFacts& f, const RetryPolicy& retry) {
  using Kind = SettleDecision::Kind;
  const std::string not_put_back =
      f.unrestored.empty()
          ? std::string()
          : fmt::format("{} (not retried: its writes could not be put back: {}; the snapshot is kept in {})",
                        f.reason, f.unrestored, f.snapshot_dir);
  // Interrupted with its writes not put back: a resume must not run it again on
  // the leftovers either (a failed step is run again only when asked to).
  if (f.status == AttemptStatus::Interrupted && !f.unrestored.empty())
    return failed_with(not_put_back, false);
  switch (f.status) {
    case AttemptStatus::Succeeded:
      return SettleDecision{Kind::Done, "", {}, false};
    case AttemptStatus::Interrupted:
      return SettleDecision{Kind::Requeue, "", {}, false};
    case AttemptStatus::Cancelled:
      return SettleDecision{Kind::Cancel, f.reason, {}, false};
    default:
      break;
  }
  // A workspace that could not be put back is not one to try again in: the next
  // attempt would start from the failed one's leftovers.
  if (!f.unrestored.empty()) return failed_with(not_put_back, false);

  // Failed, timed out or stalled: retry with the reason, or give up. A
  // transient failure (a provider's 429 or 5xx) may well repeat word for word
  // and still pass later: it is retried with back-off instead.
  const bool same_twice = !f.transient && !f.last_failure_key.empty() && f.reason == f.last_failure_key;
  if (f.setup_failed) {
    // The executor's set-up (a key not set, credentials refused), not the work:
    // every retry would fail the same way until a person fixes it.
    return failed_with(f.reason);
  }
  if (auto out = step_budget_exhausted(f.step_budget, f.spent, false))
    return failed_with(fmt::format("{}; last failure: {}", *out, f.reason));
  if (f.attempts_counted >= f.max_attempts)
    return failed_with(f.max_attempts > 1
                           ? fmt::format("failed after {} attempts: {}", f.attempts_counted, f.reason)
                           : f.reason);
  if (same_twice) return failed_with("same failure twice: " + f.reason);
  if (f.run_stopping) return failed_with(fmt::format("{} (not retried: {})", f.reason, *f.run_stopping));
  if (f.transient && f.retry_after && *f.retry_after > RetryPolicy::kMaxRetryAfter) {
    // A provider that asks for hours (a daily quota) is not waited for in
    // silence: the step fails, saying so, and a resume tries again when it is time.
    return failed_with(fmt::format(
        "{} (the provider asked to retry after {}, longer than orch waits ({}): not retried)", f.reason,
        human_duration(f.retry_after->count()), human_duration(RetryPolicy::kMaxRetryAfter.count())));
  }
  SettleDecision d;
  d.kind = Kind::Retry;
  d.delay = retry.delay(f.retry_delay, f.transient, f.attempts_counted, f.retry_after);
  d.remember_failure = true;
  return d;
}

AfterFailure after_failure(bool keep_going, OnFailure plan_on_failure) {
  return keep_going || plan_on_failure == OnFailure::Continue ? AfterFailure::SkipDependents
                                                              : AfterFailure::StopRun;
}

}  // namespace orch
