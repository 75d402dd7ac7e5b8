// How an attempt ends, for the scheduler (scheduler.h): its outcome checked
// against the step's postconditions (shell_zero ones started on the loop),
// recorded in its append-only row, charged to the budgets, and the step then
// retried (with the reason and a back-off for a transient failure), done, or
// failed — with on_failure applied and the steps after it skipped.
#include <fmt/format.h>

#include <algorithm>

#include "engine/scheduler.h"
#include "engine/scheduler_internal.h"
#include "engine/snapshot.h"
#include "orch/postcondition.h"
#include "orch/report.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace fs = std::filesystem;
using detail::kTailBytes;
using detail::tail_of;
using std::chrono::milliseconds;

void Scheduler::on_attempt_done(int i, AttemptOutcome outcome) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  s.flight().running.reset();
  if (auto why = impossible_spend(outcome.tokens_in, outcome.tokens_out, outcome.cost_usd)) {
    // Not charged (there is no true figure to charge), and never a success.
    outcome.tokens_in = outcome.tokens_out = 0;
    outcome.cache_read_tokens = outcome.cache_write_tokens = 0;
    outcome.cost_usd = 0;
    if (outcome.ending == AttemptEnding::Exited) {
      outcome.ending = AttemptEnding::Error;
      outcome.message = *why;
    }
  }
  // An attempt whose spend could not be read is charged what was reserved for
  // it, never nothing (the reservation is the executor's estimate: a floor).
  if (outcome.spend_unknown && outcome.tokens_in == 0 && outcome.tokens_out == 0 && outcome.cost_usd == 0) {
    const Spend& held = s.flight().reservation;
    outcome.tokens_in = held.tokens;
    outcome.cost_usd = held.cost_usd;
    outcome.message +=
        fmt::format("{}its spend could not be read from its output: charged the {} tokens{} reserved for it",
                    outcome.message.empty() ? "" : "; ", held.tokens,
                    held.cost_usd > 0 ? " and " + dollars(held.cost_usd) : std::string());
  }
  // The cache counts are a part of tokens_in: a breakdown that does not fit in
  // it (a provider's slip) is not kept, so that no row says more than it spent.
  if (outcome.cache_read_tokens < 0 || outcome.cache_write_tokens < 0 ||
      outcome.cache_read_tokens > outcome.tokens_in - std::max<std::int64_t>(outcome.cache_write_tokens, 0))
    outcome.cache_read_tokens = outcome.cache_write_tokens = 0;
  s.flight().outcome = std::move(outcome);
  s.flight().outcome_at = std::chrono::steady_clock::now();
  if (!s.flight().cancel_reason.empty()) {
    finish_attempt(i, stopped_status(s.flight()), s.flight().cancel_reason);
    return;
  }
  // Lost by its executor (the worker that ran it stopped heartbeating): not the
  // step's failure. Closed interrupted (not counted) and started again at once
  // as a new attempt, told why — up to kMaxLostInARow times in a row.
  if (s.flight().outcome->ending == AttemptEnding::Interrupted) {
    // What it spent went with its worker: charged what was reserved for it,
    // never nothing (an llm call may have been paid for before the worker died).
    AttemptOutcome& lost = *s.flight().outcome;
    const Spend& held = s.flight().reservation;
    std::string reason = lost.message;
    if (lost.tokens_in == 0 && lost.tokens_out == 0 && lost.cost_usd == 0 &&
        (held.tokens > 0 || held.cost_usd > 0)) {
      lost.tokens_in = held.tokens;
      lost.cost_usd = held.cost_usd;
      lost.spend_unknown = true;
      reason += fmt::format("; its spend went with it: charged the {} tokens{} reserved for it", held.tokens,
                            held.cost_usd > 0 ? " and " + dollars(held.cost_usd) : std::string());
    }
    finish_attempt(i, AttemptStatus::Interrupted, reason);
    return;
  }
  // A process that did not run to completion never satisfies a step, whatever
  // its postconditions say.
  if (auto ended = status_of_ending(*s.flight().outcome, s.flight().timeout_is_budget)) {
    finish_attempt(i, ended->status, ended->reason);
    return;
  }
  run_checks(i);
}

