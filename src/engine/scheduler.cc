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
#include "engine/snapshot.h"
#include "orch/report.h"
#include "orch/workspace.h"
#include "util/atomic_file.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {
constexpr std::size_t kTailBytes = 2048;
constexpr milliseconds kCancelPollInterval{250};
// The longest Retry-After a transient failure is retried after: the back-off's own ceiling.
constexpr milliseconds kMaxRetryAfter{300'000};
// A result longer than this reaches a shell_zero check only in ORCH_RESULT_FILE.
constexpr std::size_t kResultEnvMax = 64 * 1024;
// One turn's transaction may settle in-process attempts in up to this many
// rounds, or for this long, before it commits.
constexpr int kMaxBatchRounds = 1000;
constexpr milliseconds kMaxBatchTime{50};
// The run row (spent totals, updated_at) is rewritten at most this often while
// the run goes on; the attempts rows are the authority for what was spent.
constexpr milliseconds kRunRowInterval{250};
constexpr milliseconds kRunRowIdleInterval{1000};

std::string tail_of(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

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

// Whether `path` is `folder` or inside it (both absolute, normalised).
bool within(const fs::path& path, const fs::path& folder) {
  auto p = path.lexically_normal();
  auto f = folder.lexically_normal();
  auto [fi, pi] = std::mismatch(f.begin(), f.end(), p.begin(), p.end());
  if (fi == f.end()) return true;
  // "a/b/" normalises with an empty last element: a trailing separator still matches.
  return std::next(fi) == f.end() && fi->empty();
}

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

Scheduler::Gate Scheduler::risk_gate(int i) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  const Step& step = *s.step;
  const RiskLevel level = s.executor->risk(step);
  const char* level_name = risk_level_name(level);
  if (level == RiskLevel::Low) {
    s.cleared = true;
    return Gate::Go;
  }
  if (level == RiskLevel::Critical) {
    std::string why = step.risk == RiskLevel::Critical
                          ? "the step is declared risk: critical"
                          : fmt::format("executor '{}' rates it critical", step.executor);
    if (std::string cause = s.executor->risk_reason(step); !cause.empty() && step.risk != RiskLevel::Critical)
      why += ": " + cause;
    std::string reason =
        fmt::format("refused by the risk guard: critical risk ({}); critical steps never run", why);
    event("step_refused", step.id, 0, {{"risk", level_name}, {"reason", reason}});
    mark_failed(i, reason);
    return Gate::Refused;
  }
  // What a human is asked to approve: the exact command and inputs, rendered.
  ApprovalRequest req;
  req.run_id = run_.id;
  req.step_id = step.id;
  req.goal = step.goal;
  req.risk = level;
  req.stop_requested = [] { return SignalWatch::pending(); };
  auto describe = [&](int attempt, const std::string& previous_failure, bool masked) -> std::string {
    auto rendered = render_step(step, result_lookup(), attempt, previous_failure);
    if (!rendered) return "(cannot render the step: " + rendered.error().message + ")";
    AttemptSpec preview;
    preview.run_id = run_.id;
    preview.step_id = step.id;
    preview.executor = step.executor;
    preview.workspace = run_.workspace;
    preview.argv = std::move(rendered->argv);
    preview.env = std::move(rendered->env);
    preview.inputs = std::move(rendered->inputs);
    // The description shows the environment's values: a secret among them is
    // known as one before it is shown or recorded (as an attempt would make it).
    for (const auto& [name, value] : preview.env) secrets_->add_if_secret(name, value);
    if (preview.inputs.is_object())
      for (const auto& [name, value] : preview.inputs.items())
        if (value.is_string()) secrets_->add_if_secret(name, value.get_ref<const std::string&>());
    std::string text = s.executor->describe(preview);
    return masked ? secrets_->mask(text) : text;
  };
  req.command = describe(s.rec.last_attempt + 1, s.previous_failure, true);
  // What an approval is bound to: the step's fingerprint and the command the
  // executor would run for it, which for a registry tool comes from the registry,
  // not the step (rendered like the fingerprint, as attempt 0, so a retry does not
  // change it; unmasked, so the secrets known at the time do not either). Either
  // changing voids an `orch approve`.
  const std::string fingerprint =
      fingerprint_of(step_fingerprint(step, result_lookup(), plan_dir(), default_post_of(i)).value_or("") +
                     "\n" + describe(0, "", false));

  std::string by;
  if (options_.approve_steps.contains(step.id)) {
    by = "--approve";
  } else if (level == RiskLevel::Medium && options_.approve_medium) {
    by = "--approve-medium";
  } else if (auto it = ledger_approvals_.find(step.id);
             it != ledger_approvals_.end() && (it->second.empty() || it->second == fingerprint)) {
    by = "orch approve";
  } else if (options_.ask_approval && s.answer == 0) {
    // Queued once, however many dispatch rounds see the step before the turn's commit.
    if (std::none_of(asks_.begin(), asks_.end(), [i](const auto& a) { return a.first == i; }))
      asks_.emplace_back(i, std::move(req));
    return Gate::Ask;
  } else if (s.answer > 0) {
    by = "prompt";
  }
  if (!by.empty()) {
    // `orch approve` wrote its own event; the others are recorded here.
    if (by != "orch approve")
      event("step_approved", step.id, 0, {{"risk", level_name}, {"by", by}, {"fingerprint", fingerprint}});
    s.cleared = true;
    return Gate::Go;
  }
  if (s.answer < 0) event("approval_declined", step.id, 0, {{"risk", level_name}, {"by", "prompt"}});
  event("approval_requested", step.id, 0,
        {{"risk", level_name}, {"command", req.command}, {"fingerprint", fingerprint}});
  s.rec.status = StepStatus::AwaitingApproval;
  s.rec.reason = fmt::format("awaiting approval ({} risk): `orch approve {} {}`, then `orch resume {}`",
                             level_name, run_.id, step.id, run_.id);
  save_step(s);
  report(ProgressEvent::Kind::StepFinished, i, s.rec.reason);
  return Gate::Wait;
}

void Scheduler::ask_pending_questions() {
  std::vector<std::pair<int, ApprovalRequest>> asks = std::move(asks_);
  asks_.clear();
  for (auto& [i, req] : asks) {
    StepState& s = steps_[static_cast<std::size_t>(i)];
    if (stop_ != StopKind::None || SignalWatch::pending()) break;  // stopping: nothing more to ask
    bool yes = options_.ask_approval(req);
    // A question cut short by Ctrl-C was not answered: the loop delivers the signal next.
    if (SignalWatch::pending()) break;
    s.answer = yes ? 1 : -1;
  }
}

bool Scheduler::prepare_attempt(int i) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  const Step& step = *s.step;
  int number = s.rec.last_attempt + 1;
  s.rec.last_attempt = number;
  s.rec.status = StepStatus::Running;
  s.rec.reason.clear();
  if (s.rec.started_at == 0) s.rec.started_at = now_ms();
  s.flight().outcome.reset();
  s.flight().outcome_at = {};
  s.flight().checks.clear();
  s.flight().next_check = 0;
  s.flight().cancel_reason.clear();
  s.flight().cancel_is_wall_budget = false;
  s.flight().pending_render_error.clear();
  s.flight().pending_error_is_setup = false;

  AttemptRecord& a = s.flight().attempt;
  a = AttemptRecord{};
  a.run_id = run_.id;
  a.step_id = step.id;
  a.number = number;
  a.status = AttemptStatus::Running;
  a.started_at = now_ms();

  AttemptSpec& spec = s.flight().spec;
  spec = AttemptSpec{};
  spec.run_id = run_.id;
  spec.step_id = step.id;
  spec.attempt = number;
  spec.executor = step.executor;
  spec.goal = step.goal;
  spec.previous_failure = s.previous_failure;
  spec.workspace = run_.workspace;
  spec.stdout_path = attempt_file(s, number, ".stdout");
  spec.stderr_path = attempt_file(s, number, ".stderr");
  // One folder for the run's usage files, made once (usage_folder()): a folder
  // per step, made before every spawn, cost as much as the spawn's bookkeeping.
  spec.usage_path = usage_file(store_.folder(), run_.id, step.id, number);
  spec.kill_grace = plan_.defaults.kill_grace;
  spec.token_cap = s.flight().token_cap;
  spec.max_output = step.max_output.value_or(plan_.defaults.max_output);
  spec.secrets = secrets_;
  std::optional<milliseconds> timeout = step.timeout ? step.timeout : plan_.defaults.timeout;
  s.flight().timeout_is_budget.clear();
  if (auto left = budget_->wall_left(wall_ms_now())) {
    milliseconds cap(std::max<std::int64_t>(*left, 1));
    if (!timeout || cap < *timeout) {
      timeout = cap;
      s.flight().timeout_is_budget = plan_wall_spent();
    }
  }
  if (step.budget.wall) {
    milliseconds cap(std::max<std::int64_t>(step.budget.wall->count() - s.rec.wall_ms, 1));
    if (!timeout || cap < *timeout) {
      timeout = cap;
      s.flight().timeout_is_budget = fmt::format("step budget exhausted: wall {} ms used of {} ms",
                                                 step.budget.wall->count(), step.budget.wall->count());
    }
  }
  spec.timeout = timeout;

  auto rendered = render_step(step, result_lookup(), number, s.previous_failure);
  if (!rendered) {
    s.flight().pending_render_error = rendered.error().message;
  } else {
    spec.argv = std::move(rendered->argv);
    spec.env = std::move(rendered->env);
    spec.inputs = std::move(rendered->inputs);
    // A rendered value can carry a secret into a secret-looking variable or input.
    for (const auto& [name, value] : spec.env) secrets_->add_if_secret(name, value);
    if (spec.inputs.is_object())
      for (const auto& [name, value] : spec.inputs.items())
        if (value.is_string()) secrets_->add_if_secret(name, value.get_ref<const std::string&>());
    auto fp = step_fingerprint(step, result_lookup(), plan_dir(), default_post_of(i));
    if (fp) a.fingerprint = *fp;
  }
  spec.env.emplace_back("ORCH_RUN_ID", run_.id);
  spec.env.emplace_back("ORCH_STEP_ID", step.id);
  spec.env.emplace_back("ORCH_ATTEMPT", std::to_string(number));
  spec.env.emplace_back("ORCH_PREVIOUS_FAILURE", s.previous_failure);
  spec.env.emplace_back("ORCH_USAGE_FILE", spec.usage_path.string());
  spec.env.emplace_back("ORCH_WORKSPACE", run_.workspace);
  if (step.output) {
    auto out = resolve_in_workspace(run_.workspace, *step.output);
    if (out) {
      spec.output_file = *out;
    } else if (s.flight().pending_render_error.empty()) {
      s.flight().pending_render_error = out.error().message;
    }
  }
  a.stdout_path = spec.stdout_path.string();
  a.stderr_path = spec.stderr_path.string();

  if (!step.writes.empty() && s.flight().pending_render_error.empty()) {
    std::vector<fs::path> paths;
    // What orch keeps in the store's folder: the ledger and its SQLite files, the
    // runs' outputs and snapshots, the run locks. A snapshot of a path holding
    // one would copy the ledger into itself (without end), and restoring it would
    // put an old ledger back over the live one. Anything else in that folder (a
    // ledger kept in the workspace itself) is the user's to list.
    std::vector<fs::path> owned;
    std::error_code ec;
    const fs::path store_folder = fs::weakly_canonical(store_.folder(), ec);
    if (!store_folder.empty()) {
      const std::string ledger = (store_folder / store_.location().filename()).string();
      owned = {store_folder / "runs", store_folder / "locks", ledger,
               ledger + "-wal",       ledger + "-shm",        ledger + "-journal"};
      if (store_.location() == store_.folder()) owned = {store_folder};  // a store without a file
    }
    for (const auto& w : step.writes) {
      auto p = resolve_in_workspace(run_.workspace, w);
      if (!p) {
        s.flight().pending_render_error = p.error().message;
        break;
      }
      auto hit = std::find_if(owned.begin(), owned.end(),
                              [&](const fs::path& o) { return within(o, *p) || within(*p, o); });
      if (hit != owned.end()) {
        s.flight().pending_render_error = fmt::format(
            "writes '{}': it is or holds orch's store ({}), which a snapshot cannot copy or restore; "
            "list the files or folders the step changes instead",
            w, hit->string());
        s.flight().pending_error_is_setup = true;
        break;
      }
      // A path that is itself a symlink: what it points to is saved (the step may
      // write through it), and so is the link (the step may replace it).
      const fs::path given = fs::path(run_.workspace) / w;
      if (struct stat st{}; given.has_filename() && given.filename() != "." && given.filename() != ".." &&
                            ::lstat(given.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
        if (auto folder = resolve_in_workspace(run_.workspace, given.parent_path().string())) {
          const fs::path link = *folder / given.filename();
          if (link != *p && std::find(paths.begin(), paths.end(), link) == paths.end()) paths.push_back(link);
        }
      }
      paths.push_back(*p);
    }
    if (s.flight().pending_render_error.empty()) {
      fs::path snap = attempt_file(s, number, ".snapshot");
      if (auto r = take_snapshot(paths, snap, run_.workspace); !r) {
        s.flight().pending_render_error = "cannot snapshot writes: " + r.error().message;
      } else {
        a.snapshot_dir = snap.string();
      }
    }
  }

  if (auto t = tx(); !t) store_error_ = t.error();
  s.flight().row_unwritten = true;
  unwritten_attempts_.push_back(i);
  save_step(s);
  event("attempt_started", step.id, number);
  s.in_flight = true;
  ++in_flight_;
  if (!step.writes.empty()) writers_in_flight_.push_back(i);
  s.flight().open_files = s.executor->open_files_per_attempt();
  open_files_free_ -= s.flight().open_files;
  return true;
}

void Scheduler::start_attempt(int i) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  ++started_here_;
  auto queue_failure = [this, i](AttemptEnding ending, std::string message) {
    Completion c;
    c.kind = Completion::Kind::AttemptDone;
    c.step = i;
    c.outcome.ending = ending;
    c.outcome.message = std::move(message);
    completions_.push_back(std::move(c));
  };
  if (!s.flight().pending_render_error.empty()) {
    queue_failure(s.flight().pending_error_is_setup ? AttemptEnding::SetupFailed : AttemptEnding::Error,
                  s.flight().pending_render_error);
    return;
  }
  // Cancelled after it was recorded (`orch cancel`, read with the run row inside
  // this turn's transaction, or a signal that came while it was prepared, e.g.
  // during a long snapshot): recorded cancelled or interrupted, never spawned.
  if (s.flight().cancel_reason.empty() && (stop_ == StopKind::Interrupt || stop_ == StopKind::Cancel))
    s.flight().cancel_reason = stop_reason_;
  if (!s.flight().cancel_reason.empty()) {
    queue_failure(AttemptEnding::Cancelled, s.flight().cancel_reason);
    return;
  }
  auto started = s.executor->start(s.flight().spec, loop_, [this, i](AttemptOutcome outcome) {
    Completion c;
    c.kind = Completion::Kind::AttemptDone;
    c.step = i;
    c.outcome = std::move(outcome);
    completions_.push_back(std::move(c));
  });
  if (!started) {
    queue_failure(AttemptEnding::SpawnFailed, started.error().message);
    return;
  }
  s.flight().running = std::move(*started);
  // (A test executor may hand back no attempt object.)
  if (int group = s.flight().running ? s.flight().running->process_group() : 0; group > 0)
    note_spawned(i, group, false);
  report(ProgressEvent::Kind::AttemptStarted, i);
}

// ---- settling --------------------------------------------------------------

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
  if (o.transient) finished["transient"] = true;  // a provider's 429/5xx, a dropped connection
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
