// orch/engine.h — driving a plan to a terminal state through the ledger.
//
// The Engine is the scheduler: one event loop (event_loop.h) runs every attempt;
// each loop turn settles finished attempts (postconditions, retries, budgets),
// skips what can no longer run, reserves budget and starts ready steps up to the
// concurrency limit, and commits all of that turn's ledger writes in one
// transaction — before any process of the turn is started.
//
// Guarantees (tested in tests/crash and src/engine):
//   * a step recorded done is never run again, across kill -9 and resume;
//   * attempts are append-only rows; a retry is a new row;
//   * a budget is never overshot by dispatch: a step is started only when the
//     remaining budget covers its reservation;
//   * SIGINT/SIGTERM (when handle_signals) stop dispatch, kill the running
//     process groups, record the attempts interrupted and end the run
//     "interrupted" (exit 130); the run stays resumable.
// One Engine drives one run at a time, from one thread. The run is locked for the
// duration (a second process resuming it gets ErrorCode::Busy).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "orch/error.h"
#include "orch/executor.h"
#include "orch/plan.h"
#include "orch/store.h"
#include "orch/validate.h"

namespace orch {

class SecretMasker;  // util/secrets.h
class Clock;         // orch/clock.h

// Exit codes of orch (docs/cli.md).
enum ExitCode : int {
  kExitSucceeded = 0,
  kExitFailed = 1,
  kExitInvalid = 2,
  kExitEscalated = 3,
  kExitBudget = 4,
  kExitInterrupted = 130,
};
int exit_code_for(RunStatus status);

// What the engine tells its caller as the run goes (for progress output).
struct ProgressEvent {
  // Committed: what was reported before it is now in the ledger (sent after each
  // of the engine's transactions; carries no step and no counts).
  enum class Kind { AttemptStarted, StepFinished, Tick, Committed };
  Kind kind = Kind::Tick;
  std::string step_id;
  StepStatus step_status = StepStatus::Pending;
  int attempt = 0;
  std::string reason;
  std::int64_t duration_ms = 0;           // the step's time: all its attempts
  std::int64_t attempt_duration_ms = -1;  // the time of attempt `attempt` (-1: not known here)
  // Whether attempt `attempt` ran in this process: false for a step that ends
  // (a budget, a dependency, a stop) without an attempt of its own this time.
  bool attempt_ran_now = false;
  // A step that failed after an attempt that ran in this process: the last
  // output of that attempt (stdout's tail, then stderr's; secrets masked), to be
  // shown under the failure as ninja shows a failed command's output.
  std::string output_tail;
  // Counts at the time of the event.
  int total = 0, done = 0, running = 0, failed = 0, skipped = 0;
  std::int64_t tokens = 0;
  double cost_usd = 0;
};

// A step the risk guard holds until a human approves it (MEDIUM or HIGH risk).
struct ApprovalRequest {
  std::string run_id;
  std::string step_id;
  std::string goal;
  RiskLevel risk = RiskLevel::Medium;
  std::string command;  // Executor::describe() of the rendered step: the exact command and its inputs
  // True once orch was asked to stop (SIGINT/SIGTERM/SIGHUP) while the question
  // is open: a prompt polls it and gives up (a no).
  std::function<bool()> stop_requested;
};

struct EngineOptions {
  std::filesystem::path workspace = ".";
  std::optional<int> concurrency;               // overrides the plan's
  bool keep_going = false;                      // on_failure: continue, whatever the plan says
  std::shared_ptr<ExecutorRegistry> executors;  // default: ExecutorRegistry::with_builtins()
  bool handle_signals = false;                  // install SIGINT/SIGTERM handlers for the run's duration
  std::function<void(const ProgressEvent&)> on_progress;
  std::function<void(const std::string& run_id)> on_started;  // once the run is durable
  std::chrono::milliseconds tick_interval{500};               // how often Tick progress events come
  // Values never stored or shown: replaced by "***" in step results, output
  // files, output tails, reasons and events. Null: the secrets of orch's own
  // environment (names containing KEY, TOKEN, SECRET, PASSWORD, ...; see
  // util/secrets.h). Either way the secret-looking entries of each step's env
  // and inputs are added as the steps are rendered.
  std::shared_ptr<const SecretMasker> secrets;
  // Timers (retry delays, the wall budget, timeouts) and ledger stamps; null:
  // Clock::system(). Tests pass a ManualClock (orch/clock.h) so that retry
  // back-off and wall budgets run without sleeping. Must outlive the engine.
  Clock* clock = nullptr;

  // The risk guard, before a step's first attempt in this process (docs/plan-format.md,
  // "The risk guard"): LOW runs; CRITICAL is refused (the step fails, event
  // step_refused); MEDIUM runs when approve_medium, when named in approve_steps,
  // when `orch approve` recorded an approval in the ledger, or when ask_approval
  // says yes; HIGH likewise but approve_medium does not cover it. Otherwise the
  // step waits (status awaiting_approval, event approval_requested) while the rest
  // of the plan runs, and the run ends awaiting_approval (exit 3).
  std::set<std::string> approve_steps;  // --approve ID
  bool approve_medium = false;          // --approve-medium
  // Asked, outside any ledger transaction, for a MEDIUM or HIGH step nothing
  // above approves (the CLI: a prompt on the terminal). The loop waits for the
  // answer; running steps go on. True approves; false leaves the step waiting.
  std::function<bool(const ApprovalRequest&)> ask_approval;