void Scheduler::run_checks(int i) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  Flight& f = s.flight();
  CheckSite site;
  site.run_id = run_.id;
  site.step_id = s.step->id;
  site.attempt = f.attempt.number;
  site.workspace = run_.workspace;
  site.plan_dir = plan_dir();
  site.files = attempt_file(s, f.attempt.number, "").string();
  site.kill_grace = plan_.defaults.kill_grace;
  site.secrets = secrets_;
  CheckProgress next =
      checks_.run(CheckRunner::checks_of(*s.step, *s.executor), f, site, [this, i](AttemptOutcome o) {
        Completion c;
        c.kind = Completion::Kind::CheckDone;
        c.step = i;
        c.outcome = std::move(o);
        completions_.push_back(std::move(c));
      });
  switch (next.kind) {
    case CheckProgress::Kind::Started:
      f.check_running = std::move(next.process);
      // Recorded like the attempt's own group, so that a resume after kill -9
      // kills a check left running even if it cleared its environment.
      if (int group = f.check_running->process_group(); group > 0) note_spawned(i, group, true);
      return;  // continues when CheckDone arrives
    case CheckProgress::Kind::Failed:
      finish_attempt(i, AttemptStatus::Failed, next.reason);
      return;
    case CheckProgress::Kind::AllHeld:
      finish_attempt(i, AttemptStatus::Succeeded, "");
      return;
  }
}

void Scheduler::on_check_done(int i, const AttemptOutcome& outcome) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  Flight& f = s.flight();
  f.check_running.reset();
  if (!f.cancel_reason.empty()) {
    finish_attempt(i, stopped_status(f), f.cancel_reason);
    return;
  }
  const std::vector<Postcondition> checks = CheckRunner::checks_of(*s.step, *s.executor);
  const CheckResult r = CheckRunner::shell_check_result(checks[f.next_check], outcome);
  f.checks.push_back(r);
  ++f.next_check;
  if (!r.held) {
    finish_attempt(i, AttemptStatus::Failed, r.reason);
  } else {
    run_checks(i);
  }
}

