// The scheduler loop: settle, dispatch, commit, start. See scheduler.h.
#include "engine/scheduler.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include "engine/attempt_render.h"
#include "engine/orphans.h"
#include "engine/scheduler_internal.h"
#include "engine/snapshot.h"
#include "orch/report.h"
#include "orch/workspace.h"
#include "util/atomic_file.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace fs = std::filesystem;
using scheduler_detail::tail_of;
using scheduler_detail::within;
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

int priority(StopKind k) {
  switch (k) {
    case StopKind::None:
      return 0;
    // Whichever of these two came first is what the run ends as: a wall budget
    // that runs out while an aborted run waits for its running steps does not
    // hide the step that failed, nor does a step failing after the budget ran out
    // turn a budget stop into a failure.
    case StopKind::Abort:
    case StopKind::Budget:
      return 1;
    case StopKind::Cancel:
      return 3;
    case StopKind::Interrupt:
      return 4;
    case StopKind::StoreError:
      return 5;
  }
  return 0;
}
}  // namespace

Scheduler::Scheduler(Store& store, const EngineOptions& options)
    : store_(store),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : Clock::system()),
      executors_(options.executors),
      secrets_(std::make_shared<SecretMasker>(options.secrets ? *options.secrets
                                                              : SecretMasker::from_environment())),
      loop_(clock_) {
  // The credentials the executors send (an llm provider's key), whatever their
  // variables are called.
  if (executors_)
    for (const std::string& name : executors_->secret_env())
      if (const char* value = std::getenv(name.c_str())) secrets_->add_value(value);
}

namespace {

// `data` with every string in it masked: masking the dumped text instead could
// turn a number that happens to equal a secret into invalid JSON.
void mask_strings(nlohmann::json& data, const SecretMasker& secrets) {
  if (data.is_string()) {
    data = secrets.mask(data.get_ref<const std::string&>());
  } else if (data.is_structured()) {
    for (auto& item : data) mask_strings(item, secrets);
  }
}

}  // namespace

std::int64_t Scheduler::now_ms() const {
  return clock_.wall_ms();
}

std::int64_t Scheduler::wall_ms_now() const {
  return std::chrono::duration_cast<milliseconds>(clock_.now() - started_).count();
}

namespace {
// Descriptors kept for the ledger, the event loop, libcurl's idle connections
// and the rest; the attempts in flight share what the open-files limit leaves.
constexpr long long kFdsReserved = 64;

long long open_files_usable() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) return LLONG_MAX;
  return static_cast<long long>(files.rlim_cur) - kFdsReserved;
}
}  // namespace

bool Scheduler::writes_overlap_in_flight(int i) const {
  const Step& step = *steps_[static_cast<std::size_t>(i)].step;
  if (step.writes.empty() || writers_in_flight_.empty()) return false;
  const fs::path ws = fs::path(run_.workspace);
  // As written, and with the symlinks on the way resolved as they are now (`out`
  // and `alias/x` overlap when `alias` links to `out`).
  const auto resolved = [](const fs::path& p) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(p, ec);
    return ec ? p : r;
  };
  // Each path is resolved once per call, not once per pair.
  const auto both = [&](const std::vector<std::string>& writes) {
    std::vector<std::pair<fs::path, fs::path>> out;  // as written, resolved
    out.reserve(writes.size());
    for (const auto& w : writes) {
      fs::path p = ws / w;
      fs::path r = resolved(p);
      out.emplace_back(std::move(p), std::move(r));
    }
    return out;
  };
  const auto mine = both(step.writes);
  for (int other : writers_in_flight_)
    for (const auto& [b, rb] : both(steps_[static_cast<std::size_t>(other)].step->writes))
      for (const auto& [a, ra] : mine)
        if (within(a, b) || within(b, a) || within(ra, rb) || within(rb, ra)) return true;
  return false;
}

