// A resume (with or without --replan), phase by phase: Scheduler::prepare_resume.
//
//   1. the edited plan read (--replan), while a stop signal still ends orch;
//   2. the run taken (recover.cc: its lock, its row) and what makes a resume
//      pointless refused (a cancel that came meanwhile, a run that succeeded, a
//      workspace that is gone); a cancel meant for the dead driver cleared;
//   3. what the dead driver left settled (recover.cc, as Engine::recover does);
//   4. the plan loaded: the latest version, or the replacement, parsed and
//      validated (in parallel with reading the step rows, for a large plan);
//   5. the run row reopened, and in one transaction: the step states rebuilt
//      from their rows (done stays done, the rest gets another chance), each
//      step's attempts budget counted, and with --replan the done steps whose
//      fingerprint changed reset with their descendants;
//   6. the budget restored from the attempts.
// Nothing but phase 3 is written until the plan is known to be valid.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <future>

#include "engine/attempt_render.h"
#include "engine/scheduler.h"
#include "engine/scheduler_internal.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "util/strings.h"

namespace orch {

namespace fs = std::filesystem;
using detail::stored_plan_path;

namespace {

// From this size on (a plan of several thousand steps) the resume parses and
// validates the plan on a second thread; below it a thread costs more than it saves.
constexpr std::size_t kParallelResumeBytes = 256 * 1024;

std::string diagnostics_text(const Diagnostics& d) {
  std::string out;
  for (const auto& x : d) out += (out.empty() ? "" : "\n") + x.to_string();
  return out;
}

// The stored plan was valid when the run started; an orch that checks more may
// refuse it now. What to say then: resume with a corrected copy — or, when every
// problem is a file this resume was not given (pass --registry/--models/--workers
// FILE), with that file. `name`: the plan as diagnostics name it; `replanned`:
// the plan is the --replan one.
Error resume_plan_refused(const Diagnostics& problems, bool replanned, const std::string& name,
                          const std::string& run_id) {
  // Said as `orch run` says it: what is wrong first (after orch's "orch: "),
  // then each problem on a line of its own, FILE:LINE first.
  std::string listed = diagnostics_text(problems);
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
  if (replanned) {
    listed = fmt::format("{} is not valid ({} problem{}); nothing was resumed:\n{}", name, problems.size(),
                         problems.size() == 1 ? "" : "s", listed);
  } else if (only_missing_files) {
    std::string again;
    for (const auto& flag : flags) again += fmt::format(" {} FILE", flag);
    listed = fmt::format(
        "the plan stored with run {} names executors this resume has no file for:\n{}\nresume it "
        "with the file{} the run was started with: orch resume {}{}",
        run_id, listed, flags.size() == 1 ? "" : "s", run_id, again);
  } else {
    listed = fmt::format(
        "the plan stored with run {} does not validate any more:\n{}\nresume it with a corrected "
        "copy: orch resume {} --replan PLAN",
        run_id, listed, run_id);
  }
  return Error{ErrorCode::InvalidInput, listed};
}

}  // namespace

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
  const RunTaken taken = ORCH_TRY(take_run(run_id));
  // `orch cancel` took the lock first and cancelled it: the cancel, which came
  // while this resume was starting, wins. Resuming a cancelled run stays possible.
  if (taken.cancelled_meanwhile)
    return fail(ErrorCode::InvalidInput,
                fmt::format("run '{}' was cancelled while this resume was starting (orch cancel); to go on "
                            "anyway: orch resume {}",
                            run_id, run_id));
  ORCH_TRY(clear_stale_cancel(taken.locking_ms));
  // Nothing is left to do, and going through the motions would rewrite when the
  // run finished. With --replan, changed steps are what there is to do.
  if (run_.status == RunStatus::Succeeded && !replan_path)
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("run '{}' already succeeded: nothing to resume (to re-run steps of an edited plan: "
                    "orch resume {} --replan PLAN)",
                    run_.id, run_.id));
  ORCH_TRY(workspace_is_a_folder());
  ORCH_TRY(prepare_run_folder());

  // What the driver that died left is dealt with before the plan is even read,
  // whatever it says now: a stored plan that no longer validates (perhaps because
  // of those very leftovers: a `writes:` path an attempt made a symlink out of the
  // workspace) must not leave them running or the workspace half-changed. What
  // this records is true of the previous driver whether or not this resume goes
  // on, so it commits on its own.
  const RunStatus previous = run_.status;
  ORCH_TRY(settle_dead_driver());
  // Taken over for this resume (a resume after it starts from what it finds).
  resume_unrestored_ = std::move(recovered_.steps_failed);
  const int orphans = recovered_.processes_killed;
  recovered_ = Recovery{};
  recovered_run_.clear();

  ResumePlan plan = ORCH_TRY(load_resume_plan(replan_path, std::move(replan_text)));
  reopen_run(replan_path.has_value(), plan.path);

  ORCH_TRY(writer_.begin());
  // Inside the transaction, which holds the ledger's write lock: a cancel that
  // came after this process took the run's lock (`orch cancel` saw it held) is
  // kept in the row written below, and the loop's first turn acts on it.
  run_.cancel_requested = ORCH_TRY(store_.cancel_requested(run_.id));
  writer_.event(
      "run_resumed", "", 0,
      {{"previous_status", run_status_name(previous)}, {"pid", getpid()}, {"orphans_killed", orphans}});
  run_.budget_json = budget_limits_json(plan_.budget);
  std::vector<bool> changed = ORCH_TRY(rebuild_step_states(plan.rows));
  ORCH_TRY(count_budget_attempts());
  if (replan_path) ORCH_TRY(reset_changed_steps(plan, changed));
  // Through the writer, which makes them again should the store lose the transaction.
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (!changed[i]) continue;
    steps_[i].rec.run_id = run_.id;
    writer_.write([this, i] { return store_.upsert_step(steps_[i].rec); });  // unchanged until the commit
  }
  writer_.run_row(run_);
  if (writer_.failed()) return std::unexpected(*writer_.error());
  ORCH_TRY(commit());
  return restore_budget();
}

