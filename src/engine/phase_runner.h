// engine/phase_runner.h — how a runtime runs one phase of its work as a run.
//
// The runtimes on top of the engine (task, review, cycle) do their work as runs,
// one per phase: a review's round has a reviewers, a judge, a claims and a fix
// phase; a task has one; a cycle's rounds have theirs. Each phase's run is
// owned by a key (RunOwner: kind, id, round, phase), kept in the run's row, and
// the phase runner is the one way a runtime runs a phase:
//
//   run(request) finds the newest run owned by request.key (Store::owned_runs)
//    - none: builds the plan (given what is left of the owner's token cap) and
//      starts it, the run owned by the key; with nothing left, runs nothing
//      (PhaseStart::NoBudget);
//    - one that did not end (running after a kill -9, interrupted, awaiting an
//      approval, cancelled): settles the files its killed driver's attempts
//      changed since (later edits, engine/later_edits.h), has the engine recover
//      the rest (Engine::recover: orphans killed, attempts closed as
//      interrupted, snapshots restored; told in on_note) and resumes it;
//    - one the owner's cap stopped (budget_exhausted) while some of the cap is
//      left now (it was raised): resumed under a budget of what it spent plus
//      what is left, its plan kept in the run's folder of the store;
//    - one that ended: nothing runs and its outcome is returned
//      (PhaseStart::Ended), unless request.rerun_ended says the owner wants it
//      resumed (a task's run that failed for its set-up, once that is fixed).
//
// The owner reads the run's steps and attempts through PhaseResult::run_id; it
// keeps its own document (trace, review) and decides what a status means to it.
// A phase runner drives one phase at a time, from one thread, like the Engine.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "engine/later_edits.h"
#include "orch/engine.h"
#include "orch/error.h"
#include "orch/plan.h"
#include "orch/store.h"

namespace orch {

// A plan a runtime built: the validated plan and its text, as stored.
struct BuiltPlan {
  Plan plan;
  std::string text;
};

enum class PhaseStart {
  Started,                // a new run
  Resumed,                // a run that had not ended
  ResumedUnderRaisedCap,  // a run the cap had stopped, under the raised cap
  Ended,                  // a run that had ended: nothing ran
  NoBudget,               // no run, and nothing left of the cap to start one: nothing ran
};

struct PhaseRequest {
  RunOwner key;
  // Builds the phase's plan; `tokens_left`: what is left of the owner's cap for
  // it (the plan's budget), or -1 when the owner has no cap.
  std::function<Expected<BuiltPlan>(std::int64_t tokens_left)> build;
  // What is left of the owner's token cap, all its phases counted
  // (owner_spent_tokens); nullopt: no cap.
  std::optional<std::int64_t> tokens_left;
  // An ended run the owner wants resumed rather than reported (default: none).
  std::function<Expected<bool>(const RunRecord&)> rerun_ended;
  // The files of an attempt its killed driver left running, changed since.
  LaterEdits later_edits = LaterEdits::Discard;
  // For messages: what the phase is ("review rv-1: the fix of round 2") and the
  // command that goes on ("orch review --resume rv-1").
  std::string who;
  std::string resume_command;
  // Told, just before the phase's engine runs, how it starts and the run it
  // goes on with ("" for a new one): for a line of progress.
  std::function<void(PhaseStart, const std::string& run_id)> on_start;
  std::function<void(const std::string&)> on_note;  // what was kept of later edits, what was recovered
};

struct PhaseResult {
  PhaseStart start = PhaseStart::Started;
  std::string run_id;  // "" for NoBudget
  RunStatus status = RunStatus::Failed;
  std::string reason;
};

class PhaseRunner {
 public:
  // `options`: how every phase's engine runs (workspace, executors, signals,
  // progress, approvals); its owner is set from each request's key.
  PhaseRunner(Store& store, EngineOptions options);

  Expected<PhaseResult> run(const PhaseRequest& request);

  // The newest run owned by `key` (kind, id, round and phase all equal).
  Expected<std::optional<RunRecord>> find(const RunOwner& key);

  // The run id of the phase being driven now ("" before its run exists): set
  // once the run is durable, for progress that reads it while the phase runs.
  const std::string& current_run_id() const { return current_run_id_; }

 private:
  Expected<RunOutcome> resume_under_cap(Engine& engine, const RunRecord& run, std::int64_t tokens_left);

  Store& store_;
  EngineOptions options_;
  std::string current_run_id_;
};

// Everything the runs of one owner have spent, in tokens (all rounds, phases).
Expected<std::int64_t> owner_spent_tokens(Store& store, OwnerKind kind, const std::string& owner_id);

}  // namespace orch
