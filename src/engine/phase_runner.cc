#include "engine/phase_runner.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "orch/clock.h"
#include "util/atomic_file.h"
#include "util/json_text.h"

namespace orch {

namespace fs = std::filesystem;

namespace {

// A run that has not ended: the phase goes on with it. A cancelled run is one
// `orch cancel` stopped; the owner stopped with it, and going on resumes it (its
// cancelled steps run again), as `orch resume` does.
bool unfinished(RunStatus s) {
  return s == RunStatus::Running || s == RunStatus::Interrupted || s == RunStatus::AwaitingApproval ||
         s == RunStatus::Cancelled;
}

}  // namespace

Expected<std::int64_t> owner_spent_tokens(Store& store, OwnerKind kind, const std::string& owner_id) {
  std::int64_t total = 0;
  for (const RunRecord& r : ORCH_TRY(store.owned_runs(kind, owner_id))) total += r.spent_tokens;
  return total;
}

PhaseRunner::PhaseRunner(Store& store, EngineOptions options) : store_(store), options_(std::move(options)) {}

Expected<std::optional<RunRecord>> PhaseRunner::find(const RunOwner& key) {
  for (RunRecord& r : ORCH_TRY(store_.owned_runs(key.kind, key.id)))  // newest first
    if (r.owner == key) return std::optional<RunRecord>(std::move(r));
  return std::optional<RunRecord>();
}

Expected<PhaseResult> PhaseRunner::run(const PhaseRequest& request) {
  if (request.key.kind == OwnerKind::None || request.key.id.empty())
    return fail(ErrorCode::Internal, "a phase needs an owner (kind and id)");
  const std::optional<RunRecord> existing = ORCH_TRY(find(request.key));
  const bool capped = request.tokens_left.has_value();
  const std::int64_t left = capped ? *request.tokens_left : -1;
  PhaseResult result;
  if (existing) {
    const bool raised = capped && existing->status == RunStatus::BudgetExhausted && left > 0;
    bool rerun = unfinished(existing->status) || raised;
    if (!rerun && request.rerun_ended) rerun = ORCH_TRY(request.rerun_ended(*existing));
    if (!rerun) {
      result.start = PhaseStart::Ended;
      result.run_id = existing->id;
      result.status = existing->status;
      result.reason = existing->reason;
      return result;
    }
    result.start = raised ? PhaseStart::ResumedUnderRaisedCap : PhaseStart::Resumed;
  } else if (capped && left <= 0) {
    result.start = PhaseStart::NoBudget;
    result.status = RunStatus::BudgetExhausted;
    result.reason = "nothing is left of the spend cap";
    return result;
  }

  if (result.start == PhaseStart::Resumed) {
    LaterEditsContext context;
    context.workspace = options_.workspace;
    context.who = request.who;
    context.resume_command = request.resume_command;
    context.on_note = request.on_note;
    context.now_ms = (options_.clock ? *options_.clock : Clock::system()).wall_ms();
    ORCH_TRY(settle_later_edits(store_, *existing, request.later_edits, context));
  }
  std::optional<BuiltPlan> built;
  if (!existing) built = ORCH_TRY(request.build(left));

  EngineOptions eo = options_;
  eo.owner = request.key;
  current_run_id_ = existing ? existing->id : "";
  eo.on_started = [this, outer = options_.on_started](const std::string& run_id) {
    current_run_id_ = run_id;
    if (outer) outer(run_id);
  };
  Engine engine(store_, std::move(eo));
  if (request.on_start) request.on_start(result.start, current_run_id_);
  Expected<RunOutcome> outcome = std::unexpected(Error{ErrorCode::Internal, "not run"});
  if (result.start == PhaseStart::ResumedUnderRaisedCap) {
    outcome = resume_under_cap(engine, *existing, left);
  } else if (existing) {
    // What the dead driver left (its processes, its attempts left running, their
    // snapshots), settled by the engine before the phase goes on; said when
    // there was anything.
    const Recovery recovered = ORCH_TRY(engine.recover(existing->id));
    if (request.on_note && (recovered.processes_killed > 0 || recovered.attempts_closed > 0))
      request.on_note(fmt::format(
          "{}: run {} recovered: {} attempt{} left running closed as interrupted, {} "
          "process{} killed",
          request.who, existing->id, recovered.attempts_closed, recovered.attempts_closed == 1 ? "" : "s",
          recovered.processes_killed, recovered.processes_killed == 1 ? "" : "es"));
    outcome = engine.resume(existing->id, std::nullopt);
  } else {
    outcome = engine.run(std::move(built->plan), built->text);
  }
  if (!outcome) return std::unexpected(outcome.error());
  result.run_id = outcome->run_id;
  result.status = outcome->status;
  result.reason = outcome->reason;
  return result;
}

// The run's stored plan with a budget of what it spent plus what is left of the
// cap, kept in the run's own folder of the store (docs/store.md).
Expected<RunOutcome> PhaseRunner::resume_under_cap(Engine& engine, const RunRecord& run,
                                                   std::int64_t tokens_left) {
  const PlanVersion stored = ORCH_TRY(store_.latest_plan(run.id));
  nlohmann::ordered_json plan = nlohmann::ordered_json::parse(stored.text, nullptr, false);
  if (plan.is_discarded() || !plan.is_object())
    return fail(ErrorCode::Store, fmt::format("run {}: its plan is not JSON", run.id));
  plan["budget"]["tokens"] = run.spent_tokens + tokens_left;
  const fs::path replan = store_.folder() / "runs" / run.id / "spend-cap-plan.json";
  std::error_code ec;
  fs::create_directories(replan.parent_path(), ec);
  ORCH_TRY(write_file_atomically(replan, json_text(plan, 2), Durability::RenameOnly));
  return engine.resume(run.id, replan.string());
}

}  // namespace orch
