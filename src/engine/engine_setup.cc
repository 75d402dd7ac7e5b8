// Building the scheduler's state: a new run, or a resume (with or without --replan).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <future>
#include <random>
#include <sstream>
#include <thread>

#include "engine/attempt_render.h"
#include "engine/orphans.h"
#include "engine/scheduler.h"
#include "engine/snapshot.h"
#include "orch/plan_loader.h"
#include "orch/report.h"
#include "orch/validate.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace fs = std::filesystem;

namespace {

// Whether the process recorded as driving `run` is alive (a run that is not
// `running` has none).
bool driver_alive(const RunRecord& run) {
  if (run.status != RunStatus::Running || run.owner_pid <= 0) return false;
  return ::kill(run.owner_pid, 0) == 0 || errno == EPERM;
}

// From this size on (a plan of several thousand steps) prepare_resume parses and
// validates the plan on a second thread; below it a thread costs more than it saves.
constexpr std::size_t kParallelResumeBytes = 256 * 1024;

// "20261130-061845-e3a7": the creation time (UTC, on the run's clock) and 16 random bits.
std::string new_run_id(std::int64_t wall_ms) {
  std::time_t t = static_cast<std::time_t>(wall_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::random_device rd;
  return fmt::format("{:04}{:02}{:02}-{:02}{:02}{:02}-{:04x}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, rd() & 0xffff);
}

int default_concurrency() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

std::string diagnostics_text(const Diagnostics& d) {
  std::string out;
  for (const auto& x : d) out += (out.empty() ? "" : "\n") + x.to_string();
  return out;
}

}  // namespace

Expected<void> Scheduler::load_plan_state(Plan plan) {
  plan_ = std::move(plan);
  return index_plan_state();
}

Expected<void> Scheduler::index_plan_state() {
  std::vector<StepState> old = std::move(steps_);
  steps_.clear();
  steps_.resize(plan_.steps.size());
  index_of_.clear();
  for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
    index_of_[plan_.steps[i].id] = static_cast<int>(i);
  }
  for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
    StepState& s = steps_[i];
    s.step = &plan_.steps[i];
    s.executor = executors_->find(s.step->executor);
    if (s.executor == nullptr)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("step '{}': unknown executor '{}'", s.step->id, s.step->executor));
    for (const auto& d : s.step->deps) {
      auto it = index_of_.find(d);
      if (it == index_of_.end())
        return fail(ErrorCode::InvalidInput,
                    fmt::format("step '{}': unknown dependency '{}'", s.step->id, d));
      steps_[static_cast<std::size_t>(it->second)].children.push_back(static_cast<int>(i));
    }
  }
  for (auto& o : old) {
    auto it = index_of_.find(o.rec.step_id);
    if (it != index_of_.end()) steps_[static_cast<std::size_t>(it->second)].rec = std::move(o.rec);
  }
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    StepState& s = steps_[i];
    if (s.rec.step_id.empty()) {
      s.rec.run_id = run_.id;
      s.rec.step_id = s.step->id;
      s.rec.status = StepStatus::Pending;
    }
    s.rec.idx = static_cast<int>(i);
    s.rec.goal = s.step->goal;
    s.rec.executor = s.step->executor;
  }
  for (const auto& id : options_.approve_steps) {
    if (index_of_.contains(id)) continue;
    std::vector<std::string> ids;
    for (const auto& st : plan_.steps) ids.push_back(st.id);
    return fail(ErrorCode::InvalidInput,
                fmt::format("--approve {}: the plan has no step '{}'{}", id, id, did_you_mean(id, ids)));
  }
  return {};
}

namespace {
// The plan's path as the run records it: absolute, its folder's `.`, `..` and
// symlinks resolved as the kernel did to open it (`ws/../p.yaml` is
// `/abs/p.yaml`). The file's own name is kept: a plan named through a symlink
// keeps the link's folder as its folder (its relative paths), as the run had.
std::string stored_plan_path(const fs::path& path) {
  const fs::path absolute = fs::absolute(path);
  std::error_code ec;
  fs::path folder = fs::weakly_canonical(absolute.parent_path(), ec);
  return (ec ? absolute.lexically_normal() : folder / absolute.filename()).string();
}
}  // namespace