Expected<void> Scheduler::clear_stale_cancel(std::int64_t locking_ms) {
  // A cancel asked of the process that drove the run before (it died before it
  // could act on it) is not one for this resume: it is cleared now, so that one
  // that lands from now on (while the plan is read and checked) is seen later.
  // One that landed since this process took the lock (`orch cancel` found it
  // held) is for this resume, and kept: the requests' events tell them apart,
  // read in the transaction that clears (which holds the ledger's write lock).
  if (!run_.cancel_requested) return {};
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
  return store_.commit();
}

Expected<Scheduler::ResumePlan> Scheduler::load_resume_plan(const std::optional<std::string>& replan_path,
                                                            std::optional<std::string> replan_text) {
  // The plan: the latest version in the ledger, or the replacement.
  ResumePlan p;
  PlanVersion stored = ORCH_TRY(store_.latest_plan(run_.id));
  p.text = std::move(stored.text);
  p.path = std::move(stored.path);
  if (replan_path) {
    p.text = std::move(*replan_text);
    // From standard input: no file, so no folder of its own (the workspace's).
    p.path = *replan_path == kStdinPlan ? "" : stored_plan_path(*replan_path);
  }
  // For a large plan a second thread reads the step rows while this one parses
  // the plan, then validates it while this one builds the scheduler's state from
  // it: at 100,000 steps each of the four takes hundreds of milliseconds, and none
  // needs another's result. The parse, which allocates the most, stays on this
  // thread: its heap is on huge pages (util/heap_pages.h), a thread's is not, and
  // the parse faulted in 30,000 4 KiB pages on the second thread. Nothing
  // more is written to the ledger until the plan is valid.
  const auto launch = p.text.size() >= kParallelResumeBytes ? std::launch::async : std::launch::deferred;
  const bool from_stdin = replan_path && *replan_path == kStdinPlan;
  const std::string name = from_stdin       ? plan_display_name(kStdinPlan)
                           : p.path.empty() ? "<stored plan>"
                                            : p.path;
  // `path` is the plan's file ("" for none: its folder is the workspace's);
  // diagnostics name it `name` all the same.
  auto reading = std::async(launch, [this] { return store_.steps(run_.id); });
  LoadResult loaded = parse_plan(p.text, name);
  auto rows_read = reading.get();
  // Every problem at once, as `orch run` and `orch validate` list them: the
  // checks of what could be read run even when some fields could not be read
  // (a plan that could not be parsed at all gets only its syntax errors).
  if (!loaded.diagnostics.empty()) {
    ValidateOptions checks = validate_options_for(run_.workspace, p.path, *executors_);
    checks.file_name = name;
    return std::unexpected(
        resume_plan_refused(plan_problems(loaded, checks), replan_path.has_value(), name, run_.id));
  }
  if (!rows_read) return std::unexpected(rows_read.error());
  p.rows = std::move(*rows_read);
  loaded.plan.source_path = p.path;
  plan_ = std::move(loaded.plan);
  ValidateOptions checks = validate_options_for(run_.workspace, p.path, *executors_);
  checks.file_name = name;
  auto validating = std::async(launch, [this, &checks] { return validate_plan(plan_, checks); });
  auto state = index_plan_state();  // reads plan_ only, as the validation does
  if (Diagnostics problems = validating.get(); !problems.empty())
    return std::unexpected(resume_plan_refused(problems, replan_path.has_value(), name, run_.id));
  ORCH_TRY(state);
  executors_->warm_up(plan_);
  return p;
}

