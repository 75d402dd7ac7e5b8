// The scheduler loop: settle, dispatch, commit, start. See scheduler.h.
#include "engine/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "engine/attempt_render.h"
#include "engine/orphans.h"
#include "orch/report.h"

namespace orch {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {
constexpr milliseconds kCancelPollInterval{250};
// One turn's transaction may settle in-process attempts in up to this many
// rounds, or for this long, before it commits.
constexpr int kMaxBatchRounds = 1000;
constexpr milliseconds kMaxBatchTime{50};
// The run row (spent totals, updated_at) is rewritten at most this often while
// the run goes on; the attempts rows are the authority for what was spent.
constexpr milliseconds kRunRowInterval{250};
constexpr milliseconds kRunRowIdleInterval{1000};

}  // namespace

Scheduler::Scheduler(Store& store, const EngineOptions& options)
    : store_(store),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : Clock::system()),
      executors_(options.executors),
      secrets_(std::make_shared<SecretMasker>(options.secrets ? *options.secrets
                                                              : SecretMasker::from_environment())),
      loop_(clock_),
      writer_(store, clock_, secrets_),
      gate_(options.approve_steps, options.approve_medium, static_cast<bool>(options.ask_approval)),
      checks_(executors_.get(), loop_) {
  // The credentials the executors send (an llm provider's key), whatever their
  // variables are called.
  if (executors_)
    for (const std::string& name : executors_->secret_env())
      if (const char* value = std::getenv(name.c_str())) secrets_->add_value(value);
}

std::int64_t Scheduler::now_ms() const {
  return clock_.wall_ms();
}

std::int64_t Scheduler::wall_ms_now() const {
  return std::chrono::duration_cast<milliseconds>(clock_.now() - started_).count();
}

fs::path Scheduler::plan_dir() const {
  return plan_.source_path.empty() ? fs::path(run_.workspace) : fs::path(plan_.source_path).parent_path();
}

fs::path Scheduler::usage_folder() const {
  return orch::usage_folder(store_.folder(), run_.id);
}

Expected<void> Scheduler::prepare_run_folder() {
  std::error_code ec;
  fs::create_directories(usage_folder(), ec);
  if (ec)
    return fail(ErrorCode::Io, fmt::format("cannot create {}: {}", usage_folder().string(), ec.message()));
  spawn_journal_.set_path(spawn_journal_path(store_.folder(), run_.id));
  return {};
}

void Scheduler::note_spawned(int i, int group, bool check) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  const std::int64_t spawned_ms = Clock::system().wall_ms();
  spawned_.push_back({i, s.flight().attempt.number, group, spawned_ms, check});
  if (auto r = spawn_journal_.record(s.step->id, s.flight().attempt.number, group, spawned_ms);
      !r && !spawn_journal_failed_) {
    // Said once: the attempt_spawned event recorded at the next commit still
    // names the group; only a kill -9 before it may leave the process unfound.
    spawn_journal_failed_ = true;
    writer_.event("spawn_journal_failed", s.step->id, s.flight().attempt.number,
                  nlohmann::json{{"error", r.error().message}});
  }
}

fs::path Scheduler::attempt_file(const StepState& s, int number, const std::string& suffix) const {
  // One folder per run, not per step: a folder made for every step that writes
  // output was a mkdir on the path of every llm call (docs/benchmarks.md).
  return store_.folder() / "runs" / run_.id / (s.step->id + "." + std::to_string(number) + suffix);
}

ResultLookup Scheduler::result_lookup() const {
  ResultLookup r;
  r.by_id = [this](const std::string& id) -> std::optional<std::string> {
    auto it = index_of_.find(id);
    if (it == index_of_.end() || steps_[it->second].rec.status != StepStatus::Done) return std::nullopt;
    return steps_[it->second].rec.result;
  };
  r.by_index = [this](int index) -> std::optional<std::string> {
    if (index < 0 || index >= static_cast<int>(plan_.steps.size())) return std::nullopt;
    const StepState& s = steps_[static_cast<std::size_t>(index)];
    if (s.rec.status != StepStatus::Done) return std::nullopt;
    return s.rec.result;
  };
  // The result is stdout's first max_output bytes: one that long may have been
  // cut there, which explains a JSON lookup that fails.
  r.note = [this](const std::string& id) -> std::string {
    auto it = index_of_.find(id);
    if (it == index_of_.end()) return "";
    const StepState& s = steps_[it->second];
    const std::int64_t cap = s.step->max_output.value_or(plan_.defaults.max_output);
    // (Less its trailing newline, which a result does not keep.)
    if (static_cast<std::int64_t>(s.rec.result.size()) + 1 < cap) return "";
    return fmt::format(
        "step '{}' wrote at least its max_output of {} bytes, so its result may be cut short there", id, cap);
  };
  return r;
}