  // The runtime a new run is started for (the phase runner sets it); none for
  // `orch run`. A resumed run keeps the owner it was recorded with.
  RunOwner owner;
  // Where a new run's attempts execute (recorded in its row; a resume keeps the
  // run's): Workers only with executors that queue them for `orch worker`
  // processes (distrib/remote_executor.h) — the engine itself does not care.
  Dispatch dispatch = Dispatch::Local;
};

// What Engine::recover found a dead driver had left of a run, and did about it.
struct Recovery {
  int processes_killed = 0;  // processes left running (engine/orphans.h)
  int attempts_closed = 0;   // attempts left `running`, now `interrupted` (not counted)
  // Steps whose interrupted attempt's `writes:` could not be put back: failed,
  // the snapshot kept and named in the step's reason.
  std::vector<std::string> steps_failed;
};

struct RunOutcome {
  std::string run_id;
  RunStatus status = RunStatus::Failed;
  std::string reason;
  int exit_code() const { return exit_code_for(status); }
};

// ValidateOptions wired to an executor registry (executor names, executor checks).
// `plan_file` as given to read_plan_file: its folder is the plan's; "" (a plan
// built in code) and "-" (standard input, named "<stdin>") have the workspace's.
ValidateOptions validate_options_for(const std::filesystem::path& workspace, const std::string& plan_file,
                                     const ExecutorRegistry& executors);

// Asks run `run_id` to stop. When a live process drives it, the ledger's cancel
// flag is set (the engine sees it within 250 ms, kills its steps and ends the run
// "cancelled") and this waits up to `wait` for that. When no process drives it,
// the run is marked cancelled here, its unfinished steps skipped. Returns the
// run's status afterwards. A run that already ended is an InvalidInput error.
Expected<RunStatus> cancel_run(Store& store, const std::string& run_id, std::chrono::milliseconds wait);

// What `orch approve` recorded: the request it answered, as the ledger had it.
struct ApprovalRecorded {
  std::string risk;
  std::string command;
  std::string fingerprint;
};

// Records that a human approved step `step_id` of run `run_id`, which must be
// awaiting approval: a step_approved event bound to the fingerprint of the step
// as it was shown. The next `orch resume` runs it (unless the plan was changed
// so that the step renders differently: then it asks again).
Expected<ApprovalRecorded> approve_step(Store& store, const std::string& run_id, const std::string& step_id,
                                        std::int64_t now_ms);

class Engine {
 public:
  Engine(Store& store, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Creates a run for `plan` (which must have passed validate_plan) and drives it.
  // `plan_text` is the plan as submitted, stored in the ledger for resume.
  Expected<RunOutcome> run(const Plan& plan, const std::string& plan_text);
  // The same, taking the plan over instead of copying it (a large plan's copy is not free).
  Expected<RunOutcome> run(Plan&& plan, const std::string& plan_text);

  // Continues a run from what the ledger says. With `replan_path`, the plan is
  // replaced: done steps whose fingerprint changed re-run with their descendants.
  Expected<RunOutcome> resume(const std::string& run_id, const std::optional<std::string>& replan_path);
  // Records a new run and leaves it to another process to drive: the run is in
  // the ledger, running, with no step started, no driver (owner_pid 0) and its
  // lock let go. For a run executed by workers (`orch run --workers --detach`),
  // which an `orch worker` then drives with a resume. Returns its id.
  Expected<std::string> submit(Plan&& plan, const std::string& plan_text);

  // Settles what a driver that died (kill -9, a crash, a lost machine's power)
  // left of run `run_id`: what every resume does before anything else, and
  // does by this same code. For a runtime that must deal with a run's
  // leftovers before it decides what to do with the run (resume it, replan it).
  //   * Takes the run's lock for as long as it works, and lets it go: Busy
  //     while a live process drives the run. A run an `orch cancel` cancelled
  //     while this waited for the lock needs nothing (the cancel closed it).
  //   * Refuses (InvalidInput), changing nothing, a run whose workspace is not
  //     a folder any more.
  //   * Kills the processes still carrying the run's ORCH_RUN_ID (whatever its
  //     status: also what a step started outside its process group, `setsid
  //     cmd &`) and those in a recorded process group of an attempt left
  //     running (engine/orphans.h).
  //   * In one transaction: closes each attempt left `running` as
  //     `interrupted` (not counted against the attempts cap), charged what its
  //     usage file reported, its `writes:` put back from its snapshot (or
  //     found put back: mark_snapshot_put_back); charges its step; fails a step
  //     whose writes cannot be put back (a resume by this Engine applies its
  //     on_failure first; any later resume gives it another chance); moves a
  //     `running` run's spent totals on to the dead driver's last sign of life.
  //     The run's status is left as it is: a resume sets it.
  //   * Then removes the snapshots put back and the run's spawn journal.
  // Idempotent: a second call, or a call on a run no driver died in, finds
  // nothing to do and writes nothing that changes the ledger.
  Expected<Recovery> recover(const std::string& run_id);

  // The run id of the run being driven (set as soon as it exists).
  const std::string& run_id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orch
