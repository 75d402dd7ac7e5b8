// cancel_run (engine.h): stopping a run from another process.
#include <fmt/format.h>
#include <unistd.h>

#include <thread>

#include "engine/budget.h"
#include "engine/orphans.h"
#include "orch/clock.h"
#include "orch/engine.h"
#include "orch/report.h"
#include "util/json_text.h"

namespace orch {

namespace {
std::int64_t now_ms() { return Clock::system().wall_ms(); }

Expected<void> event(Store& store, const std::string& run_id, const std::string& kind, const std::string& step = "",
                     int attempt = 0, const nlohmann::json& data = nlohmann::json::object()) {
  EventRecord e{0, run_id, now_ms(), kind, step, attempt, json_text(data)};
  ORCH_TRY(store.append_event(e));
  return {};
}

bool is_final(RunStatus status) {
  return status != RunStatus::Running && status != RunStatus::Interrupted &&
         status != RunStatus::AwaitingApproval;
}

// Marks a run that no process drives as cancelled, under its lock.
Expected<RunStatus> cancel_idle_run(Store& store, RunRecord run, std::unique_ptr<StoreLock> /*held*/) {
  ORCH_TRY(kill_orphans(&store, run.id));
  ORCH_TRY(store.begin());
  ORCH_TRY(event(store, run.id, "cancel_requested", "", 0, {{"by_pid", getpid()}}));
  // The row a killed driver left lags what it did (it was rewritten at most every
  // 250 ms): its wall time is moved on to the driver's last sign of life, as
  // `orch status` shows it, before closing the attempts stamps them with now.
  ORCH_TRY(refresh_running_totals(store, run, false, now_ms()));
  const ClosedAttempts interrupted =
      ORCH_TRY(close_interrupted_attempts(store, run.id, now_ms(), run.updated_at));
  for (StepRecord s : ORCH_TRY(store.steps(run.id))) {
    if (s.status != StepStatus::Pending && s.status != StepStatus::Running && s.status != StepStatus::AwaitingApproval)
      continue;
    charge_step(s, interrupted.attempts);
    const bool was_running = s.status == StepStatus::Running;
    // One that ran and was to run again (interrupted by a signal, or waiting for
    // a retry) is cancelled too: skipped would say it never started.
    const bool tried = !was_running && s.last_attempt > 0;
    s.status = was_running || tried ? StepStatus::Cancelled : StepStatus::Skipped;
    s.reason = was_running ? "cancelled: its attempt was interrupted (the orch driving it had died)"
               : tried     ? fmt::format("cancelled: run cancelled after attempt {}", s.last_attempt)
                           : "not started: run cancelled";
    if (auto it = interrupted.unrestored.find(s.step_id); it != interrupted.unrestored.end())
      s.reason = fmt::format("cancelled: its attempt was interrupted (the orch driving it had died; {})",
                             it->second);
    ORCH_TRY(store.upsert_step(s));
    ORCH_TRY(event(store, run.id, s.status == StepStatus::Cancelled ? "step_cancelled" : "step_skipped",
                   s.step_id, 0, {{"reason", s.reason}}));
  }
  run.status = RunStatus::Cancelled;
  run.reason = "cancelled by `orch cancel`";
  // What was spent, summed from the attempts as `orch status` and `orch resume`
  // do, with what the attempts just closed reported; past the plan's budget, said
  // as a driver that ends the run says it.
  const AttemptTotals totals = ORCH_TRY(store.attempt_totals(run.id));
  run.spent_tokens = totals.tokens;
  run.spent_cost_usd = totals.cost_usd;
  run.spent_attempts = totals.counted;
  const BudgetGuard spent(budget_limits_from_json(run.budget_json),
                          Spend{totals.tokens, totals.cost_usd, totals.counted}, run.spent_wall_ms);
  if (auto over = spent.overspent()) {
    const std::string why = overspent_reason(*over);
    ORCH_TRY(event(store, run.id, "budget_overspent", "", 0, {{"reason", why}}));
    run.reason += "; " + why;
  }
  run.exit_code = exit_code_for(RunStatus::Cancelled);
  run.finished_at = run.updated_at = now_ms();
  run.owner_pid = 0;
  ORCH_TRY(store.update_run(run));
  ORCH_TRY(event(store, run.id, "run_finished", "", 0, {{"status", "cancelled"}, {"reason", run.reason}}));
  ORCH_TRY(store.commit());
  remove_spent_snapshots(interrupted);
  discard_spawn_journal(store.folder(), run.id);
  return RunStatus::Cancelled;
}
}  // namespace

Expected<RunStatus> cancel_run(Store& store, const std::string& run_id, std::chrono::milliseconds wait) {
  auto found = ORCH_TRY(store.find_run(run_id));
  if (!found) return std::unexpected(store.no_run(run_id));
  RunRecord run = *found;
  if (run.status != RunStatus::Running && run.status != RunStatus::Interrupted &&
      run.status != RunStatus::AwaitingApproval)
    return fail(ErrorCode::InvalidInput, fmt::format("run {} already ended: {}", run_id, run_status_name(run.status)));
  auto lock = store.lock(run_id);
  if (lock) {
    // Read again under the lock: the process that drove the run may have
    // finished it between the read above and the lock, and let the lock go only
    // after writing its final row.
    auto now_run = ORCH_TRY(store.find_run(run_id));
    if (!now_run) return std::unexpected(store.no_run(run_id));
    run = *now_run;
    if (run.status != RunStatus::Running && run.status != RunStatus::Interrupted &&
        run.status != RunStatus::AwaitingApproval)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("run {} already ended: {}", run_id, run_status_name(run.status)));
    return cancel_idle_run(store, run, std::move(*lock));
  }
  if (lock.error().code != ErrorCode::Busy) return std::unexpected(lock.error());

  // A live process drives it: ask, then wait for it to notice.
  ORCH_TRY(store.begin());
  ORCH_TRY(store.request_cancel(run_id));
  ORCH_TRY(event(store, run_id, "cancel_requested", "", 0, {{"by_pid", getpid()}}));
  ORCH_TRY(store.commit());
  auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    auto now_run = ORCH_TRY(store.find_run(run_id));
    // A row that says interrupted (or awaiting approval) while a process holds
    // the lock is one a resume that is starting has yet to rewrite: it will act
    // on the request. If that process lets the lock go without driving the run
    // (its resume failed), the request is carried out here.
    if (now_run && is_final(now_run->status)) return now_run->status;
    if (now_run) {  // no process holds the lock any more, and the run has not ended: do it here
      if (auto idle = store.lock(run_id)) {
        auto again = ORCH_TRY(store.find_run(run_id));
        if (!again) return std::unexpected(store.no_run(run_id));
        if (is_final(again->status)) return again->status;
        return cancel_idle_run(store, *again, std::move(*idle));
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return RunStatus::Running;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace orch