// ---- ledger writes ---------------------------------------------------------

Expected<void> Scheduler::commit() {
  ORCH_TRY(writer_.commit(steps_));
  // Every group noted so far is in the ledger now (flush_spawned) or has ended.
  if (spawned_.empty()) spawn_journal_.clear();
  return {};
}

void Scheduler::save_step(StepState& s) {
  const int i = static_cast<int>(&s - steps_.data());
  counts_.changed(steps_, i);
  writer_.step_changed(steps_, i);
}

void Scheduler::report(ProgressEvent::Kind kind, int step, const std::string& reason) {
  if (!options_.on_progress) return;
  ProgressEvent e;
  e.kind = kind;
  if (kind == ProgressEvent::Kind::Committed) {
    options_.on_progress(e);
    return;
  }
  if (step >= 0) {
    const StepState& s = steps_[static_cast<std::size_t>(step)];
    e.step_id = s.step->id;
    e.step_status = s.rec.status;
    e.attempt = s.rec.last_attempt;  // 0: never attempted (skipped)
    e.duration_ms = s.rec.wall_ms;
    if (const Flight* f = s.flight_if_any(); f != nullptr && f->attempt.number == s.rec.last_attempt) {
      e.attempt_duration_ms = f->attempt.duration_ms;
      e.attempt_ran_now = true;
      if (kind == ProgressEvent::Kind::StepFinished && s.rec.status == StepStatus::Failed)
        e.output_tail = f->attempt.output_tail;
    }
  }
  e.reason = reason;
  const ProgressEvent& counts = counts_.refresh(steps_);
  e.total = counts.total;
  e.done = counts.done;
  e.running = counts.running;
  e.failed = counts.failed;
  e.skipped = counts.skipped;
  e.tokens = budget_->spent().tokens;
  e.cost_usd = budget_->spent().cost_usd;
  options_.on_progress(e);
}

// ---- the loop --------------------------------------------------------------

void Scheduler::flush_spawned() {
  for (const Spawned& sp : spawned_) {
    StepState& s = steps_[static_cast<std::size_t>(sp.step)];
    if (!s.in_flight || !s.has_flight() || s.flight().attempt.number != sp.attempt) continue;
    // A process that has ended needs no record: its group was killed when it exited.
    if (sp.check ? !s.flight().check_running : !s.flight().running) continue;
    nlohmann::json data = process_group_record(sp.group, sp.spawned_ms);
    if (sp.check) data["process"] = "check";
    writer_.event("attempt_spawned", s.step->id, sp.attempt, data);
  }
  spawned_.clear();
}

void Scheduler::watch_signals() {
  if (!options_.handle_signals || signals_) return;
  signals_ = std::make_unique<SignalWatch>(loop_, [this](int signo) {
    request_stop(StopKind::Interrupt, fmt::format("interrupted by signal {}", signo));
  });
}

