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
#include "util/atomic_file.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace fs = std::filesystem;
using scheduler_detail::kMaxRetryAfter;
using scheduler_detail::kResultEnvMax;
using scheduler_detail::kTailBytes;
using scheduler_detail::tail_of;
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
  const AttemptOutcome& o = *s.flight().outcome;
  if (o.ending != AttemptEnding::Exited) {
    // A process that did not run to completion never satisfies a step, whatever
    // its postconditions say.
    std::string why = o.message;
    if (o.ending == AttemptEnding::TimedOut && !s.flight().timeout_is_budget.empty())
      why = s.flight().timeout_is_budget;  // its time was what was left of a wall budget
    if (why.empty())
      why = o.ending == AttemptEnding::Signaled ? fmt::format("killed by signal {}", o.signal)
                                                : attempt_ending_name(o.ending);
    // A crash, or an exit its executor then found fault with (a tool that broke
    // its contract): what the process printed last is the cause, never masked.
    if (o.ending == AttemptEnding::Signaled || (o.ending == AttemptEnding::Error && o.exit_code > 0))
      why += failure_output_suffix(o.output_tail);
    AttemptStatus st = o.ending == AttemptEnding::TimedOut  ? AttemptStatus::TimedOut
                       : o.ending == AttemptEnding::Stalled ? AttemptStatus::Stalled
                                                            : AttemptStatus::Failed;
    finish_attempt(i, st, why);
    return;
  }
  run_checks(i);
}