Expected<void> Scheduler::prepare_new(Plan plan, const std::string& plan_text) {
  executors_->warm_up(plan);
  std::error_code ec;
  fs::path workspace = fs::canonical(options_.workspace, ec);
  if (ec)
    return fail(ErrorCode::InvalidInput, fmt::format("workspace '{}' is not a usable folder: {}",
                                                     options_.workspace.string(), ec.message()));
  run_ = RunRecord{};
  run_.id = new_run_id(now_ms());
  writer_.set_run(run_.id);
  run_.name = plan.name;
  run_.plan_path = plan.source_path.empty() ? "" : stored_plan_path(plan.source_path);
  run_.workspace = workspace.string();
  run_.concurrency = options_.concurrency.value_or(plan.concurrency.value_or(default_concurrency()));
  run_.keep_going = options_.keep_going || plan.on_failure == OnFailure::Continue;
  run_.created_at = run_.updated_at = now_ms();
  run_.owner_pid = static_cast<int>(getpid());
  run_.status = RunStatus::Running;
  lock_.emplace(ORCH_TRY(RunLock::acquire(store_.folder(), run_.id)));

  ORCH_TRY(load_plan_state(std::move(plan)));
  ORCH_TRY(prepare_run_folder());
  budget_.emplace(plan_.budget, Spend{}, 0);
  run_.budget_json = budget_limits_json(plan_.budget);

  ORCH_TRY(writer_.begin());
  ORCH_TRY(store_.insert_run(run_));
  ORCH_TRY(store_.insert_plan_version(PlanVersion{run_.id, 1, run_.plan_path, plan_text, run_.created_at}));
  for (auto& s : steps_) ORCH_TRY(store_.insert_step(s.rec));
  writer_.event("run_started", "", 0,
                {{"plan", run_.plan_path},
                 {"steps", steps_.size()},
                 {"concurrency", run_.concurrency},
                 {"pid", getpid()}});
  if (writer_.failed()) return std::unexpected(*writer_.error());
  return commit();
}