Expected<RunOutcome> Scheduler::run_loop() {
  started_ = clock_.now();
  // Polling the cancel flag, ticks and batching are about responsiveness to
  // people and other processes: real time, whatever the run's clock says.
  last_tick_ = std::chrono::steady_clock::now();
  // The first turn looks for a cancel request before it starts anything (one may
  // have come while a resume was setting up).
  last_cancel_poll_ = last_tick_ - kCancelPollInterval;
  watch_signals();
  // A signal caught while the run was being set up (a resume restoring `writes:`)
  // stops it before anything starts.
  if (SignalWatch::pending()) loop_.run_once(milliseconds(0));
  // Failed by the resume (their writes could not be put back): as a step failed
  // in a turn, its dependents are skipped or the run stops starting steps.
  for (const std::string& id : resume_unrestored_) {
    auto it = index_of_.find(id);
    if (it == index_of_.end()) continue;
    report(ProgressEvent::Kind::StepFinished, it->second,
           steps_[static_cast<std::size_t>(it->second)].rec.reason);
    apply_on_failure(it->second);
  }
  if (auto left = budget_->wall_left(0)) {
    wall_timer_ = loop_.add_timer(milliseconds(std::max<std::int64_t>(*left, 0)), [this] {
      wall_timer_ = 0;
      request_stop(StopKind::Budget,
                   "budget exhausted: " + budget_->exhausted(wall_ms_now()).value_or("wall"));
      // What runs is stopped at the cap, as an attempt whose timeout was the
      // budget's rest would have been (docs/plan-format.md, "Budgets").
      cancel_in_flight(plan_wall_spent(), true);
    });
  }
  ready_.rebuild(steps_, index_of_);
  // More attempts at once than the open-files limit can hold would fail
  // ("Too many open files") where they would have succeeded: the run goes as wide
  // as it can (open_files_allow), and says so.
  in_flight_.measure_open_files();
  // Approvals recorded by `orch approve` (for a resume of a paused run).
  ORCH_TRY(gate_.load_approvals(store_, run_.id));
  if (options_.on_started) options_.on_started(run_.id);

  for (;;) {
    // One turn, one transaction. In-process attempts (builtins) start inside the
    // turn and their completions are settled in it too, so a chain of them runs
    // through one commit instead of one per step; bounded so progress stays
    // durable and visible to `orch status` at least every kMaxBatchTime.
    std::vector<int> to_start;
    const auto turn_began = std::chrono::steady_clock::now();
    for (int round = 1;; ++round) {
      ORCH_TRY(settle_completions());
      poll_cancel_request();
      int started_inline = dispatch_ready(to_start);
      if (started_inline == 0 || writer_.failed() || round >= kMaxBatchRounds ||
          std::chrono::steady_clock::now() - turn_began >= kMaxBatchTime)
        break;
      loop_.run_once(milliseconds(0));  // delivers the in-process completions
    }
    // The process groups of the attempts started after the last commit and still
    // running, for a resume after kill -9 to find their processes by (see
    // engine/orphans.h). One that has ended needs none: its group was killed when
    // its process exited, before it was settled.
    flush_spawned();
    // The run row goes with a turn's writes at most every kRunRowInterval, and on
    // its own every kRunRowIdleInterval while nothing else is written (a long
    // step): its spent wall time is what a resume after kill -9 continues from.
    const auto since_run_write = std::chrono::steady_clock::now() - last_run_write_;
    bool write_run_row = !writer_.failed() && ((writer_.open() && since_run_write >= kRunRowInterval) ||
                                               since_run_write >= kRunRowIdleInterval);
    // On its own the row is a heartbeat: if the ledger is busy (another process
    // holds its write lock past the busy timeout), it is written next time; the
    // run goes on. Not if the run's lock was lost to another process (a server
    // that restarted, pg_store_lock.cc): this driver stops.
    if (write_run_row && !writer_.open()) {
      if (auto began = writer_.begin(); !began) {
        if (began.error().code == ErrorCode::Busy) writer_.fail(began.error());
        write_run_row = false;
        last_run_write_ = std::chrono::steady_clock::now();
      }
    }
    if (write_run_row) {
      last_run_write_ = std::chrono::steady_clock::now();
      // Read the cancel flag inside the transaction (which holds the write lock) so
      // the run row written below can never overwrite a request that just landed.
      if (auto requested = store_.cancel_requested(run_.id);
          requested && *requested && !run_.cancel_requested) {
        run_.cancel_requested = true;
        if (stop_ != StopKind::Cancel && stop_ != StopKind::Interrupt) {
          writer_.event("cancel_received");
          request_stop(StopKind::Cancel, "cancelled by `orch cancel`");
        }
      }
      run_.updated_at = now_ms();
      run_.spent_wall_ms = budget_->wall_ms_before() + wall_ms_now();
      const Spend& sp = budget_->spent();
      run_.spent_tokens = sp.tokens;
      run_.spent_cost_usd = sp.cost_usd;
      run_.spent_attempts = sp.attempts;
      writer_.run_row(run_);
    }
    // A Ctrl-C that came while this turn prepared its attempts (a snapshot of a
    // large `writes:` takes seconds) stops them before they start: before the
    // commit, which would queue them for workers (Executor::record), and after
    // it, for one that came meanwhile.
    if (!to_start.empty() && SignalWatch::pending()) loop_.run_once(milliseconds(0));
    if (writer_.failed()) break;
    if (auto c = commit(); !c) {
      writer_.fail(c.error());
      break;
    }
    report(ProgressEvent::Kind::Committed);
    if (!to_start.empty() && SignalWatch::pending()) loop_.run_once(milliseconds(0));
    for (int i : to_start) start_attempt(i);
    if (gate_.has_questions()) {
      // The groups of what was just started are recorded before a human is asked:
      // a kill -9 during a question of minutes must not lose them.
      if (!spawned_.empty()) {
        flush_spawned();
        if (auto c = commit(); !c) {
          writer_.fail(c.error());
          break;
        }
        report(ProgressEvent::Kind::Committed);
      }
      ask_pending_questions();  // outside the transaction: a human may take minutes
      // Deliver what came meanwhile (a Ctrl-C that cut the question short) before
      // the next turn, which would otherwise queue the same question again.
      loop_.run_once(milliseconds(0));
      continue;
    }

    auto now = std::chrono::steady_clock::now();
    if (now - last_tick_ >= options_.tick_interval) {
      last_tick_ = now;
      report(ProgressEvent::Kind::Tick);
    }
    bool finished = in_flight_.count() == 0 && completions_.empty() &&
                    (stop_ != StopKind::None || (ready_.empty() && retries_waiting_ == 0));
    if (finished) break;
    if (completions_.empty()) loop_.run_once(std::min(kCancelPollInterval, options_.tick_interval));
  }
  if (writer_.failed()) {
    cancel_in_flight("ledger error");
    // What is running is stopped and waited for; an attempt prepared in the turn
    // whose transaction failed was never started and has nothing to wait for.
    const auto drop_settled = [this] {
      for (auto& c : completions_) {
        StepState& st = steps_[static_cast<std::size_t>(c.step)];
        if (c.kind != Completion::Kind::RetryDue && st.in_flight) {  // once per step
          st.in_flight = false;
          in_flight_.remove(c.step, 0);
        }
      }
      completions_.clear();
      for (auto& st : steps_)
        if (st.in_flight && !st.flight().running && !st.flight().check_running) {
          st.in_flight = false;
          in_flight_.remove(static_cast<int>(&st - steps_.data()), 0);
        }
    };
    drop_settled();
    while (in_flight_.count() > 0 && !loop_.idle()) {
      loop_.run_once(milliseconds(100));
      drop_settled();
    }
    writer_.rollback();
    return std::unexpected(*writer_.error());
  }
  return finish_run();
}

