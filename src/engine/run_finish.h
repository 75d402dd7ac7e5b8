// engine/run_finish.h — how a run ends: its status and reason, from why it stopped and what its steps came
// to.
//
// The scheduler's loop ends when nothing is in flight and either a stop was
// asked for (a step failed with on_failure abort, the budget ran out, `orch
// cancel`, a signal, a ledger error) or nothing is ready or waiting to retry.
// Then, as pure functions of what it knows:
//   1. ending_of_stop: what the stop alone makes of the run (interrupted,
//      cancelled, budget_exhausted, failed) and how the steps that never
//      started are to be closed;
//   2. left_at_stop: each step still pending is failed ("not retried") if it
//      had failed before, else skipped with that reason;
//   3. run_ending: the run's status and reason, naming the steps that failed
//      and those waiting for approval, and the budget overspent.
// The scheduler records each (scheduler.cc, Scheduler::finish_run).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "orch/store.h"

namespace orch {

// Why a run stops starting steps. When two come, the run ends as the one of
// higher stop_priority (a signal over a cancel over an abort or the budget).
enum class StopKind { None, Abort, Budget, Interrupt, Cancel, StoreError };
int stop_priority(StopKind kind);

// What a stop alone makes of the run.
struct StopEnding {
  RunStatus status = RunStatus::Succeeded;
  std::string reason;
  // How a step that never started is closed ("" none are: they stay pending, as
  // for an interrupted run, which a resume continues).
  std::string skip_reason;
  // Said last in the run's reason, for a resume whose budget had run out and
  // that could start nothing: the way on is a bigger budget.
  std::string budget_hint;
  // The budget_exhausted event's reason, when the budget stopped the run.
  std::optional<std::string> budget_exhausted;
};
// `resumed_started_nothing`: the run was resumed and this drive started no attempt.
StopEnding ending_of_stop(StopKind stop, const std::string& stop_reason, const std::string& run_id,
                          bool resumed_started_nothing);

// What becomes of a step still pending when the run stopped with `at_stop`
// (whose skip_reason is not empty). `tried`: it failed before (in this drive,
// or in an earlier one: a resume starts its count again), and `last_failure`
// is why (its first line is said).
struct LeftStep {
  StepStatus status = StepStatus::Skipped;
  std::string reason;
};
LeftStep left_at_stop(bool tried, const std::string& last_failure, const std::string& stop_reason,
                      const std::string& skip_reason);

// What the steps came to once the stop was applied, for the run's reason.
struct StepsAtEnd {
  std::vector<std::string> failed;   // in plan order
  std::vector<std::string> waiting;  // awaiting approval, in plan order
  int not_done = 0;
};
struct RunEnding {
  RunStatus status = RunStatus::Succeeded;
  std::string reason;
};
// `overspent`: BudgetGuard::overspent() ("tokens: 300 spent of 100"), when the
// run's spend went past its budget.
RunEnding run_ending(StopKind stop, const StopEnding& at_stop, const StepsAtEnd& steps,
                     const std::string& run_id, const std::optional<std::string>& overspent);

}  // namespace orch