Expected<void> Scheduler::prepare_resume(const std::string& run_id,
                                         const std::optional<std::string>& replan_path) {
  resumed_ = true;
  // An edited plan is read first, while a stop signal still ends orch at once:
  // a Ctrl-C while it is typed or piped in must not resume on what came so far.
  std::optional<std::string> replan_text;
  if (replan_path) replan_text = ORCH_TRY(read_plan_file(*replan_path));
  // From here a SIGINT/SIGTERM is caught and acted on when the loop starts: one
  // that came while the interrupted attempts' `writes:` are restored must not
  // kill orch with the workspace half put back.
  watch_signals();
  auto found = ORCH_TRY(store_.find_run(run_id));
  if (!found) return std::unexpected(store_.no_run(run_id));
  const RunStatus status_before_lock = found->status;
  // On the clock `orch cancel` stamps its requests with (the system's, whatever
  // clock the engine runs on): a request stamped from now on came after the lock.
  const std::int64_t locking_ms = Clock::system().wall_ms();
  auto lock = RunLock::acquire(store_.folder(), run_id);
  if (!lock && lock.error().code == ErrorCode::Busy && !driver_alive(*found)) {
    // No live process drives the run, yet the lock is held: by `orch cancel`,
    // for the moment it takes to record the cancel of an idle run (or by
    // another resume just starting). A cancel is named as one, not as a driver.
    for (int i = 0; i < 40 && RunLock::is_held(store_.folder(), run_id); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    auto now = store_.find_run(run_id);
    if (now && *now && (*now)->status == RunStatus::Cancelled && status_before_lock != RunStatus::Cancelled)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("run '{}' was cancelled while this resume was starting (orch cancel); to go on "
                              "anyway: orch resume {}",
                              run_id, run_id));
    // Let go meanwhile without a cancel (a resume that failed to start): try again.
    if (!RunLock::is_held(store_.folder(), run_id)) lock = RunLock::acquire(store_.folder(), run_id);
  }
  if (!lock) return std::unexpected(lock.error());
  lock_.emplace(std::move(*lock));
  // Read again under the lock: a process that drove the run until a moment ago
  // wrote its final row before it let the lock go, and the row read before
  // taking the lock may predate that.
  found = ORCH_TRY(store_.find_run(run_id));
  if (!found) return std::unexpected(store_.no_run(run_id));
  run_ = *found;
  writer_.set_run(run_.id);
  // `orch cancel` took the lock first and cancelled it: the cancel, which came
  // while this resume was starting, wins. Resuming a cancelled run stays possible.
  if (run_.status == RunStatus::Cancelled && status_before_lock != RunStatus::Cancelled)
    return fail(ErrorCode::InvalidInput,
                fmt::format("run '{}' was cancelled while this resume was starting (orch cancel); to go on "
                            "anyway: orch resume {}",
                            run_.id, run_.id));
  // A cancel asked of the process that drove the run before (it died before it
  // could act on it) is not one for this resume: it is cleared now, so that one
  // that lands from now on (while the plan is read and checked) is seen below.
  // One that landed since this process took the lock (`orch cancel` found it
  // held) is for this resume, and kept: the requests' events tell them apart,
  // read in the transaction that clears (which holds the ledger's write lock).
  if (run_.cancel_requested) {
    ORCH_TRY(store_.begin());
    auto cleared = [&]() -> Expected<void> {
      for (const EventRecord& e : ORCH_TRY(store_.events_of_kind(run_.id, "cancel_requested")))
        if (e.ts >= locking_ms) return {};
      run_.cancel_requested = false;
      return store_.update_run(run_);
    }();
    if (!cleared) {
      (void)store_.rollback();
      return std::unexpected(cleared.error());
    }
    ORCH_TRY(store_.commit());
  }
  // Nothing is left to do, and going through the motions would rewrite when the
  // run finished. With --replan, changed steps are what there is to do.
  if (run_.status == RunStatus::Succeeded && !replan_path)
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("run '{}' already succeeded: nothing to resume (to re-run steps of an edited plan: "
                    "orch resume {} --replan PLAN)",
                    run_.id, run_.id));
  // As `orch run` does for a new run: a workspace that is gone is said before
  // anything is recorded, not found out by a step's attempt.
  if (std::error_code ec; !fs::is_directory(run_.workspace, ec))
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("the workspace of run '{}', {}, is not a folder any more: restore it, then resume",
                    run_.id, run_.workspace));
  ORCH_TRY(prepare_run_folder());

  // What the driver that died left is dealt with before the plan is even read,
  // whatever it says now: a stored plan that no longer validates (perhaps because
  // of those very leftovers: a `writes:` path an attempt made a symlink out of the
  // workspace) must not leave them running or the workspace half-changed. Its
  // processes die; its attempts are closed as interrupted, their `writes:` put
  // back and their steps charged what they spent. What this records is true of
  // the previous driver whether or not this resume goes on, so it commits on its own.
  const RunStatus previous = run_.status;
  const int orphans = ORCH_TRY(kill_orphans(&store_, run_.id));
  ClosedAttempts interrupted;
  ORCH_TRY(store_.begin());
  auto closed = [&]() -> Expected<void> {
    // A driver that died left the row lagging what it did (rewritten at most every
    // 250 ms, or every second while idle): its wall time is moved on to its last
    // sign of life, as `orch status` and `orch cancel` take it, so that the budget
    // goes on from there and the attempts it watched get their durations.
    ORCH_TRY(refresh_running_totals(store_, run_, false, now_ms()));
    interrupted = ORCH_TRY(close_interrupted_attempts(store_, run_.id, now_ms(), run_.updated_at));
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
        row->finished_at = now_ms();
        ORCH_TRY(store_.append_event(EventRecord{0, run_.id, now_ms(), "step_failed", a.step_id, a.number,
                                                 json_text(nlohmann::json{{"reason", row->reason}})}));
        resume_unrestored_.push_back(a.step_id);
      }
      ORCH_TRY(store_.upsert_step(*row));
    }
    if (previous == RunStatus::Running) ORCH_TRY(store_.update_run(run_));
    return store_.commit();
  }();
  if (!closed) {
    (void)store_.rollback();
    return std::unexpected(closed.error());
  }
  remove_spent_snapshots(interrupted);
  discard_spawn_journal(store_.folder(), run_.id);

  // The plan: the latest version in the ledger, or the replacement.
  PlanVersion stored = ORCH_TRY(store_.latest_plan(run_.id));
  std::string text = stored.text;
  std::string path = stored.path;
  if (replan_path) {
    text = std::move(*replan_text);
    // From standard input: no file, so no folder of its own (the workspace's).
    path = *replan_path == kStdinPlan ? "" : stored_plan_path(*replan_path);
  }
  // For a large plan a second thread reads the step rows while this one parses
  // the plan, then validates it while this one builds the scheduler's state from
  // it: at 100,000 steps each of the four takes hundreds of milliseconds, and none
  // needs another's result. The parse, which allocates the most, stays on this
  // thread: its heap is on huge pages (util/heap_pages.h), a thread's is not, and
  // the parse faulted in 30,000 4 KiB pages on the second thread. Nothing
  // more is written to the ledger until the plan is valid.
  const auto launch = text.size() >= kParallelResumeBytes ? std::launch::async : std::launch::deferred;
  const bool from_stdin = replan_path && *replan_path == kStdinPlan;
  const std::string name = from_stdin ? plan_display_name(kStdinPlan) : path.empty() ? "<stored plan>" : path;
  // `path` is the plan's file ("" for none: its folder is the workspace's);
  // diagnostics name it `name` all the same.
  auto reading = std::async(launch, [this] { return store_.steps(run_.id); });
  LoadResult loaded = parse_plan(text, name);
  auto rows_read = reading.get();
  // The stored plan was valid when the run started; an orch that checks more may
  // refuse it now. Say what to do then: resume with a corrected copy.
  auto invalid = [&](const Diagnostics& problems) {
    // Said as `orch run` says it: what is wrong first (after orch's "orch: "),
    // then each problem on a line of its own, FILE:LINE first.
    std::string listed = diagnostics_text(problems);
    // A problem that says to pass --registry/--models/--workers comes from a file this
    // resume was not given, not from the plan: when every problem is one, the plan is fine
    // and the advice is to give the file again, not to edit the plan.
    std::vector<std::string> flags;
    bool only_missing_files = !problems.empty();
    for (const auto& d : problems) {
      bool missing_file = false;
      for (const char* flag : {"--registry", "--models", "--workers"}) {
        if (d.message.find(fmt::format("pass {} FILE", flag)) == std::string::npos) continue;
        missing_file = true;
        if (std::find(flags.begin(), flags.end(), flag) == flags.end()) flags.push_back(flag);
      }
      only_missing_files = only_missing_files && missing_file;
    }
    if (replan_path) {
      listed = fmt::format("{} is not valid ({} problem{}); nothing was resumed:\n{}", name, problems.size(),
                           problems.size() == 1 ? "" : "s", listed);
    } else if (only_missing_files) {
      std::string again;
      for (const auto& flag : flags) again += fmt::format(" {} FILE", flag);
      listed = fmt::format(
          "the plan stored with run {} names executors this resume has no file for:\n{}\nresume it "
          "with the file{} the run was started with: orch resume {}{}",
          run_.id, listed, flags.size() == 1 ? "" : "s", run_.id, again);
    } else {
      listed = fmt::format(
          "the plan stored with run {} does not validate any more:\n{}\nresume it with a corrected "
          "copy: orch resume {} --replan PLAN",
          run_.id, listed, run_.id);
    }
    return fail(ErrorCode::InvalidInput, listed);
  };
  // Every problem at once, as `orch run` and `orch validate` list them: the
  // checks of what could be read run even when some fields could not be read
  // (a plan that could not be parsed at all gets only its syntax errors).
  if (!loaded.diagnostics.empty()) {
    ValidateOptions checks = validate_options_for(run_.workspace, path, *executors_);
    checks.file_name = name;
    return invalid(plan_problems(loaded, checks));
  }
  if (!rows_read) return std::unexpected(rows_read.error());
  std::vector<StepRecord> rows = std::move(*rows_read);
  loaded.plan.source_path = path;
  plan_ = std::move(loaded.plan);
  ValidateOptions checks = validate_options_for(run_.workspace, path, *executors_);
  checks.file_name = name;
  auto validating = std::async(launch, [this, &checks] { return validate_plan(plan_, checks); });
  auto state = index_plan_state();  // reads plan_ only, as the validation does
  if (Diagnostics problems = validating.get(); !problems.empty()) return invalid(problems);
  ORCH_TRY(state);
  executors_->warm_up(plan_);

  run_.status = RunStatus::Running;
  run_.owner_pid = static_cast<int>(getpid());
  run_.finished_at = 0;
  run_.exit_code = -1;
  run_.reason.clear();
  run_.cancel_requested = false;
  // -j wins; else an edited plan that says how wide to go says it for the rest of the run.
  if (options_.concurrency) {
    run_.concurrency = *options_.concurrency;
  } else if (replan_path && plan_.concurrency) {
    run_.concurrency = *plan_.concurrency;
  }
  // Once a run keeps going it keeps going: `--keep-going` need not be given again,
  // and a --replan plan that says `on_failure: abort` does not turn it off.
  if (options_.keep_going || plan_.on_failure == OnFailure::Continue) run_.keep_going = true;
  if (replan_path) {  // the run is now the edited plan's: `orch runs` and `status` say so
    run_.name = plan_.name;
    run_.plan_path = path;
  }

  ORCH_TRY(writer_.begin());
  // Inside the transaction, which holds the ledger's write lock: a cancel that
  // came after this process took the run's lock (`orch cancel` saw it held) is
  // kept in the row written below, and the loop's first turn acts on it.
  run_.cancel_requested = ORCH_TRY(store_.cancel_requested(run_.id));
  writer_.event(
      "run_resumed", "", 0,
      {{"previous_status", run_status_name(previous)}, {"pid", getpid()}, {"orphans_killed", orphans}});

  run_.budget_json = budget_limits_json(plan_.budget);

  // Step rows: done stays done; everything else gets another chance. Only rows
  // that change are written (a 100,000-step run killed early is mostly pending).
  std::vector<bool> changed(steps_.size(), true);  // true until a ledger row says otherwise
  // Steps --replan removed keep their rows, numbered after the plan's steps so
  // that no two rows share an idx (a new step may take a removed one's place).
  int removed_idx = static_cast<int>(plan_.steps.size());
  for (StepRecord& r : rows) {
    auto it = index_of_.find(r.step_id);
    // Failed just now, its writes not put back: it stays failed (the run loop
    // applies the plan's on_failure to it before it starts anything).
    const bool unrestored = std::find(resume_unrestored_.begin(), resume_unrestored_.end(), r.step_id) !=
                            resume_unrestored_.end();
    if (it == index_of_.end()) {  // a step the new plan no longer has
      const bool moved = r.idx != removed_idx;
      r.idx = removed_idx++;
      if (r.status == StepStatus::Done || unrestored) {
        if (moved) ORCH_TRY(store_.upsert_step(r));
        continue;
      }
      r.status = StepStatus::Skipped;
      r.reason = "removed from the plan by --replan";
      ORCH_TRY(store_.upsert_step(r));
      writer_.event("step_skipped", r.step_id, 0, {{"reason", r.reason}});
      continue;
    }
    const std::size_t i = static_cast<std::size_t>(it->second);
    const Step& step = plan_.steps[i];
    changed[i] = r.idx != static_cast<int>(i) || r.goal != step.goal || r.executor != step.executor;
    if (r.status != StepStatus::Done && !unrestored &&
        (r.status != StepStatus::Pending || r.attempts_counted != 0 || !r.reason.empty() ||
         r.finished_at != 0)) {
      // A step that ended (failed, skipped, cancelled) or was paused gets a fresh
      // set of attempts. One the dead process left running or waiting for a retry
      // keeps the attempts it has used: only the interrupted attempt is not
      // counted, or a kill -9 between retries would grant unlimited retries.
      const bool fresh = r.status == StepStatus::Failed || r.status == StepStatus::Skipped ||
                         r.status == StepStatus::Cancelled || r.status == StepStatus::AwaitingApproval;
      if (fresh) {
        writer_.event("step_reset", r.step_id, 0,
                      {{"why", "resume"}, {"previous_status", step_status_name(r.status)}});
        r.attempts_counted = 0;
        if (r.status == StepStatus::Failed) {
          // Its last attempt's failure: the step's reason may already be a "not
          // retried (...); last failure: ..." of an earlier stop, which would nest
          // one level deeper on every resume.
          steps_[i].earlier_failure = r.reason;
          const std::vector<AttemptRecord> tried = ORCH_TRY(store_.attempts(run_.id, r.step_id));
          for (auto a = tried.rbegin(); a != tried.rend(); ++a) {
            if (a->status == AttemptStatus::Interrupted || a->status == AttemptStatus::Running ||
                a->reason.empty())
              continue;
            steps_[i].earlier_failure = a->reason;
            break;
          }
        }
      }
      r.status = StepStatus::Pending;
      r.reason.clear();
      r.finished_at = 0;
      changed[i] = true;
    }
    StepRecord& rec = steps_[i].rec;
    r.idx = rec.idx;
    r.goal = rec.goal;
    r.executor = rec.executor;
    rec = std::move(r);
    // A step that keeps the attempts it used is told, on its next attempt, why
    // the last counted one failed, as if the run had not stopped in between.
    if (rec.status == StepStatus::Pending && rec.attempts_counted > 0) {
      const auto attempts = ORCH_TRY(store_.attempts(run_.id, rec.step_id));
      for (auto a = attempts.rbegin(); a != attempts.rend(); ++a) {
        if (!a->counted || a->status == AttemptStatus::Succeeded) continue;
        StepState& resumed = steps_[i];
        resumed.previous_failure = nul_escaped(a->reason);
        if (!a->output_tail.empty())
          resumed.previous_failure += "\n--- last output ---\n" + nul_escaped(a->output_tail);
        resumed.last_failure_key = a->reason;
        break;
      }
    }
  }

  // A step's attempts budget counts its attempts since it last succeeded, across
  // resumes (its attempts cap, attempts_counted, starts over for a step that ended).
  for (StepState& s : steps_) {
    if (!s.step->budget.attempts || s.rec.last_attempt == 0) continue;
    const auto made = ORCH_TRY(store_.attempts(run_.id, s.rec.step_id));
    for (auto a = made.rbegin(); a != made.rend() && a->status != AttemptStatus::Succeeded; ++a)
      if (a->counted) ++s.budget_attempts;
  }

  if (replan_path) {
    ++run_.plan_version;
    run_.plan_path = path;
    ORCH_TRY(store_.insert_plan_version(PlanVersion{run_.id, run_.plan_version, path, text, now_ms()}));
    writer_.event("plan_replaced", "", 0, {{"version", run_.plan_version}, {"path", path}});
    // A done step whose fingerprint changed re-runs, and so do its descendants.
    std::vector<int> order = topological_order(plan_);
    std::vector<bool> reset(steps_.size(), false);
    for (int i : order) {
      StepState& s = steps_[static_cast<std::size_t>(i)];
      bool parent_reset = false;
      // A dependency done after this step was: it ran again since (while this step
      // was out of the plan, say), and this step did not run on what it did.
      const std::string* ran_after = nullptr;
      for (const auto& d : s.step->deps) {
        const StepState& parent = steps_[static_cast<std::size_t>(index_of_[d])];
        parent_reset = parent_reset || reset[static_cast<std::size_t>(index_of_[d])];
        if (!ran_after && parent.rec.finished_at > s.rec.finished_at) ran_after = &d;
      }
      if (s.rec.status != StepStatus::Done) {
        reset[static_cast<std::size_t>(i)] = true;
        continue;
      }
      std::string why;
      if (parent_reset) {
        why = "an ancestor re-runs";
      } else if (ran_after) {
        why = fmt::format("dependency '{}' ran again after it", *ran_after);
      } else {
        auto fp = step_fingerprint(*s.step, result_lookup(), plan_dir(),
                                   s.executor ? s.executor->default_post() : std::vector<Postcondition>{});
        if (!fp) {
          why = "cannot render: " + fp.error().message;
        } else if (*fp != s.rec.fingerprint) {
          why = "fingerprint changed";
        }
      }
      if (why.empty()) continue;
      reset[static_cast<std::size_t>(i)] = true;
      s.rec.status = StepStatus::Pending;
      s.rec.attempts_counted = 0;
      // A re-run is a new version of the step: its own budget starts over (what
      // the old one spent stays in its attempts, and so in the plan's totals).
      s.rec.tokens_in = s.rec.tokens_out = 0;
      s.rec.cost_usd = 0;
      s.rec.wall_ms = 0;
      s.budget_attempts = 0;
      s.rec.result.clear();
      s.rec.reason.clear();  // e.g. "done over its budget"
      s.rec.finished_at = 0;
      s.previous_failure.clear();
      s.earlier_failure.clear();
      s.last_failure_key.clear();
      changed[static_cast<std::size_t>(i)] = true;
      writer_.event("step_reset", s.step->id, 0, {{"why", why}});
    }
  }
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (!changed[i]) continue;
    steps_[i].rec.run_id = run_.id;
    ORCH_TRY(store_.upsert_step(steps_[i].rec));
  }
  ORCH_TRY(store_.update_run(run_));
  if (writer_.failed()) return std::unexpected(*writer_.error());
  ORCH_TRY(commit());

  // What was spent comes from the attempts themselves: the run row is written at
  // most every kRunRowInterval, so after kill -9 it may lag the last attempts.
  AttemptTotals totals = ORCH_TRY(store_.attempt_totals(run_.id));
  Spend spent{totals.tokens, totals.cost_usd, totals.counted};
  budget_.emplace(plan_.budget, spent, run_.spent_wall_ms);
  return {};
}

}  // namespace orch