void Scheduler::reopen_run(bool replanned, const std::string& plan_path) {
  run_.status = RunStatus::Running;
  run_.owner_pid = static_cast<int>(getpid());
  run_.finished_at = 0;
  run_.exit_code = -1;
  run_.reason.clear();
  run_.cancel_requested = false;
  // -j wins; else an edited plan that says how wide to go says it for the rest of the run.
  if (options_.concurrency) {
    run_.concurrency = *options_.concurrency;
  } else if (replanned && plan_.concurrency) {
    run_.concurrency = *plan_.concurrency;
  }
  // Once a run keeps going it keeps going: `--keep-going` need not be given again,
  // and a --replan plan that says `on_failure: abort` does not turn it off.
  if (options_.keep_going || plan_.on_failure == OnFailure::Continue) run_.keep_going = true;
  if (replanned) {  // the run is now the edited plan's: `orch runs` and `status` say so
    run_.name = plan_.name;
    run_.plan_path = plan_path;
  }
}

Expected<std::vector<bool>> Scheduler::rebuild_step_states(std::vector<StepRecord>& rows) {
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
        if (moved) writer_.write([this, row = r] { return store_.upsert_step(row); });
        continue;
      }
      r.status = StepStatus::Skipped;
      r.reason = "removed from the plan by --replan";
      writer_.write([this, row = r] { return store_.upsert_step(row); });
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
  return changed;
}

Expected<void> Scheduler::count_budget_attempts() {
  // A step's attempts budget counts its attempts since it last succeeded, across
  // resumes (its attempts cap, attempts_counted, starts over for a step that ended).
  for (StepState& s : steps_) {
    if (!s.step->budget.attempts || s.rec.last_attempt == 0) continue;
    const auto made = ORCH_TRY(store_.attempts(run_.id, s.rec.step_id));
    for (auto a = made.rbegin(); a != made.rend() && a->status != AttemptStatus::Succeeded; ++a)
      if (a->counted) ++s.budget_attempts;
  }
  return {};
}

Expected<void> Scheduler::reset_changed_steps(const ResumePlan& plan, std::vector<bool>& changed) {
  ++run_.plan_version;
  run_.plan_path = plan.path;
  writer_.write([this, version = PlanVersion{run_.id, run_.plan_version, plan.path, plan.text, now_ms()}] {
    return store_.insert_plan_version(version);
  });
  writer_.event("plan_replaced", "", 0, {{"version", run_.plan_version}, {"path", plan.path}});
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
  return {};
}

Expected<void> Scheduler::restore_budget() {
  // What was spent comes from the attempts themselves: the run row is written at
  // most every kRunRowInterval, so after kill -9 it may lag the last attempts.
  AttemptTotals totals = ORCH_TRY(store_.attempt_totals(run_.id));
  Spend spent{totals.tokens, totals.cost_usd, totals.counted};
  budget_.emplace(plan_.budget, spent, run_.spent_wall_ms);
  return {};
}

}  // namespace orch