void Scheduler::run_checks(int i) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  // The step's checks (or the executor's defaults), then those the executor always
  // adds. Appended: a shell_zero check's index stays its index in step->post.
  std::vector<Postcondition> post = s.step->post.empty() ? s.executor->default_post() : s.step->post;
  for (auto& p : s.executor->required_post(*s.step)) post.push_back(std::move(p));
  CheckContext ctx;
  ctx.workspace = run_.workspace;
  ctx.plan_dir = plan_dir();
  ctx.outcome = &*s.flight().outcome;
  while (s.flight().next_check < post.size()) {
    const Postcondition& p = post[s.flight().next_check];
    if (p.kind == PostKind::ShellZero) {
      Executor* shell = executors_->find("shell");
      AttemptSpec spec;
      spec.run_id = run_.id;
      spec.step_id = s.step->id;
      spec.attempt = s.flight().attempt.number;
      spec.executor = "shell";
      spec.argv = {"/bin/sh", "-c", p.cmd};
      spec.workspace = run_.workspace;
      std::string suffix = fmt::format(".check{}", s.flight().next_check);
      spec.stdout_path = attempt_file(s, s.flight().attempt.number, suffix + ".stdout");
      spec.stderr_path = attempt_file(s, s.flight().attempt.number, suffix + ".stderr");
      spec.usage_path.clear();  // a check reports no usage
      // The result reaches the check in a file, and also in ORCH_RESULT when an
      // environment variable can hold it (Linux caps one at 128 KiB; no NUL).
      const std::string& result = s.flight().outcome->result;
      const fs::path result_file = attempt_file(s, s.flight().attempt.number, suffix + ".result");
      if (auto written = write_file_atomically(result_file, result, Durability::RenameOnly); !written) {
        CheckResult r{PostKind::ShellZero, false,
                      fmt::format("shell_zero '{}': {}", p.cmd, written.error().message)};
        s.flight().checks.push_back(r);
        finish_attempt(i, AttemptStatus::Failed, r.reason);
        return;
      }
      spec.env = {
          {"ORCH_RUN_ID", run_.id}, {"ORCH_STEP_ID", s.step->id}, {"ORCH_RESULT_FILE", result_file.string()}};
      // Always set (empty when it cannot hold the result), so that an ORCH_RESULT
      // in orch's own environment never reaches the check as if it were the result.
      const bool fits = result.size() <= kResultEnvMax && result.find('\0') == std::string::npos;
      spec.env.emplace_back("ORCH_RESULT", fits ? result : std::string());
      spec.secrets = secrets_;
      spec.timeout = p.timeout.value_or(kShellZeroTimeout);
      spec.kill_grace = plan_.defaults.kill_grace;
      spec.max_output = 1024 * 1024;
      auto started = shell ? shell->start(spec, loop_,
                                          [this, i](AttemptOutcome o) {
                                            Completion c;
                                            c.kind = Completion::Kind::CheckDone;
                                            c.step = i;
                                            c.outcome = std::move(o);
                                            completions_.push_back(std::move(c));
                                          })
                           : fail(ErrorCode::Internal, "no shell executor registered");
      if (!started) {
        CheckResult r{PostKind::ShellZero, false,
                      fmt::format("shell_zero '{}': {}", p.cmd, started.error().message)};
        s.flight().checks.push_back(r);
        finish_attempt(i, AttemptStatus::Failed, r.reason);
        return;
      }
      s.flight().check_running = std::move(*started);
      // Recorded like the attempt's own group, so that a resume after kill -9
      // kills a check left running even if it cleared its environment.
      if (int group = s.flight().check_running->process_group(); group > 0) note_spawned(i, group, true);
      return;  // continues when CheckDone arrives
    }
    CheckResult r = evaluate_post(p, ctx);
    s.flight().checks.push_back(r);
    ++s.flight().next_check;
    if (!r.held) {
      finish_attempt(i, AttemptStatus::Failed, r.reason);
      return;
    }
  }
  finish_attempt(i, AttemptStatus::Succeeded, "");
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
  a.ending = attempt_ending_name(o.ending);
  // Stopped by orch for a signal it got, not by a cancel: said as a resume after
  // kill -9 says it.
  if (status == AttemptStatus::Interrupted && o.ending == AttemptEnding::Cancelled) a.ending = "interrupted";
  // Stopped when the plan's wall budget ran out: at its cap, as a timeout.
  if (status == AttemptStatus::TimedOut && o.ending == AttemptEnding::Cancelled) a.ending = "timed_out";
  a.exit_code = o.exit_code;
  a.signal = o.signal;
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
  if (auto t = tx(); !t && !store_error_) store_error_ = t.error();
  if (!store_error_) {
    // One write for an attempt that starts and ends in one transaction.
    auto r = s.flight().row_unwritten ? store_.insert_attempt(a) : store_.finish_attempt(a);
    if (!r) store_error_ = r.error();
  }
  s.flight().row_unwritten = false;
  nlohmann::json finished = {
      {"status", attempt_status_name(status)}, {"reason", reason}, {"exit_code", a.exit_code}};
  if (o.transient) finished["transient"] = true;          // a provider's 429/5xx, a dropped connection
  if (o.spend_unknown) finished["spend_unknown"] = true;  // charged its reservation
  event("attempt_finished", s.step->id, a.number, finished);

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
  --in_flight_;
  open_files_free_ += std::exchange(s.flight().open_files, 0);
  std::erase(writers_in_flight_, i);

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
      event("restore_failed", s.step->id, a.number, {{"error", unrestored}});
    } else {
      event("writes_restored", s.step->id, a.number);
      spent_snapshots_.push_back(a.snapshot_dir);
    }
  } else if (!a.snapshot_dir.empty()) {
    spent_snapshots_.push_back(a.snapshot_dir);
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
  // Interrupted with its writes not put back: a resume must not run it again on
  // the leftovers either (a failed step is run again only when asked to).
  if (status == AttemptStatus::Interrupted && !unrestored.empty()) {
    mark_failed(
        i, fmt::format("{} (not retried: its writes could not be put back: {}; the snapshot is kept in {})",
                       reason, unrestored, a.snapshot_dir));
    return;
  }

  switch (status) {
    case AttemptStatus::Succeeded:
      mark_done(i);
      return;
    case AttemptStatus::Interrupted:
      s.rec.status = StepStatus::Pending;
      save_step(s);
      return;
    case AttemptStatus::Cancelled:
      s.rec.status = StepStatus::Cancelled;
      s.rec.reason = reason;
      s.rec.finished_at = now_ms();
      save_step(s);
      event("step_cancelled", s.step->id, a.number, {{"reason", reason}});
      report(ProgressEvent::Kind::StepFinished, i, reason);
      return;
    default:
      break;
  }

  // A workspace that could not be put back is not one to try again in: the next
  // attempt would start from the failed one's leftovers.
  if (!unrestored.empty()) {
    mark_failed(
        i, fmt::format("{} (not retried: its writes could not be put back: {}; the snapshot is kept in {})",
                       reason, unrestored, a.snapshot_dir));
    return;
  }

  // Failed or timed out: retry with the reason, or give up.
  // Read by the next attempt from its environment or arguments, which end at a NUL.
  s.previous_failure = nul_escaped(reason);
  if (!a.output_tail.empty()) s.previous_failure += "\n--- last output ---\n" + nul_escaped(a.output_tail);
  const Step& step = *s.step;
  const int max_attempts = step.attempts.value_or(plan_.defaults.attempts);
  std::string key = reason;
  // A transient failure (a provider's 429 or 5xx) may well repeat word for word
  // and still pass later: it is retried with back-off instead.
  bool same_twice = !o.transient && !s.last_failure_key.empty() && key == s.last_failure_key;
  s.last_failure_key = key;
  std::int64_t step_tokens = s.rec.tokens_in + s.rec.tokens_out;
  if (o.ending == AttemptEnding::SetupFailed) {
    // The executor's set-up (a key not set, credentials refused), not the work:
    // every retry would fail the same way until a person fixes it.
    mark_failed(i, reason);
  } else if (step.budget.tokens && step_tokens > 0 && step_tokens >= *step.budget.tokens) {
    mark_failed(i, fmt::format("step budget exhausted: tokens {} spent of {}; last failure: {}", step_tokens,
                               *step.budget.tokens, reason));
  } else if (step.budget.cost_usd && s.rec.cost_usd > 0 && s.rec.cost_usd >= *step.budget.cost_usd) {
    mark_failed(i, fmt::format("step budget exhausted: cost {} spent of {}; last failure: {}",
                               dollars(s.rec.cost_usd), dollars(*step.budget.cost_usd), reason));
  } else if (step.budget.attempts && s.budget_attempts >= *step.budget.attempts) {
    mark_failed(i, fmt::format("step budget exhausted: attempts {} made of {}; last failure: {}",
                               s.budget_attempts, *step.budget.attempts, reason));
  } else if (s.rec.attempts_counted >= max_attempts) {
    mark_failed(i, max_attempts > 1
                       ? fmt::format("failed after {} attempts: {}", s.rec.attempts_counted, reason)
                       : reason);
  } else if (same_twice) {
    mark_failed(i, "same failure twice: " + reason);
  } else if (stop_ != StopKind::None) {
    mark_failed(i, fmt::format("{} (not retried: {})", reason, stop_reason_));
  } else if (o.transient && o.retry_after && *o.retry_after > kMaxRetryAfter) {
    // A provider that asks for hours (a daily quota) is not waited for in
    // silence: the step fails, saying so, and a resume tries again when it is time.
    mark_failed(
        i,
        fmt::format("{} (the provider asked to retry after {}, longer than orch waits ({}): not retried)",
                    reason, human_duration(o.retry_after->count()), human_duration(kMaxRetryAfter.count())));
  } else {
    milliseconds delay = step.retry_delay.value_or(plan_.defaults.retry_delay);
    if (o.transient) delay = transient_backoff(delay, s.rec.attempts_counted, o.retry_after);
    schedule_retry(i, delay, reason);
  }
}