void Scheduler::finish_attempt(int i, AttemptStatus status, const std::string& raw_reason) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  // Everything below is stored or shown: no secret gets past this point.
  const std::string reason = secrets_->mask(raw_reason);
  for (auto& c : s.flight().checks) c.reason = secrets_->mask(c.reason);
  AttemptRecord& a = s.flight().attempt;
  const AttemptOutcome empty;
  const AttemptOutcome& o = s.flight().outcome ? *s.flight().outcome : empty;
  a.status = status;
  a.counted = status != AttemptStatus::Interrupted;
  a.ending = o.ending;
  // Stopped by orch for a signal it got, not by a cancel: said as a resume after
  // kill -9 says it.
  if (status == AttemptStatus::Interrupted && o.ending == AttemptEnding::Cancelled)
    a.ending = AttemptEnding::Interrupted;
  // Stopped when the plan's wall budget ran out: at its cap, as a timeout.
  if (status == AttemptStatus::TimedOut && o.ending == AttemptEnding::Cancelled)
    a.ending = AttemptEnding::TimedOut;
  a.exit_code = o.exit_code;
  a.signal = o.signal;
  if (!o.host.empty()) a.host = o.host;
  a.reason = reason;
  a.checks_json = checks_to_json(s.flight().checks);
  a.stdout_bytes = o.stdout_bytes;
  a.stderr_bytes = o.stderr_bytes;
  a.stdout_truncated = o.stdout_truncated;
  a.stderr_truncated = o.stderr_truncated;
  if (o.stdout_text) {
    a.stdout_text = *o.stdout_text;
    a.stdout_path.clear();
  }
  if (o.stderr_text) {
    a.stderr_text = *o.stderr_text;
    a.stderr_path.clear();
  }
  a.output_tail = secrets_->mask(tail_of(o.output_tail, kTailBytes));
  a.cache_read_tokens = o.cache_read_tokens;
  a.cache_write_tokens = o.cache_write_tokens;
  a.model = o.model;
  a.tokens_in = o.tokens_in;
  a.tokens_out = o.tokens_out;
  a.cost_usd = o.cost_usd;
  a.finished_at = now_ms();
  // The executor's time, and then its checks' (a shell_zero may take minutes).
  a.duration_ms = o.duration.count();
  if (s.flight().outcome_at != std::chrono::steady_clock::time_point{})
    a.duration_ms +=
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - s.flight().outcome_at)
            .count();
  writer_.attempt_finished(a, s.flight().row_unwritten);
  s.flight().row_unwritten = false;
  nlohmann::json finished = {
      {"status", attempt_status_name(status)}, {"reason", reason}, {"exit_code", a.exit_code}};
  if (o.transient) finished["transient"] = true;          // a provider's 429/5xx, a dropped connection
  if (o.spend_unknown) finished["spend_unknown"] = true;  // charged its reservation
  writer_.event("attempt_finished", s.step->id, a.number, finished);

  Spend actual{o.tokens_in + o.tokens_out, o.cost_usd, a.counted ? 1 : 0};
  budget_->settle(s.flight().reservation, actual);
  s.flight().reservation = Spend{};
  s.rec.tokens_in += o.tokens_in;
  s.rec.tokens_out += o.tokens_out;
  s.rec.cost_usd += o.cost_usd;
  s.rec.wall_ms += a.duration_ms;
  if (a.counted) {
    ++s.rec.attempts_counted;
    ++s.budget_attempts;
  }
  s.in_flight = false;
  in_flight_.remove(i, std::exchange(s.flight().open_files, 0));

  // The snapshot goes once the attempt's end is committed (a kill -9 before then
  // leaves a running attempt whose resume restores from it again); one that could
  // not be restored stays, named in the reason, for a human to recover from.
  std::string unrestored;
  if (status != AttemptStatus::Succeeded && !a.snapshot_dir.empty()) {
    // What the attempt started outside its group (killed with it) must not go on
    // changing its files while they are put back.
    kill_attempt_leftovers(run_.id, s.step->id, a.number);
    if (auto r = restore_snapshot(a.snapshot_dir); !r) {
      unrestored = r.error().message;
      writer_.event("restore_failed", s.step->id, a.number, {{"error", unrestored}});
    } else {
      writer_.event("writes_restored", s.step->id, a.number);
      writer_.snapshot_spent(a.snapshot_dir);
    }
  } else if (!a.snapshot_dir.empty()) {
    writer_.snapshot_spent(a.snapshot_dir);
  }
  // An executor that spent more than it reserved can push the plan over its budget.
  if (auto why = budget_->exhausted(wall_ms_now()); why && status == AttemptStatus::Succeeded) {
    // The step's work is done and kept; what remains cannot be paid for.
    bool remaining = false;
    for (const auto& other : steps_)
      if (other.in_plan && &other != &s && other.rec.status == StepStatus::Pending) remaining = true;
    if (remaining) {
      // Already stopping for the budget: the reason says what is spent now, not
      // what the first attempt over it had left spent.
      if (stop_ == StopKind::Budget && stop_reason_.starts_with("budget exhausted: "))
        stop_reason_ = "budget exhausted: " + *why;
      request_stop(StopKind::Budget, "budget exhausted: " + *why);
    }
  }
  const Step& step = *s.step;
  SettleFacts facts;
  facts.status = status;
  facts.reason = reason;
  facts.setup_failed = o.ending == AttemptEnding::SetupFailed;
  facts.transient = o.transient;
  facts.retry_after = o.retry_after;
  facts.unrestored = unrestored;
  facts.snapshot_dir = a.snapshot_dir;
  facts.step_budget = step.budget;
  facts.spent = s.spent();
  facts.attempts_counted = s.rec.attempts_counted;
  facts.max_attempts = step.attempts.value_or(plan_.defaults.attempts);
  facts.last_failure_key = s.last_failure_key;
  if (stop_ != StopKind::None) facts.run_stopping = stop_reason_;
  facts.retry_delay = step.retry_delay.value_or(plan_.defaults.retry_delay);
  const SettleDecision decision = settle_attempt(facts, retry_);
  if (status != AttemptStatus::Interrupted) s.lost_in_a_row = 0;
  if (decision.remember_failure) {
    // Read by the next attempt from its environment or arguments, which end at a NUL.
    s.previous_failure = nul_escaped(reason);
    if (!a.output_tail.empty()) s.previous_failure += "\n--- last output ---\n" + nul_escaped(a.output_tail);
    s.last_failure_key = reason;
  }
  switch (decision.kind) {
    case SettleDecision::Kind::Done:
      mark_done(i);
      return;
    case SettleDecision::Kind::Requeue:
      s.rec.status = StepStatus::Pending;
      if (stop_ == StopKind::None && !reason.empty() && status == AttemptStatus::Interrupted) {
        // Lost by its executor while the run goes on (a worker's lease expired).
        if (++s.lost_in_a_row >= kMaxLostInARow) {
          mark_failed(i, fmt::format("its attempt was lost {} times in a row: {}", s.lost_in_a_row, reason));
          return;
        }
        s.previous_failure = nul_escaped(reason);
        s.rec.reason = fmt::format("attempt {} lost, attempt {} now: {}", a.number, a.number + 1, reason);
        ready_.insert(i);
      }
      save_step(s);
      return;
    case SettleDecision::Kind::Cancel:
      s.rec.status = StepStatus::Cancelled;
      s.rec.reason = decision.reason;
      s.rec.finished_at = now_ms();
      save_step(s);
      writer_.event("step_cancelled", s.step->id, a.number, {{"reason", decision.reason}});
      report(ProgressEvent::Kind::StepFinished, i, decision.reason);
      return;
    case SettleDecision::Kind::Fail:
      mark_failed(i, decision.reason);
      return;
    case SettleDecision::Kind::Retry:
      schedule_retry(i, decision.delay, reason);
      return;
  }
}