Expected<void> Scheduler::settle_completions() {
  while (!completions_.empty()) {
    Completion c = std::move(completions_.front());
    completions_.pop_front();
    StepState& s = steps_[static_cast<std::size_t>(c.step)];
    switch (c.kind) {
      case Completion::Kind::AttemptDone:
        on_attempt_done(c.step, std::move(c.outcome));
        break;
      case Completion::Kind::CheckDone:
        on_check_done(c.step, c.outcome);
        break;
      case Completion::Kind::RetryDue:
        --retries_waiting_;
        s.retry_timer = 0;
        if (stop_ == StopKind::None && s.rec.status == StepStatus::Pending) ready_.insert(c.step);
        break;
    }
    if (writer_.failed()) break;
  }
  return {};
}

void Scheduler::poll_cancel_request() {
  auto now = std::chrono::steady_clock::now();
  if (now - last_cancel_poll_ < kCancelPollInterval) return;
  last_cancel_poll_ = now;
  auto requested = store_.cancel_requested(run_.id);
  if (requested && *requested && stop_ != StopKind::Cancel && stop_ != StopKind::Interrupt) {
    run_.cancel_requested = true;
    writer_.event("cancel_received");
    request_stop(StopKind::Cancel, "cancelled by `orch cancel`");
  }
}

void Scheduler::request_stop(StopKind kind, const std::string& reason) {
  if (stop_priority(kind) <= stop_priority(stop_)) return;
  stop_ = kind;
  stop_reason_ = reason;

  if (kind == StopKind::Interrupt || kind == StopKind::Cancel) cancel_in_flight(reason);
}

void Scheduler::cancel_in_flight(const std::string& reason, bool wall_budget) {
  for (auto& s : steps_) {
    if (!s.in_flight || !s.flight().cancel_reason.empty()) continue;
    s.flight().cancel_reason = reason;
    s.flight().cancel_is_wall_budget = wall_budget;
    if (s.flight().running) s.flight().running->cancel(reason);
    if (s.flight().check_running) s.flight().check_running->cancel(reason);
  }
}