milliseconds Scheduler::transient_backoff(milliseconds base, int failures,
                                          std::optional<milliseconds> retry_after) {
  // base (at least 1 s), doubled per failure so far, at most 5 minutes, plus up
  // to 25% jitter so that a fan-out rate-limited at once does not come back at once.
  const milliseconds floor = std::max(base, milliseconds(1000));
  const int doublings = std::clamp(failures - 1, 0, 16);
  milliseconds delay = std::min(floor * (std::int64_t{1} << doublings), milliseconds(300'000));
  std::uniform_int_distribution<std::int64_t> jitter(0, delay.count() / 4);
  delay += milliseconds(jitter(random_));
  if (retry_after) delay = std::max(delay, *retry_after);
  return delay;
}

void Scheduler::schedule_retry(int i, milliseconds delay, const std::string& failure) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  s.rec.status = StepStatus::Pending;
  // What `orch status` shows meanwhile (the next attempt clears it).
  s.rec.reason = fmt::format("attempt {} failed, attempt {} after {}: {}", s.flight().attempt.number,
                             s.flight().attempt.number + 1, human_duration(delay.count()), failure);
  save_step(s);
  event("retry_scheduled", s.step->id, s.flight().attempt.number + 1, {{"delay_ms", delay.count()}});
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
  s.rec.reason.clear();
  // Reserved at its declared maximum, a step can still have spent more than its
  // own budget in the attempt that succeeded: its work is kept, and the overrun
  // is said, in the step's reason and in an event.
  const BudgetLimits& sb = s.step->budget;
  const std::int64_t step_tokens = s.rec.tokens_in + s.rec.tokens_out;
  if (sb.tokens && step_tokens > *sb.tokens)
    s.rec.reason = fmt::format("done over its budget: tokens {} spent of {}", step_tokens, *sb.tokens);
  else if (sb.cost_usd && s.rec.cost_usd > *sb.cost_usd + 1e-12)
    s.rec.reason = fmt::format("done over its budget: cost {} spent of {}", dollars(s.rec.cost_usd),
                               dollars(*sb.cost_usd));
  s.rec.finished_at = now_ms();
  save_step(s);
  if (!s.rec.reason.empty())
    event("step_over_budget", s.step->id, s.flight().attempt.number, {{"reason", s.rec.reason}});
  event("step_done", s.step->id, s.flight().attempt.number);
  for (int c : s.children) {
    StepState& child = steps_[static_cast<std::size_t>(c)];
    if (--child.deps_left == 0 && child.rec.status == StepStatus::Pending) ready_.insert(c);
  }
  report(ProgressEvent::Kind::StepFinished, i);
}

void Scheduler::mark_failed(int i, const std::string& reason) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  s.rec.status = StepStatus::Failed;
  s.rec.reason = reason;
  s.rec.finished_at = now_ms();
  save_step(s);
  event("step_failed", s.step->id, s.rec.last_attempt, {{"reason", reason}});
  report(ProgressEvent::Kind::StepFinished, i, reason);
  apply_on_failure(i);
}

void Scheduler::apply_on_failure(int i) {
  const std::string& id = steps_[static_cast<std::size_t>(i)].step->id;
  if (run_.keep_going || plan_.on_failure == OnFailure::Continue) {
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
    event("step_skipped", child.step->id, 0, {{"reason", reason}});
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