void Scheduler::schedule_retry(int i, milliseconds delay, const std::string& failure) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  s.rec.status = StepStatus::Pending;
  // What `orch status` shows meanwhile (the next attempt clears it).
  s.rec.reason = fmt::format("attempt {} failed, attempt {} after {}: {}", s.flight().attempt.number,
                             s.flight().attempt.number + 1, human_duration(delay.count()), failure);
  save_step(s);
  writer_.event("retry_scheduled", s.step->id, s.flight().attempt.number + 1, {{"delay_ms", delay.count()}});
  ++retries_waiting_;
  s.retry_timer = loop_.add_timer(delay, [this, i] {
    Completion c;
    c.kind = Completion::Kind::RetryDue;
    c.step = i;
    completions_.push_back(std::move(c));
  });
}

void Scheduler::mark_done(int i) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  s.rec.status = StepStatus::Done;
  // Masked like everything stored; dependents see what the ledger holds, so a
  // resumed run renders them exactly as an uninterrupted one.
  s.rec.result = s.flight().outcome ? secrets_->mask(s.flight().outcome->result) : "";
  s.rec.fingerprint = s.flight().attempt.fingerprint;
  // Reserved at its declared maximum, a step can still have spent more than its
  // own budget in the attempt that succeeded: its work is kept, and the overrun
  // is said, in the step's reason and in an event.
  s.rec.reason = done_over_budget(s.step->budget, s.spent());
  s.rec.finished_at = now_ms();
  save_step(s);
  if (!s.rec.reason.empty())
    writer_.event("step_over_budget", s.step->id, s.flight().attempt.number, {{"reason", s.rec.reason}});
  writer_.event("step_done", s.step->id, s.flight().attempt.number);
  ready_.dependency_done(steps_, i);
  report(ProgressEvent::Kind::StepFinished, i);
}

void Scheduler::mark_failed(int i, const std::string& reason) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  s.rec.status = StepStatus::Failed;
  s.rec.reason = reason;
  s.rec.finished_at = now_ms();
  save_step(s);
  writer_.event("step_failed", s.step->id, s.rec.last_attempt, {{"reason", reason}});
  report(ProgressEvent::Kind::StepFinished, i, reason);
  apply_on_failure(i);
}

void Scheduler::apply_on_failure(int i) {
  const std::string& id = steps_[static_cast<std::size_t>(i)].step->id;
  if (after_failure(run_.keep_going, plan_.on_failure) == AfterFailure::SkipDependents) {
    skip_descendants(i, fmt::format("dependency '{}' failed", id));
  } else {
    request_stop(StopKind::Abort, fmt::format("step '{}' failed", id));
  }
}

void Scheduler::skip_descendants(int i, const std::string& reason) {
  std::vector<int> stack(steps_[static_cast<std::size_t>(i)].children);
  while (!stack.empty()) {
    int c = stack.back();
    stack.pop_back();
    StepState& child = steps_[static_cast<std::size_t>(c)];
    if (child.rec.status != StepStatus::Pending || child.in_flight) continue;
    child.rec.status = StepStatus::Skipped;
    child.rec.reason = reason;
    save_step(child);
    writer_.event("step_skipped", child.step->id, 0, {{"reason", reason}});
    ready_.erase(c);
    if (child.retry_timer) {
      loop_.cancel_timer(child.retry_timer);
      child.retry_timer = 0;
      --retries_waiting_;
    }
    report(ProgressEvent::Kind::StepFinished, c, reason);
    stack.insert(stack.end(), child.children.begin(), child.children.end());
  }
}

}  // namespace orch
