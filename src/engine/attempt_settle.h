// engine/attempt_settle.h — what becomes of a step once an attempt of it ended.
//
// Pure functions of plain facts: no ledger, no loop, no clock. The scheduler
// gathers the facts (scheduler_settle.cc), asks, and carries out the answer:
//   * status_of_ending: how an attempt whose process did not run to completion
//     is recorded (timed out, stalled, failed) and why;
//   * settle_attempt: the step is done, goes back to pending (interrupted), is
//     cancelled, fails (and why), or is retried (after how long);
//   * step_budget_exhausted / done_over_budget: the step's own budget, as the
//     dispatcher and the settlement both judge it;
//   * after_failure: what a failed step does to the rest of the run.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/retry_policy.h"
#include "orch/executor.h"
#include "orch/plan.h"
#include "orch/store.h"

namespace orch {

// How an attempt that did not exit by itself is recorded.
struct EndingVerdict {
  AttemptStatus status = AttemptStatus::Failed;
  std::string reason;
};

// nullopt for an attempt that exited (its checks decide); otherwise its status
// (timed_out, stalled or failed: a process that did not run to completion never
// satisfies a step) and reason. `timeout_is_budget`: when the attempt's timeout
// was what was left of a wall budget, the reason that says so.
std::optional<EndingVerdict> status_of_ending(const AttemptOutcome& outcome,
                                              const std::string& timeout_is_budget);

// What a step has spent of its own budget: all its attempts (a --replan re-run
// starts over), and the counted attempts since it last succeeded.
struct StepSpent {
  std::int64_t tokens = 0;  // tokens_in + tokens_out
  double cost_usd = 0;
  int attempts = 0;
  std::int64_t wall_ms = 0;
};

// Why the step's own budget leaves no room for another attempt
// ("step budget exhausted: tokens 120 spent of 100"), or nullopt. A zero spend
// never exhausts (a budget of 0 admits what costs nothing). `with_wall`: the
// wall budget counts too (it does before an attempt; after one, the attempt's
// own timeout was already held to it).
std::optional<std::string> step_budget_exhausted(const BudgetLimits& budget, const StepSpent& spent,
                                                 bool with_wall);

// "done over its budget: tokens 120 spent of 100" for a step that succeeded
// past its own tokens or cost budget (its work is kept), else "".
std::string done_over_budget(const BudgetLimits& budget, const StepSpent& spent);

// Everything the decision after an attempt depends on.
struct SettleFacts {
  AttemptStatus status = AttemptStatus::Failed;  // as recorded in the attempt's row
  std::string reason;                            // the attempt's reason, masked
  bool setup_failed = false;  // AttemptEnding::SetupFailed: the executor's set-up, not the work
  bool transient = false;     // AttemptOutcome::transient
  std::optional<std::chrono::milliseconds> retry_after;
  // Why the attempt's `writes:` could not be put back ("" when they were, or
  // there were none), and the snapshot kept for a human.
  std::string unrestored;
  std::string snapshot_dir;
  BudgetLimits step_budget;
  StepSpent spent;                           // including this attempt
  int attempts_counted = 0;                  // counted attempts of the step, this one included
  int max_attempts = 1;                      // the step's `attempts` (or the plan's default)
  std::string last_failure_key;              // the reason of the step's previous failure ("" none)
  std::optional<std::string> run_stopping;   // the run's stop reason, when it is stopping
  std::chrono::milliseconds retry_delay{0};  // the step's retry_delay (or the plan's default)
};

struct SettleDecision {
  enum class Kind {
    Done,     // the step succeeded
    Requeue,  // interrupted: pending again, nothing counted (the resume runs it)
    Cancel,   // cancelled with the run
    Fail,     // the step failed: `reason`
    Retry,    // another attempt after `delay`
  };
  Kind kind = Kind::Fail;
  std::string reason;                  // Fail, Cancel: the step's reason
  std::chrono::milliseconds delay{0};  // Retry
  // The attempt failed as work does (failed, timed out, stalled) with its
  // workspace put back: the next attempt is told why, and the failure is the
  // one "same failure twice" compares the next with.
  bool remember_failure = false;
};

// The decision after an attempt (see the top of this file). `retry` gives the
// delay of a retry (its jitter is the only thing here not fixed by `facts`).
SettleDecision settle_attempt(const SettleFacts& facts, const RetryPolicy& retry);

// What a failed step does to the rest of the run: with keep-going (or a plan
// whose on_failure is continue) its dependents are skipped and the rest goes
// on; otherwise the run stops starting steps.
enum class AfterFailure { SkipDependents, StopRun };
AfterFailure after_failure(bool keep_going, OnFailure plan_on_failure);

}  // namespace orch
