// Recovery: what a driver that died left of a run, settled before anything else
// is done with it (Engine::recover, and the first phases of every resume).
//
//   take_run            the run's lock (waiting out an `orch cancel` that holds
//                       it for a moment), and its row read again under it;
//   workspace_is_a_folder  a workspace that is gone is said before anything is done;
//   settle_dead_driver  its processes killed; its attempts left running closed
//                       as interrupted, their `writes:` put back from their
//                       snapshots and their steps charged what they spent (a
//                       step whose writes cannot be put back is failed); the run
//                       row's totals moved on to its last sign of life; committed
//                       on its own, then the spent snapshots and the spawn
//                       journal removed.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <thread>

#include "engine/orphans.h"
#include "engine/scheduler.h"
#include "orch/report.h"
#include "util/json_text.h"

namespace orch {

namespace fs = std::filesystem;

namespace {

// Whether the process recorded as driving `run` is alive (a run that is not
// `running` has none).
bool recorded_driver_alive(const RunRecord& run) {
  if (run.status != RunStatus::Running || run.owner_pid <= 0) return false;
  return ::kill(run.owner_pid, 0) == 0 || errno == EPERM;
}

}  // namespace

Expected<Scheduler::RunTaken> Scheduler::take_run(const std::string& run_id) {
  auto found = ORCH_TRY(store_.find_run(run_id));
  if (!found) return std::unexpected(store_.no_run(run_id));
  RunTaken taken;
  taken.status_before_lock = found->status;
  // On the clock `orch cancel` stamps its requests with (the system's, whatever
  // clock the engine runs on): a request stamped from now on came after the lock.
  taken.locking_ms = Clock::system().wall_ms();
  auto lock = store_.lock(run_id);
  if (!lock && lock.error().code == ErrorCode::Busy && !recorded_driver_alive(*found)) {
    // No live process drives the run, yet the lock is held: by `orch cancel`,
    // for the moment it takes to record the cancel of an idle run (or by
    // another resume just starting). A cancel is named as one, not as a driver.
    for (int i = 0; i < 40 && store_.locked(run_id); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    auto now = store_.find_run(run_id);
    if (now && *now && (*now)->status == RunStatus::Cancelled &&
        taken.status_before_lock != RunStatus::Cancelled) {
      taken.cancelled_meanwhile = true;
      return taken;  // without the lock (taken.locked false): the caller says so
    }
    // Let go meanwhile without a cancel (a resume that failed to start): try again.
    if (!store_.locked(run_id)) lock = store_.lock(run_id);
  }
  if (!lock) return std::unexpected(lock.error());
  lock_ = std::move(*lock);
  taken.locked = true;
  // Read again under the lock: a process that drove the run until a moment ago
  // wrote its final row before it let the lock go, and the row read before
  // taking the lock may predate that.
  found = ORCH_TRY(store_.find_run(run_id));
  if (!found) return std::unexpected(store_.no_run(run_id));
  run_ = *found;
  writer_.set_run(run_.id);
  // `orch cancel` took the lock first and cancelled it.
  taken.cancelled_meanwhile =
      run_.status == RunStatus::Cancelled && taken.status_before_lock != RunStatus::Cancelled;
  return taken;
}

Expected<void> Scheduler::workspace_is_a_folder() const {
  // As `orch run` does for a new run: a workspace that is gone is said before
  // anything is recorded, not found out by a step's attempt (or a restore).
  if (std::error_code ec; !fs::is_directory(run_.workspace, ec))
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("the workspace of run '{}', {}, is not a folder any more: restore it, then resume",
                    run_.id, run_.workspace));
  return {};
}

Expected<void> Scheduler::settle_dead_driver() {
  // What an earlier call found is kept for the resume that follows (its
  // run_resumed event, the steps whose on_failure it applies first).
  if (recovered_run_ != run_.id) {
    recovered_ = Recovery{};
    recovered_run_ = run_.id;
  }
  const int killed = ORCH_TRY(kill_orphans(&store_, run_.id));
  const bool driver_died = run_.status == RunStatus::Running;
  ClosedAttempts interrupted;
  std::vector<std::string> failed_now;
  ORCH_TRY(store_.begin());
  auto closed = [&]() -> Expected<void> {
    const std::int64_t now = now_ms();
    // A driver that died left the row lagging what it did (rewritten at most every
    // 250 ms, or every second while idle): its wall time is moved on to its last
    // sign of life, as `orch status` and `orch cancel` take it, so that the budget
    // goes on from there and the attempts it watched get their durations.
    ORCH_TRY(refresh_running_totals(store_, run_, false, now));
    interrupted = ORCH_TRY(close_interrupted_attempts(store_, run_.id, now, run_.updated_at));
    for (const AttemptRecord& a : interrupted.attempts) {
      auto row = ORCH_TRY(store_.find_step(run_.id, a.step_id));
      if (!row) continue;
      charge_step(*row, {a});
      // Not to be run again on what its attempt left: failed, as a driver that
      // finds it cannot restore a step's writes fails it (a resume after this one
      // is asked to run it again).
      if (auto it = interrupted.unrestored.find(a.step_id);
          it != interrupted.unrestored.end() && row->status != StepStatus::Done) {
        row->status = StepStatus::Failed;
        row->reason = fmt::format("{} (not retried: {})", a.reason, it->second);
        row->finished_at = now;
        ORCH_TRY(store_.append_event(EventRecord{0, run_.id, now, "step_failed", a.step_id, a.number,
                                                 json_text(nlohmann::json{{"reason", row->reason}})}));
        failed_now.push_back(a.step_id);
      }
      ORCH_TRY(store_.upsert_step(*row));
    }
    // The attempts just closed are stamped finished now: the row is up to date as
    // of now, so that a second recovery does not take the time since the driver
    // died (to their finish) for time the run was driven.
    if (!interrupted.attempts.empty()) run_.updated_at = std::max(run_.updated_at, now);
    if (driver_died) ORCH_TRY(store_.update_run(run_));
    return store_.commit();
  }();
  if (!closed) {
    (void)store_.rollback();
    return std::unexpected(closed.error());
  }
  remove_spent_snapshots(interrupted);
  discard_spawn_journal(store_.folder(), run_.id);
  recovered_.processes_killed += killed;
  recovered_.attempts_closed += static_cast<int>(interrupted.attempts.size());
  recovered_.steps_failed.insert(recovered_.steps_failed.end(), failed_now.begin(), failed_now.end());
  return {};
}

Expected<Recovery> Scheduler::recover(const std::string& run_id) {
  const RunTaken taken = ORCH_TRY(take_run(run_id));
  // An `orch cancel` that held the lock cancelled the run meanwhile: it closed
  // what the dead driver left itself.
  if (!taken.locked) return Recovery{};
  auto done = [&]() -> Expected<Recovery> {
    ORCH_TRY(workspace_is_a_folder());
    const Recovery before = recovered_run_ == run_.id ? recovered_ : Recovery{};
    ORCH_TRY(settle_dead_driver());
    // What this call did (recovered_ keeps the sum for a resume that follows).
    Recovery now;
    now.processes_killed = recovered_.processes_killed - before.processes_killed;
    now.attempts_closed = recovered_.attempts_closed - before.attempts_closed;
    now.steps_failed.assign(
        recovered_.steps_failed.begin() + static_cast<std::ptrdiff_t>(before.steps_failed.size()),
        recovered_.steps_failed.end());
    return now;
  }();
  lock_.reset();
  return done;
}

}  // namespace orch
