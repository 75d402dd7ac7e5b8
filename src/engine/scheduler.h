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
// prepare_new() and prepare_resume() (engine_setup.cc) build the state; run_loop()
// drives it to the end and writes the final run row.
#pragma once

#include <chrono>
#include <climits>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/attempt_render.h"
#include "engine/budget.h"
#include "engine/orphans.h"
#include "engine/run_lock.h"
#include "engine/signals.h"
#include "orch/engine.h"
#include "orch/postcondition.h"
#include "util/secrets.h"

namespace orch {

enum class StopKind { None, Abort, Budget, Interrupt, Cancel, StoreError };

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
  int open_files = 0;  // what the attempt counts against Scheduler::open_files_free_
  // Set when the attempt's timeout is what was left of a wall budget (the step's
  // or the plan's): running out of it is said as the budget, not as a timeout.
  std::string timeout_is_budget;
  // When the executor's outcome was settled: the checks run from then on, and
  // their time is the attempt's too (its duration_ms, the step's wall_ms).
  std::chrono::steady_clock::time_point outcome_at{};
};

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
  // change since is queued for them (Scheduler::refresh_counts).
  StepStatus counted_as = StepStatus::Pending;
  bool recount = false;

  // The risk guard let the step run (checked once per process, before its first attempt).
  bool cleared = false;
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
  EventLoop::TimerId retry_timer = 0;

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

class Scheduler {
 public:
  Scheduler(Store& store, const EngineOptions& options);

  Expected<void> prepare_new(Plan plan, const std::string& plan_text);
  Expected<void> prepare_resume(const std::string& run_id, const std::optional<std::string>& replan_path);
  Expected<RunOutcome> run_loop();
  // Catches SIGINT/SIGTERM/SIGHUP for the loop (when options.handle_signals), once.
  void watch_signals();
  // Records (attempt_spawned events) the process groups in spawned_ of attempts still running.
  void flush_spawned();

  const std::string& run_id() const { return run_.id; }

 private:
  // Setup shared by new runs and resumes.
  Expected<void> load_plan_state(Plan plan);
  Expected<void> index_plan_state();  // steps_ and index_of_ from plan_
  void index_ready();
  // Whether step i's attempt may start now within the open-files limit (see
  // open_files_free_); records concurrency_capped the first time one may not.
  bool open_files_allow(int i);
  // Whether step i declares `writes:` that are, hold or lie in those of a step
  // in flight (compared as written, in the workspace).
  bool writes_overlap_in_flight(int i) const;
  // Where the plan's relative schema files are: its file's folder (the workspace
  // for a plan given as text).
  std::filesystem::path plan_dir() const;
  // The postconditions step i's executor checks when the step gives none.
  std::vector<Postcondition> default_post_of(int i) const;

  // Ledger writes, grouped per loop turn.
  Expected<void> tx();
  Expected<void> commit();
  void event(const std::string& kind, const std::string& step_id = "", int attempt = 0,
             const nlohmann::json& data = nlohmann::json::object());
  void save_step(StepState& s);  // marks the step's row for writing at commit()

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
  // The risk guard for step i (EngineOptions::approve_steps): Go, Wait (marked
  // awaiting_approval), Refused (marked failed) or Ask (queued in asks_: the
  // question is put after the turn's commit, and the step stays ready).
  enum class Gate { Go, Wait, Refused, Ask };
  Gate risk_gate(int i);
  void ask_pending_questions();

  // Settling.
  void on_attempt_done(int i, AttemptOutcome outcome);
  void run_checks(int i);
  void finish_attempt(int i, AttemptStatus status, const std::string& reason);
  void mark_done(int i);
  void mark_failed(int i, const std::string& reason);
  void apply_on_failure(int i);  // on_failure for step i, failed: skip its dependents or stop
  void skip_descendants(int i, const std::string& reason);
  void schedule_retry(int i, std::chrono::milliseconds delay, const std::string& failure);
  std::chrono::milliseconds transient_backoff(std::chrono::milliseconds base, int failures,
                                              std::optional<std::chrono::milliseconds> retry_after);
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
  std::optional<RunLock> lock_;
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
  // Descriptors the attempts in flight may still open, by their executors'
  // open_files_per_attempt(): the open-files limit less a reserve for the ledger,
  // the event loop and the rest. Set when the loop starts.
  long long open_files_free_ = LLONG_MAX;
  bool open_files_capped_ = false;  // concurrency_capped recorded
  std::vector<int> writers_in_flight_;        // steps in flight that declare `writes:`
  std::vector<std::string> spent_snapshots_;  // removed after the next commit

  Plan plan_;
  RunRecord run_;
  std::vector<StepState> steps_;
  std::unordered_map<std::string, int> index_of_;
  std::set<int> ready_;
  std::deque<Completion> completions_;
  std::map<std::string, std::string> ledger_approvals_;  // step id -> fingerprint approved ("" any)
  std::vector<std::pair<int, ApprovalRequest>> asks_;
  std::vector<int> dirty_steps_;         // steps whose rec commit() writes
  std::vector<int> unwritten_attempts_;  // steps whose attempt row commit() inserts (Flight::row_unwritten)
  std::optional<BudgetGuard> budget_;
  int in_flight_ = 0;
  bool resumed_ = false;  // prepare_resume set this run up
  // Steps prepare_resume failed: the dead driver's attempt at them could not have
  // its `writes:` put back. The run loop applies on_failure to them first.
  std::vector<std::string> resume_unrestored_;
  int started_here_ = 0;  // attempts this process started
  int retries_waiting_ = 0;
  bool in_tx_ = false;
  StopKind stop_ = StopKind::None;
  std::string stop_reason_;
  std::optional<Error> store_error_;
  Clock::TimePoint started_;  // on clock_: the wall budget counts from here
  std::chrono::steady_clock::time_point last_cancel_poll_;
  std::chrono::steady_clock::time_point last_tick_;
  std::chrono::steady_clock::time_point last_run_write_{};  // the run row, at most every kRunRowInterval
  std::minstd_rand random_{std::random_device{}()};         // back-off jitter
  EventLoop::TimerId wall_timer_ = 0;
  // The step counts of progress events, kept up to date from the steps saved since
  // the last report (count_queue_) rather than by counting 100,000 steps again.
  void refresh_counts();
  ProgressEvent counts_;
  bool counts_ready_ = false;
  std::vector<int> count_queue_;
};

}  // namespace orch
