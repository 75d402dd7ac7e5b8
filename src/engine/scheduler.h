// engine/scheduler.h — the state and the loop behind orch::Engine (internal).
//
// The Scheduler holds one run in memory while it is driven: the plan, a
// StepState per step (ledger row, dependency counts, the attempt in flight), the
// ready set, the budget guard and the stop reason. Its loop is:
//   1. wait on the event loop (processes, timers, signals) — callbacks only queue
//      Completions, they never touch the ledger;
//   2. in one transaction: settle queued completions (postconditions, retries,
//      done/failed, skips), then reserve budget and record the attempts about to
//      start; commit;
//   3. start those attempts (processes are spawned only after their rows are durable).
// prepare_new() (engine_setup.cc) and prepare_resume() (resume.cc, in phases;
// the first of them, what a dead driver left, recover.cc — also Engine::recover)
// build the state; run_loop() drives it to the end and writes the final run row.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/attempt_render.h"
#include "engine/budget.h"
#include "engine/check_runner.h"
#include "engine/orphans.h"
#include "engine/progress_counts.h"
#include "engine/ready_set.h"
#include "engine/retry_policy.h"
#include "engine/risk_gate.h"
#include "engine/run_finish.h"
#include "engine/signals.h"
#include "engine/step_state.h"
#include "engine/turn_writer.h"
#include "orch/engine.h"
#include "orch/postcondition.h"
#include "util/secrets.h"

namespace orch {

class Scheduler {
 public:
  Scheduler(Store& store, const EngineOptions& options);

  Expected<void> prepare_new(Plan plan, const std::string& plan_text);
  Expected<void> prepare_resume(const std::string& run_id, const std::optional<std::string>& replan_path);
  // Engine::recover (recover.cc): what a dead driver left of the run, settled
  // under the run's lock, which is let go again.
  Expected<Recovery> recover(const std::string& run_id);
  Expected<RunOutcome> run_loop();
  // Engine::submit: the new run left with no driver (owner_pid 0), its lock let go.
  Expected<void> let_go();
  // Catches SIGINT/SIGTERM/SIGHUP for the loop (when options.handle_signals), once.
  void watch_signals();
  // Records (attempt_spawned events) the process groups in spawned_ of attempts still running.
  void flush_spawned();

  const std::string& run_id() const { return run_.id; }

 private:
  // Setup shared by new runs and resumes.
  Expected<void> load_plan_state(Plan plan);
  Expected<void> index_plan_state();  // steps_ and index_of_ from plan_
  // Recovery (recover.cc) and the resume's phases (resume.cc), in their order.
  struct RunTaken {
    RunStatus status_before_lock = RunStatus::Running;
    std::int64_t locking_ms = 0;  // when the lock was asked for (system clock)
    bool locked = false;          // lock_ holds the run's lock, run_ its row read under it
    // `orch cancel` cancelled the run while this process waited for its lock.
    bool cancelled_meanwhile = false;
  };
  // The run's lock, waiting out an `orch cancel` that holds it for a moment, and
  // its row read again under it (run_).
  Expected<RunTaken> take_run(const std::string& run_id);
  Expected<void> workspace_is_a_folder() const;
  // Kills what the dead driver left running, closes its attempts as interrupted
  // (their writes put back, their steps charged; a step whose writes cannot be
  // put back failed), moves the run row on to its last sign of life; commits.
  // Adds what it did to recovered_.
  Expected<void> settle_dead_driver();
  // Clears a cancel that was asked of the dead driver, keeping one that came
  // after this process asked for the lock (at `locking_ms`).
  Expected<void> clear_stale_cancel(std::int64_t locking_ms);
  struct ResumePlan {
    std::string text;
    std::string path;              // the plan's file ("" none: the workspace is its folder)
    std::vector<StepRecord> rows;  // the run's step rows
  };
  // The latest plan version (or the --replan text) parsed, validated and indexed
  // (plan_, steps_), with the step rows read meanwhile.
  Expected<ResumePlan> load_resume_plan(const std::optional<std::string>& replan_path,
                                        std::optional<std::string> replan_text);
  void reopen_run(bool replanned, const std::string& plan_path);  // run_ as a driven run again
  // steps_' records from the ledger's rows: done stays done, the rest is pending
  // again (a fresh set of attempts for one that ended). Which rows changed.
  Expected<std::vector<bool>> rebuild_step_states(std::vector<StepRecord>& rows);
  Expected<void> count_budget_attempts();  // StepState::budget_attempts from the attempts
  // --replan: a new plan version; done steps whose fingerprint changed, or that a
  // re-run dependency ran again after, reset with their descendants.
  Expected<void> reset_changed_steps(const ResumePlan& plan, std::vector<bool>& changed);
  Expected<void> restore_budget();  // budget_ from the attempts' totals

  // Where the plan's relative schema files are: its file's folder (the workspace
  // for a plan given as text).
  std::filesystem::path plan_dir() const;
  // The postconditions step i's executor checks when the step gives none.
  std::vector<Postcondition> default_post_of(int i) const;

  // Ledger writes, grouped per loop turn (writer_).
  Expected<void> commit();       // the turn's writes, then the spawn journal emptied if it may be
  void save_step(StepState& s);  // marks the step's row for writing at commit(), and for the counts