bool Scheduler::open_files_allow(int i) {
  const int need = steps_[static_cast<std::size_t>(i)].executor->open_files_per_attempt();
  // One attempt at a time always goes: a limit that cannot hold even that shows
  // up as the attempt's own "Too many open files", not as a run that never ends.
  if (need <= open_files_free_ || in_flight_ == 0) return true;
  if (!open_files_capped_) {
    open_files_capped_ = true;
    rlimit files{};
    getrlimit(RLIMIT_NOFILE, &files);
    event("concurrency_capped", "", 0,
          {{"requested", run_.concurrency},
           {"used", in_flight_},
           {"open_files_limit", static_cast<long long>(files.rlim_cur)}});
  }
  return false;
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
    event("spawn_journal_failed", s.step->id, s.flight().attempt.number,
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

Expected<void> Scheduler::tx() {
  if (in_tx_) return {};
  ORCH_TRY(store_.begin());
  in_tx_ = true;
  return {};
}

Expected<void> Scheduler::commit() {
  if (!in_tx_) return {};
  // Attempts started in this transaction and still running: their rows, as running.
  for (int i : unwritten_attempts_) {
    StepState& s = steps_[static_cast<std::size_t>(i)];
    if (!s.has_flight() || !s.flight().row_unwritten) continue;
    Flight& f = s.flight();
    f.row_unwritten = false;
    if (store_error_) continue;
    if (auto r = store_.insert_attempt(f.attempt); !r) store_error_ = r.error();
  }
  unwritten_attempts_.clear();
  // Each changed step is written once per transaction, however often it changed
  // in it (a builtin chain starts and finishes many steps in one turn).
  for (int i : dirty_steps_) {
    StepState& s = steps_[static_cast<std::size_t>(i)];
    s.dirty = false;
    const StepStatus st = s.rec.status;
    if (!s.in_flight && (st == StepStatus::Done || st == StepStatus::Failed || st == StepStatus::Skipped ||
                         st == StepStatus::Cancelled))
      s.release_flight();
    if (store_error_) continue;
    if (auto r = store_.upsert_step(s.rec); !r) store_error_ = r.error();
  }
  dirty_steps_.clear();
  if (store_error_) return std::unexpected(*store_error_);
  in_tx_ = false;
  if (auto c = store_.commit(); !c) {
    // A COMMIT that failed (the ledger locked past the busy timeout, the disk
    // full) can leave the transaction open, holding the write lock: let it go.
    (void)store_.rollback();
    return c;
  }
  for (const std::string& snapshot : spent_snapshots_) {
    std::error_code ec;
    fs::remove_all(snapshot, ec);  // only space: a leftover is harmless
  }
  spent_snapshots_.clear();
  // Every group noted so far is in the ledger now (flush_spawned) or has ended.
  if (spawned_.empty()) spawn_journal_.clear();
  return {};
}

void Scheduler::event(const std::string& kind, const std::string& step_id, int attempt,
                      const nlohmann::json& data) {
  if (store_error_) return;
  if (auto t = tx(); !t) {
    store_error_ = t.error();
    return;
  }
  EventRecord e;
  e.run_id = run_.id;
  e.ts = now_ms();
  e.kind = kind;
  e.step_id = step_id;
  e.attempt = attempt;
  if (secrets_->empty()) {
    e.data_json = json_text(data);
  } else {
    nlohmann::json masked = data;
    mask_strings(masked, *secrets_);
    e.data_json = json_text(masked);
  }
  if (auto r = store_.append_event(e); !r) store_error_ = r.error();
}

void Scheduler::save_step(StepState& s) {
  if (counts_ready_ && !s.recount) {
    s.recount = true;
    count_queue_.push_back(static_cast<int>(&s - steps_.data()));
  }
  if (store_error_) return;
  if (auto t = tx(); !t) {
    store_error_ = t.error();
    return;
  }
  if (s.dirty) return;
  s.dirty = true;
  dirty_steps_.push_back(static_cast<int>(&s - steps_.data()));
}

namespace {

int* count_of(ProgressEvent& counts, StepStatus status) {
  switch (status) {
    case StepStatus::Done:
      return &counts.done;
    case StepStatus::Running:
      return &counts.running;
    case StepStatus::Failed:
      return &counts.failed;
    case StepStatus::Skipped:
    case StepStatus::Cancelled:
      return &counts.skipped;
    case StepStatus::Pending:
    case StepStatus::AwaitingApproval:
      break;
  }
  return nullptr;
}

}  // namespace

void Scheduler::refresh_counts() {
  auto move = [this](StepState& s) {
    if (!s.in_plan) return;
    if (int* from = count_of(counts_, s.counted_as)) --*from;
    if (int* to = count_of(counts_, s.rec.status)) ++*to;
    s.counted_as = s.rec.status;
  };
  if (!counts_ready_) {
    counts_ = ProgressEvent{};
    for (StepState& s : steps_) {
      s.counted_as = StepStatus::Pending;
      if (s.in_plan) ++counts_.total;
      move(s);
    }
    counts_ready_ = true;
    return;
  }
  for (int i : count_queue_) {
    StepState& s = steps_[static_cast<std::size_t>(i)];
    s.recount = false;
    move(s);
  }
  count_queue_.clear();
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
  refresh_counts();
  e.total = counts_.total;
  e.done = counts_.done;
  e.running = counts_.running;
  e.failed = counts_.failed;
  e.skipped = counts_.skipped;
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
    event("attempt_spawned", s.step->id, sp.attempt, data);
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
  index_ready();
  // More attempts at once than the open-files limit can hold would fail
  // ("Too many open files") where they would have succeeded: the run goes as wide
  // as it can (open_files_allow), and says so.
  open_files_free_ = open_files_usable();
  // Approvals recorded by `orch approve` (for a resume of a paused run).
  for (const EventRecord& e : ORCH_TRY(store_.events_of_kind(run_.id, "step_approved"))) {
    auto data = nlohmann::json::parse(e.data_json, nullptr, false);
    ledger_approvals_[e.step_id] = data.is_object() ? data.value("fingerprint", "") : "";
  }
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
      if (started_inline == 0 || store_error_ || round >= kMaxBatchRounds ||
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
    bool write_run_row =
        !store_error_ && ((in_tx_ && since_run_write >= kRunRowInterval) || since_run_write >= kRunRowIdleInterval);
    // On its own the row is a heartbeat: if the ledger is busy (another process
    // holds its write lock past the busy timeout), it is written next time; the
    // run goes on.
    if (write_run_row && !in_tx_ && !tx()) {
      write_run_row = false;
      last_run_write_ = std::chrono::steady_clock::now();
    }
    if (write_run_row) {
      last_run_write_ = std::chrono::steady_clock::now();
      // Read the cancel flag inside the transaction (which holds the write lock) so
      // the run row written below can never overwrite a request that just landed.
      if (auto requested = store_.cancel_requested(run_.id);
          requested && *requested && !run_.cancel_requested) {
        run_.cancel_requested = true;
        if (stop_ != StopKind::Cancel && stop_ != StopKind::Interrupt) {
          event("cancel_received");
          request_stop(StopKind::Cancel, "cancelled by `orch cancel`");
        }
      }
      run_.updated_at = now_ms();
      run_.spent_wall_ms = budget_->wall_ms_before() + wall_ms_now();
      const Spend& sp = budget_->spent();
      run_.spent_tokens = sp.tokens;
      run_.spent_cost_usd = sp.cost_usd;
      run_.spent_attempts = sp.attempts;
      if (auto r = store_.update_run(run_); !r && !store_error_) store_error_ = r.error();
    }
    if (store_error_) break;
    if (auto c = commit(); !c) {
      store_error_ = c.error();
      break;
    }
    report(ProgressEvent::Kind::Committed);
    // A Ctrl-C that came while this turn prepared its attempts (a snapshot of a
    // large `writes:` takes seconds) stops them before they start.
    if (!to_start.empty() && SignalWatch::pending()) loop_.run_once(milliseconds(0));
    for (int i : to_start) start_attempt(i);
    if (!asks_.empty()) {
      // The groups of what was just started are recorded before a human is asked:
      // a kill -9 during a question of minutes must not lose them.
      if (!spawned_.empty()) {
        flush_spawned();
        if (auto c = commit(); !c) {
          store_error_ = c.error();
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
    bool finished = in_flight_ == 0 && completions_.empty() &&
                    (stop_ != StopKind::None || (ready_.empty() && retries_waiting_ == 0));
    if (finished) break;
    if (completions_.empty()) loop_.run_once(std::min(kCancelPollInterval, options_.tick_interval));
  }
  if (store_error_) {
    cancel_in_flight("ledger error");
    // What is running is stopped and waited for; an attempt prepared in the turn
    // whose transaction failed was never started and has nothing to wait for.
    const auto drop_settled = [this] {
      for (auto& c : completions_) {
        StepState& st = steps_[static_cast<std::size_t>(c.step)];
        if (c.kind != Completion::Kind::RetryDue && st.in_flight) {  // once per step
          st.in_flight = false;
          --in_flight_;
        }
      }
      completions_.clear();
      for (auto& st : steps_)
        if (st.in_flight && !st.flight().running && !st.flight().check_running) {
          st.in_flight = false;
          --in_flight_;
        }
    };
    drop_settled();
    while (in_flight_ > 0 && !loop_.idle()) {
      loop_.run_once(milliseconds(100));
      drop_settled();
    }
    if (in_tx_) (void)store_.rollback();
    return std::unexpected(*store_error_);
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
      case Completion::Kind::CheckDone: {
        s.flight().check_running.reset();
        if (!s.flight().cancel_reason.empty()) {
          finish_attempt(c.step, stopped_status(s.flight()), s.flight().cancel_reason);
          break;
        }
        const auto& post = s.step->post;
        const Postcondition& p = post[s.flight().next_check];
        CheckResult r;
        r.kind = PostKind::ShellZero;
        r.held = c.outcome.ending == AttemptEnding::Exited && c.outcome.exit_code == 0;
        if (r.held) {
          r.reason = fmt::format("shell_zero '{}': exited 0", p.cmd);
        } else {
          std::string how = c.outcome.ending == AttemptEnding::Exited
                                ? fmt::format("exited with code {}", c.outcome.exit_code)
                                : c.outcome.message;
          std::string out = tail_of(c.outcome.output_tail, 300);
          r.reason = fmt::format("shell_zero '{}': {}{}", p.cmd, how, out.empty() ? "" : "; output: " + out);
        }
        s.flight().checks.push_back(r);
        ++s.flight().next_check;
        if (!r.held) {
          finish_attempt(c.step, AttemptStatus::Failed, r.reason);
        } else {
          run_checks(c.step);
        }
        break;
      }
      case Completion::Kind::RetryDue:
        --retries_waiting_;
        s.retry_timer = 0;
        if (stop_ == StopKind::None && s.rec.status == StepStatus::Pending) ready_.insert(c.step);
        break;
    }
    if (store_error_) break;
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
    event("cancel_received");
    request_stop(StopKind::Cancel, "cancelled by `orch cancel`");
  }
}

void Scheduler::request_stop(StopKind kind, const std::string& reason) {
  if (priority(kind) <= priority(stop_)) return;
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

// ---- dispatch --------------------------------------------------------------

int Scheduler::dispatch_ready(std::vector<int>& to_start) {
  int started_inline = 0;
  if (stop_ != StopKind::None) return 0;
  std::optional<std::string> blocked;
  for (auto it = ready_.begin();
       it != ready_.end() && in_flight_ < run_.concurrency && stop_ == StopKind::None;) {
    int i = *it;
    StepState& s = steps_[static_cast<std::size_t>(i)];
    // In order: a step held back for descriptors holds back those after it, so
    // a stream of cheaper ones cannot keep it waiting for ever.
    if (!open_files_allow(i)) break;
    // Two steps that may change the same files do not run at once: a failed one's
    // restore would undo what the other did.
    if (writes_overlap_in_flight(i)) {
      ++it;
      continue;
    }
    if (!s.cleared) {
      Gate gate = risk_gate(i);
      if (gate == Gate::Ask) {
        ++it;
        continue;
      }
      if (gate != Gate::Go) {
        it = ready_.erase(it);
        continue;
      }
    }
    const BudgetLimits& sb = s.step->budget;
    // The step's own budget: what it already spent plus this attempt must fit.
    std::int64_t step_tokens = s.rec.tokens_in + s.rec.tokens_out;
    std::optional<std::string> step_short;
    // As for the plan, a zero spend never exhausts: a budget of 0 admits steps that cost nothing.
    if (sb.tokens && step_tokens > 0 && step_tokens >= *sb.tokens)
      step_short = fmt::format("step budget exhausted: tokens {} spent of {}", step_tokens, *sb.tokens);
    else if (sb.cost_usd && s.rec.cost_usd > 0 && s.rec.cost_usd >= *sb.cost_usd)
      step_short = fmt::format("step budget exhausted: cost {} spent of {}", dollars(s.rec.cost_usd),
                               dollars(*sb.cost_usd));
    else if (sb.attempts && s.budget_attempts >= *sb.attempts)
      step_short =
          fmt::format("step budget exhausted: attempts {} made of {}", s.budget_attempts, *sb.attempts);
    else if (sb.wall && s.rec.wall_ms >= sb.wall->count())
      step_short =
          fmt::format("step budget exhausted: wall {} ms used of {} ms", s.rec.wall_ms, sb.wall->count());
    if (step_short) {
      it = ready_.erase(it);
      mark_failed(i, *step_short);
      continue;
    }
    std::optional<std::int64_t> token_cap;
    const Spend r = reservation(s, &token_cap);
    if (auto why = budget_->shortfall(r, wall_ms_now())) {
      blocked = why;
      ++it;
      continue;
    }
    it = ready_.erase(it);
    budget_->reserve(r);
    s.flight().reservation = r;
    s.flight().token_cap = token_cap;
    if (!prepare_attempt(i)) continue;
    if (s.executor->in_process()) {
      start_attempt(i);
      ++started_inline;
    } else {
      to_start.push_back(i);
    }
  }
  // Nothing running will free or spend budget; a retry that is waiting for its
  // delay and fits may still be made (it is judged like any ready step when it
  // comes due), so the run stops only when none does.
  if (blocked && in_flight_ == 0 && to_start.empty() && started_inline == 0 && stop_ == StopKind::None &&
      !a_waiting_retry_fits()) {
    request_stop(StopKind::Budget, "budget exhausted: " + *blocked);
  }
  return started_inline;
}

std::vector<Postcondition> Scheduler::default_post_of(int i) const {
  const StepState& s = steps_[static_cast<std::size_t>(i)];
  return s.executor != nullptr ? s.executor->default_post() : std::vector<Postcondition>{};
}

Spend Scheduler::reservation(const StepState& s, std::optional<std::int64_t>* token_cap) const {
  const BudgetLimits& sb = s.step->budget;
  SpendEstimate est = s.executor->estimate(*s.step);
  if (est.min_tokens > 0) {
    // A call held to its reservation is reckoned on the prompt it will send:
    // placeholders filled (a step's result can be most of the prompt).
    auto rendered = render_step(*s.step, result_lookup(), s.rec.last_attempt + 1, s.previous_failure);
    if (rendered) {
      Step filled = *s.step;
      filled.inputs = std::move(rendered->inputs);
      est = s.executor->estimate(filled);
    }
  }
  Spend r;
  r.attempts = 1;
  r.tokens = sb.tokens ? *sb.tokens - (s.rec.tokens_in + s.rec.tokens_out) : est.tokens;
  r.cost_usd = sb.cost_usd ? *sb.cost_usd - s.rec.cost_usd : est.cost_usd;
  if (est.min_tokens > 0) {
    // A call that can be held to fewer tokens asks for what the plan has left
    // rather than waiting for a budget that will never grow.
    if (auto left = budget_->tokens_left(); left && r.tokens > *left)
      r.tokens = std::max(*left, std::min(est.min_tokens, r.tokens));
    if (token_cap) *token_cap = r.tokens;
  }
  return r;
}

bool Scheduler::a_waiting_retry_fits() const {
  if (retries_waiting_ == 0) return false;
  for (const StepState& s : steps_)
    if (s.retry_timer != 0 && !budget_->shortfall(reservation(s), wall_ms_now())) return true;
  return false;
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
  ORCH_TRY(tx());
  RunStatus status = RunStatus::Succeeded;
  std::string reason;
  std::string skip_reason;
  std::string budget_hint;  // said last, after the steps that failed
  switch (stop_) {
    case StopKind::Interrupt:
      status = RunStatus::Interrupted;
      reason = stop_reason_ + "; resume with `orch resume " + run_.id + "`";
      break;
    case StopKind::Cancel:
      status = RunStatus::Cancelled;
      reason = stop_reason_;
      skip_reason = "not started: run cancelled";
      break;
    case StopKind::Budget: {
      status = RunStatus::BudgetExhausted;
      reason = stop_reason_;
      // A resume of a run whose budget had run out, that could start nothing:
      // the way on is a bigger budget.
      if (resumed_ && started_here_ == 0)
        budget_hint =
            fmt::format(" (to go on, raise the plan's budget: orch resume {} --replan PLAN)", run_.id);
      skip_reason = "not started: " + stop_reason_;
      // However the budget ran out (a step that does not fit, the wall clock, a
      // step that spent past it), the ledger says so once, in the run's last
      // transaction (not from a timer's callback, outside any turn).
      constexpr std::string_view kPrefix = "budget exhausted: ";
      event("budget_exhausted", "", 0,
            {{"reason",
              stop_reason_.starts_with(kPrefix) ? stop_reason_.substr(kPrefix.size()) : stop_reason_}});
      break;
    }
    case StopKind::Abort:
      status = RunStatus::Failed;
      reason = stop_reason_;
      skip_reason = fmt::format("not started: run aborted ({})", stop_reason_);
      break;
    case StopKind::None:
    case StopKind::StoreError:
      break;
  }
  if (!skip_reason.empty()) {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      StepState& s = steps_[i];
      if (!s.in_plan || s.rec.status != StepStatus::Pending) continue;
      // A step that failed (in this drive, or in an earlier one: a resume starts
      // its count again) was not "not started": it failed and was not retried.
      if (s.rec.attempts_counted > 0 || !s.earlier_failure.empty()) {
        s.rec.status = StepStatus::Failed;
        const std::string& why = s.previous_failure.empty() ? s.earlier_failure : s.previous_failure;
        const std::string last = why.substr(0, why.find('\n'));
        s.rec.reason = last.empty() ? fmt::format("not retried ({})", stop_reason_)
                                    : fmt::format("not retried ({}); last failure: {}", stop_reason_, last);
      } else {
        s.rec.status = StepStatus::Skipped;
        s.rec.reason = skip_reason;
      }
      save_step(s);
      const bool failed = s.rec.status == StepStatus::Failed;
      event(failed ? "step_failed" : "step_skipped", s.step->id, failed ? s.rec.last_attempt : 0,
            {{"reason", s.rec.reason}});
      report(ProgressEvent::Kind::StepFinished, static_cast<int>(i), s.rec.reason);
    }
  }
  // The steps that failed and those a human must approve, named (the first five)
  // in the run's reason however it ended.
  std::vector<std::string> failed, waiting;
  int not_done = 0;
  for (const auto& s : steps_) {
    if (!s.in_plan) continue;
    if (s.rec.status == StepStatus::Failed) failed.push_back(s.step->id);
    if (s.rec.status == StepStatus::AwaitingApproval) waiting.push_back(s.step->id);
    if (s.rec.status != StepStatus::Done) ++not_done;
  }
  const auto named = [](const std::vector<std::string>& ids, std::string_view what) {
    std::string list;
    for (std::size_t k = 0; k < ids.size() && k < 5; ++k) list += (k ? ", " : "") + ids[k];
    if (ids.size() > 5) list += ", ...";
    return fmt::format("{} step{} {}: {}", ids.size(), ids.size() == 1 ? "" : "s", what, list);
  };
  // The step that stopped an aborted run comes first in its reason; the ones that
  // failed while it was stopping (running ones finish) are named too. A run the
  // budget stopped names every step that failed before.
  if ((stop_ == StopKind::Abort && failed.size() > 1) || (stop_ == StopKind::Budget && !failed.empty()))
    reason += " (" + named(failed, "failed") + ")";
  reason += budget_hint;
  if (stop_ == StopKind::None && not_done > 0) {
    if (failed.empty() && !waiting.empty()) {
      // Paused, not failed: `orch approve` then `orch resume` continues it.
      status = RunStatus::AwaitingApproval;
      reason = fmt::format("{}; approve with `orch approve {} STEP`, then `orch resume {}`",
                           named(waiting, "awaiting approval"), run_.id, run_.id);
    } else {
      // A step's own budget running out fails that step, not the run's budget.
      status = RunStatus::Failed;
      reason = failed.empty() ? fmt::format("{} steps not done", not_done) : named(failed, "failed");
    }
  }
  // A step left waiting for approval by a run that ended otherwise (not by a
  // cancel: nothing is to go on) is named too: approving it is part of going on,
  // however the run's own reason says to.
  if (status != RunStatus::AwaitingApproval && status != RunStatus::Cancelled && !waiting.empty())
    reason += fmt::format("; {} (approve with `orch approve {} STEP`)", named(waiting, "awaiting approval"),
                          run_.id);
  // Said whatever the run's status: the budget was a promise the run did not keep.
  // When the reason already gives the figure (the budget that ran out), it is
  // not said twice.
  if (auto over = budget_->overspent()) {
    event("budget_overspent", "", 0, {{"reason", overspent_reason(*over)}});
    const std::string why = overspent_reason(*over, reason.find(*over) != std::string::npos);
    reason = reason.empty() ? why : reason + "; " + why;
  }
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
  if (store_error_) return std::unexpected(*store_error_);
  ORCH_TRY(store_.update_run(run_));
  event("run_finished", "", 0, {{"status", run_status_name(status)}, {"reason", reason}});
  if (store_error_) return std::unexpected(*store_error_);
  ORCH_TRY(commit());
  report(ProgressEvent::Kind::Committed);
  signals_.reset();
  report(ProgressEvent::Kind::Tick);
  lock_.reset();
  return RunOutcome{run_.id, status, reason};
}

}  // namespace orch