AttemptStatus Scheduler::stopped_status(const Flight& f) const {
  if (stop_ == StopKind::Interrupt) return AttemptStatus::Interrupted;
  return f.cancel_is_wall_budget ? AttemptStatus::TimedOut : AttemptStatus::Cancelled;
}

std::string Scheduler::plan_wall_spent() const {
  const std::int64_t limit = budget_->limits().wall ? budget_->limits().wall->count() : 0;
  return fmt::format("budget exhausted: wall: {} ms used of {} ms", limit, limit);
}

Expected<RunOutcome> Scheduler::finish_run() {
  if (wall_timer_) loop_.cancel_timer(wall_timer_);
  // Stopped by a person: what the steps started outside their process groups
  // (`setsid cmd &`, a daemon) goes too, found by the ORCH_RUN_ID it inherited.
  // Their groups were killed with each attempt; a run that ends by itself leaves
  // such processes be.
  if (stop_ == StopKind::Interrupt || stop_ == StopKind::Cancel) (void)kill_orphans(nullptr, run_.id);
  for (auto& s : steps_) {
    if (s.retry_timer) {
      loop_.cancel_timer(s.retry_timer);
      s.retry_timer = 0;
    }
  }
  ORCH_TRY(writer_.begin());
  const StopEnding at_stop = ending_of_stop(stop_, stop_reason_, run_.id, resumed_ && started_here_ == 0);
  if (at_stop.budget_exhausted)
    writer_.event("budget_exhausted", "", 0, {{"reason", *at_stop.budget_exhausted}});
  if (!at_stop.skip_reason.empty()) {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      StepState& s = steps_[i];
      if (!s.in_plan || s.rec.status != StepStatus::Pending) continue;
      const bool tried = s.rec.attempts_counted > 0 || !s.earlier_failure.empty();
      const LeftStep left =
          left_at_stop(tried, s.previous_failure.empty() ? s.earlier_failure : s.previous_failure,
                       stop_reason_, at_stop.skip_reason);
      s.rec.status = left.status;
      s.rec.reason = left.reason;
      save_step(s);
      const bool failed = s.rec.status == StepStatus::Failed;
      writer_.event(failed ? "step_failed" : "step_skipped", s.step->id, failed ? s.rec.last_attempt : 0,
                    {{"reason", s.rec.reason}});
      report(ProgressEvent::Kind::StepFinished, static_cast<int>(i), s.rec.reason);
    }
  }
  // The steps that failed and those a human must approve, named (the first five)
  // in the run's reason however it ended.
  StepsAtEnd at_end;
  for (const auto& s : steps_) {
    if (!s.in_plan) continue;
    if (s.rec.status == StepStatus::Failed) at_end.failed.push_back(s.step->id);
    if (s.rec.status == StepStatus::AwaitingApproval) at_end.waiting.push_back(s.step->id);
    // A step its condition skipped is settled as the plan said: not a step left undone.
    if (s.rec.status != StepStatus::Done && !s.skipped_by_condition) ++at_end.not_done;
  }
  const std::optional<std::string> over = budget_->overspent();
  if (over) writer_.event("budget_overspent", "", 0, {{"reason", overspent_reason(*over)}});
  const RunEnding ending = run_ending(stop_, at_stop, at_end, run_.id, over);
  const RunStatus status = ending.status;
  const std::string& reason = ending.reason;
  run_.status = status;
  run_.reason = reason;
  run_.exit_code = exit_code_for(status);
  // An interrupted or paused run is not over: `orch resume` continues it.
  run_.finished_at = status == RunStatus::Interrupted || status == RunStatus::AwaitingApproval ? 0 : now_ms();
  run_.updated_at = now_ms();
  run_.owner_pid = 0;
  run_.spent_wall_ms = budget_->wall_ms_before() + wall_ms_now();
  const Spend& sp = budget_->spent();
  run_.spent_tokens = sp.tokens;
  run_.spent_cost_usd = sp.cost_usd;
  run_.spent_attempts = sp.attempts;
  writer_.run_row(run_);
  writer_.event("run_finished", "", 0, {{"status", run_status_name(status)}, {"reason", reason}});
  if (writer_.failed()) return std::unexpected(*writer_.error());
  ORCH_TRY(commit());
  report(ProgressEvent::Kind::Committed);
  signals_.reset();
  report(ProgressEvent::Kind::Tick);
  lock_.reset();
  return RunOutcome{run_.id, status, reason};
}

}  // namespace orch