  // One turn.
  Expected<void> settle_completions();
  // Reserves and prepares ready steps; process-starting ones go to `to_start`
  // (started after the commit), in-process ones start now. Returns how many did.
  int dispatch_ready(std::vector<int>& to_start);
  // What an attempt of `s` reserves: what is left of its own budget's tokens and
  // cost, else its executor's estimate; and one attempt. For an executor that can
  // keep an attempt to fewer tokens (SpendEstimate::min_tokens), the tokens are
  // at most what the plan's budget has left, down to that floor, and `token_cap`
  // (when given) is set to them.
  Spend reservation(const StepState& s, std::optional<std::int64_t>* token_cap = nullptr) const;
  // Whether a retry waiting for its delay would fit in the plan's budget now.
  bool a_waiting_retry_fits() const;
  void start_attempt(int i);
  bool prepare_attempt(int i);
  // The risk guard for step i (gate_, risk_gate.h): Go, Wait (marked
  // awaiting_approval), Refused (marked failed) or Ask (queued in gate_: the
  // question is put after the turn's commit, and the step stays ready).
  enum class Gate { Go, Wait, Refused, Ask };
  Gate risk_gate(int i);
  // Step i's `when:` (scheduler_condition.cc), read once it is ready: true when
  // it held; false when it was false (the step skipped, scheduler_condition.cc's
  // skip_by_condition) or could not be evaluated (the step failed with why).
  bool condition_holds(int i);
  void skip_by_condition(int i, const std::string& reason);
  void ask_pending_questions();

  // Settling.
  void on_attempt_done(int i, AttemptOutcome outcome);
  void run_checks(int i);                                    // checks_ from the attempt's next check on
  void on_check_done(int i, const AttemptOutcome& outcome);  // a shell_zero check's process ended
  void finish_attempt(int i, AttemptStatus status, const std::string& reason);
  void mark_done(int i);
  void mark_failed(int i, const std::string& reason);
  void apply_on_failure(int i);  // on_failure for step i, failed: skip its dependents or stop
  void skip_descendants(int i, const std::string& reason);
  void schedule_retry(int i, std::chrono::milliseconds delay, const std::string& failure);
  void request_stop(StopKind kind, const std::string& reason);
  void cancel_in_flight(const std::string& reason, bool wall_budget = false);
  // How an attempt orch stopped is recorded: interrupted (a signal), timed_out
  // (the plan's wall budget ran out) or cancelled.
  AttemptStatus stopped_status(const Flight& f) const;
  // "budget exhausted: wall: N ms used of N ms", for the plan's wall budget.
  std::string plan_wall_spent() const;
  void poll_cancel_request();
  Expected<RunOutcome> finish_run();

  std::int64_t wall_ms_now() const;
  std::int64_t now_ms() const;
  void report(ProgressEvent::Kind kind, int step = -1, const std::string& reason = "");
  ResultLookup result_lookup() const;
  std::filesystem::path attempt_file(const StepState& s, int number, const std::string& suffix) const;
  std::filesystem::path usage_folder() const;  // runs/<run>/usage: <step>.<n>.json
  // Makes the run's folder in the store, with the usage folder steps may write
  // ORCH_USAGE_FILE in, and names its spawn journal: before anything can spawn.
  Expected<void> prepare_run_folder();
  // Notes the process group an attempt (or its shell_zero check, `check`) was
  // started in: a line in the spawn journal now, an attempt_spawned event at
  // the next commit (flush_spawned).
  void note_spawned(int i, int group, bool check);

  Store& store_;
  EngineOptions options_;
  Clock& clock_;
  std::shared_ptr<ExecutorRegistry> executors_;
  std::shared_ptr<SecretMasker> secrets_;  // grows as steps' env and inputs are rendered
  EventLoop loop_;
  TurnWriter writer_;
  RiskGate gate_;  // the risk guard's approvals and questions
  CheckRunner checks_;
  std::unique_ptr<StoreLock> lock_;  // the run's lock, while this driver holds it
  std::unique_ptr<SignalWatch> signals_;
  // Attempts started since the last commit whose process group is yet to be
  // recorded (an attempt_spawned event in the next turn's transaction).
  struct Spawned {
    int step = 0;
    int attempt = 0;
    int group = 0;
    std::int64_t spawned_ms = 0;  // wall clock
    bool check = false;           // the group of a shell_zero check, not of the attempt's own process
  };
  std::vector<Spawned> spawned_;
  SpawnJournal spawn_journal_;
  bool spawn_journal_failed_ = false;  // a spawn_journal_failed event recorded

  Plan plan_;
  RunRecord run_;
  std::vector<StepState> steps_;
  std::unordered_map<std::string, int> index_of_;
  ReadySet ready_;      // pending steps whose dependencies are done
  InFlight in_flight_;  // the attempts running, against the open-files limit and `writes:`
  std::deque<Completion> completions_;
  std::optional<BudgetGuard> budget_;
  bool resumed_ = false;  // prepare_resume set this run up
  // What settle_dead_driver did for run recovered_run_ since a resume last took it over.
  Recovery recovered_;
  std::string recovered_run_;
  // Steps the recovery failed: the dead driver's attempt at them could not have
  // its `writes:` put back. The run loop applies on_failure to them first.
  std::vector<std::string> resume_unrestored_;
  int started_here_ = 0;  // attempts this process started
  int retries_waiting_ = 0;
  StopKind stop_ = StopKind::None;
  std::string stop_reason_;
  Clock::TimePoint started_;  // on clock_: the wall budget counts from here
  std::chrono::steady_clock::time_point last_cancel_poll_;
  std::chrono::steady_clock::time_point last_tick_;
  std::chrono::steady_clock::time_point last_run_write_{};  // the run row, at most every kRunRowInterval
  RetryPolicy retry_{seeded_jitter(std::random_device{}())};  // the back-off's jitter, seeded once per run
  EventLoop::TimerId wall_timer_ = 0;
  ProgressCounts counts_;  // the step counts of progress events
};

}  // namespace orch
