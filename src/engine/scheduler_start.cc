// How an attempt starts, for the scheduler (scheduler.h): the risk guard's gate
// (refuse, pause for approval, or go), the questions it asks a person, and the
// attempt itself — rendered (placeholders filled, environment, the retry's
// reason), its `writes:` saved first, its row written ahead, then started on
// the loop.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "engine/attempt_render.h"
#include "engine/risk_gate.h"
#include "engine/scheduler.h"
#include "engine/scheduler_internal.h"
#include "engine/snapshot.h"
#include "orch/report.h"
#include "orch/workspace.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace {

// The host name of this machine, read once: where an attempt's log files and
// snapshot are (AttemptRecord::host).
const std::string& this_machine() {
  static const std::string name = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return std::string();
    return std::string(buf);
  }();
  return name;
}

}  // namespace

namespace fs = std::filesystem;
using detail::within;
using std::chrono::milliseconds;

Scheduler::Gate Scheduler::risk_gate(int i) {
  StepState& s = steps_[static_cast<std::size_t>(i)];
  const Step& step = *s.step;
  const RiskLevel level = s.executor->risk(step);
  const char* level_name = risk_level_name(level);
  const RiskGate::ByLevel first =
      RiskGate::by_level(step, level, level == RiskLevel::Critical ? s.executor->risk_reason(step) : "");
  if (first.kind == RiskGate::ByLevel::Kind::Go) {
    s.cleared = true;
    return Gate::Go;
  }
  if (first.kind == RiskGate::ByLevel::Kind::Refused) {
    writer_.event("step_refused", step.id, 0, {{"risk", level_name}, {"reason", first.reason}});
    mark_failed(i, first.reason);
    return Gate::Refused;
  }
  // What a human is asked to approve: the exact command and inputs, rendered.
  ApprovalRequest req;
  req.run_id = run_.id;
  req.step_id = step.id;
  req.goal = step.goal;
  req.risk = level;
  req.stop_requested = [] { return SignalWatch::pending(); };
  const ResultLookup results = result_lookup();
  req.command = describe_for_approval(step, *s.executor, results, run_.id, run_.workspace,
                                      s.rec.last_attempt + 1, s.previous_failure, *secrets_, true);
  // What an approval is bound to: the step's fingerprint and the command the
  // executor would run for it, which for a registry tool comes from the registry,
  // not the step (rendered like the fingerprint, as attempt 0, so a retry does not
  // change it; unmasked, so the secrets known at the time do not either). Either
  // changing voids an `orch approve`.
  const std::string fingerprint = fingerprint_of(
      step_fingerprint(step, results, plan_dir(), default_post_of(i)).value_or("") + "\n" +
      describe_for_approval(step, *s.executor, results, run_.id, run_.workspace, 0, "", *secrets_, false));

  const RiskGate::Approval approval = gate_.approval(step.id, level, fingerprint, s.answer);
  switch (approval.kind) {
    case RiskGate::Approval::Kind::Ask:
      gate_.queue_question(i, std::move(req));
      return Gate::Ask;
    case RiskGate::Approval::Kind::Approved:
      // `orch approve` wrote its own event; the others are recorded here.
      if (approval.by != "orch approve")
        writer_.event("step_approved", step.id, 0,
                      {{"risk", level_name}, {"by", approval.by}, {"fingerprint", fingerprint}});
      s.cleared = true;
      return Gate::Go;
    case RiskGate::Approval::Kind::Wait:
      break;
  }
  if (s.answer < 0) writer_.event("approval_declined", step.id, 0, {{"risk", level_name}, {"by", "prompt"}});
  writer_.event("approval_requested", step.id, 0,
                {{"risk", level_name}, {"command", req.command}, {"fingerprint", fingerprint}});
  s.rec.status = StepStatus::AwaitingApproval;
  s.rec.reason = RiskGate::awaiting_reason(level, run_.id, step.id);
  save_step(s);
  report(ProgressEvent::Kind::StepFinished, i, s.rec.reason);
  return Gate::Wait;
}

void Scheduler::ask_pending_questions() {
  gate_.ask_questions(
      options_.ask_approval, [this] { return stop_ != StopKind::None || SignalWatch::pending(); },
      [this](int i, bool yes) { steps_[static_cast<std::size_t>(i)].answer = yes ? 1 : -1; });
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
  s.flight().recorded = false;

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
  spec.runs_on = step.runs_on;
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
  a.host = this_machine();

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

  s.flight().row_unwritten = true;
  writer_.attempt_started(i);
  save_step(s);
  writer_.event("attempt_started", step.id, number);
  s.in_flight = true;
  s.flight().open_files = s.executor->open_files_per_attempt();
  in_flight_.add(i, !step.writes.empty(), s.flight().open_files);
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
    // Queued with its row for another process to claim: taken back.
    if (s.flight().recorded) s.executor->withdraw(s.flight().spec, s.flight().cancel_reason);
    s.flight().recorded = false;
    queue_failure(AttemptEnding::Cancelled, s.flight().cancel_reason);
    return;
  }
  s.flight().recorded = false;
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

}  // namespace orch
