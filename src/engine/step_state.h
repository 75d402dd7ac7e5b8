// engine/step_state.h — what the scheduler holds per step while it drives a run.
//
// A StepState per step of the plan (its ledger row, its place in the graph, the
// attempt in flight as a Flight), and the Completions the event loop's callbacks
// queue for the next turn. Shared by the scheduler's parts (scheduler.h,
// ready_set.h, turn_writer.h, check_runner.h); plain data with no behaviour of
// its own beyond allocating a Flight. Not part of liborch's API.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/attempt_settle.h"
#include "engine/budget.h"
#include "orch/event_loop.h"
#include "orch/executor.h"
#include "orch/plan.h"
#include "orch/postcondition.h"
#include "orch/store.h"

namespace orch {

// What one attempt of a step needs while it is prepared, runs and is settled.
// Allocated the first time the step is attempted and reused by its retries, so
// the 100,000 steps of a big plan that are waiting cost a pointer each.
struct Flight {
  AttemptRecord attempt;
  AttemptSpec spec;
  Spend reservation;
  std::optional<std::int64_t> token_cap;  // AttemptSpec::token_cap
  std::unique_ptr<RunningAttempt> running;
  std::optional<AttemptOutcome> outcome;
  std::vector<CheckResult> checks;
  std::size_t next_check = 0;
  std::unique_ptr<RunningAttempt> check_running;
  std::string cancel_reason;  // set when orch itself stops the attempt
  // Stopped because the plan's wall budget ran out: recorded timed_out, as an
  // attempt whose timeout was what was left of that budget (timeout_is_budget).
  bool cancel_is_wall_budget = false;
  std::string pending_render_error;
  bool pending_error_is_setup = false;  // the plan itself, every retry would fail the same way
  // The attempt's row is not in the ledger yet: it is inserted once, finished,
  // when the attempt ends in the transaction that started it (a builtin), else
  // as running when that transaction commits (before any process is spawned).
  bool row_unwritten = false;
  // The executor's record() was made in the commit of the attempt's row (the
  // attempt is queued for another process): one not started is withdrawn.
  bool recorded = false;
  int open_files = 0;  // the descriptors the attempt counts against the open-files limit (InFlight)
  // Set when the attempt's timeout is what was left of a wall budget (the step's
  // or the plan's): running out of it is said as the budget, not as a timeout.
  std::string timeout_is_budget;
  // When the executor's outcome was settled: the checks run from then on, and
  // their time is the attempt's too (its duration_ms, the step's wall_ms).
  std::chrono::steady_clock::time_point outcome_at{};
};

// How many attempts in a row a step may lose to a worker that stopped (its
// lease expired) before it fails: a step that kills every worker it runs on
// must not be handed to the next one for ever.
inline constexpr int kMaxLostInARow = 3;

struct StepState {
  const Step* step = nullptr;
  Executor* executor = nullptr;
  StepRecord rec;
  std::vector<int> children;
  int deps_left = 0;
  bool in_plan = true;

  // The attempt in flight (in_flight = started and not yet settled).
  bool in_flight = false;
  bool dirty = false;  // rec changed in this transaction; written at commit
  // The status this step is counted under in the progress counts, and whether a
  // change since is queued for them (ProgressCounts, progress_counts.h).
  StepStatus counted_as = StepStatus::Pending;
  bool recount = false;

  // The risk guard let the step run (checked once per process, before its first attempt).
  bool cleared = false;
  // Its `when:` was read: it held (the step may run), or it did not (the step is
  // skipped: its dependents count it as settled, not as done).
  bool condition_held = false;
  bool skipped_by_condition = false;
  // The answer of ask_approval: 0 not asked yet, 1 approved, -1 declined.
  std::int8_t answer = 0;

  // Counted attempts charged to the step's own `budget.attempts`: all since the
  // step last succeeded (a --replan re-run is a new version of it), across
  // resumes, where rec.attempts_counted starts over for a step that ended.
  int budget_attempts = 0;

  std::string previous_failure;  // told to the next attempt
  // Why it had failed before a resume gave it another chance: a stop before its
  // next attempt leaves it failed ("not retried"), not "not started".
  std::string earlier_failure;
  std::string last_failure_key;  // for "same failure twice"
  // Attempts in a row its executor lost (AttemptEnding::Interrupted from a
  // worker whose lease expired); at kMaxLostInARow the step fails.
  int lost_in_a_row = 0;
  EventLoop::TimerId retry_timer = 0;

  // What the step spent of its own budget (attempt_settle.h).
  StepSpent spent() const {
    return StepSpent{rec.tokens_in + rec.tokens_out, rec.cost_usd, budget_attempts, rec.wall_ms};
  }

  Flight& flight() {
    if (!flight_) flight_ = std::make_unique<Flight>();
    return *flight_;
  }
  bool has_flight() const { return flight_ != nullptr; }
  const Flight* flight_if_any() const { return flight_.get(); }
  // A settled step's attempt state, freed at the commit that records it (a run of
  // 100,000 steps would otherwise keep every attempt's spec and record).
  void release_flight() { flight_.reset(); }

 private:
  std::unique_ptr<Flight> flight_;
};

struct Completion {
  enum class Kind { AttemptDone, CheckDone, RetryDue };
  Kind kind = Kind::AttemptDone;
  int step = -1;
  AttemptOutcome outcome;
};

}  // namespace orch
