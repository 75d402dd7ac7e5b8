// flows/cycle_run.h — `orch cycle`: the plan → work → review loop over the items
// of a status file, through the core engine (docs/cycle.md; seed 003).
//
// A cycle run is a record of the ledger (orch/cycle_store.h) holding its
// document (flows/cycle_doc.h). Each cycle N of it:
//   1. objectives: the items whose state has a stage and that are not stuck,
//      with their past attempts (objectives.json); none left: the run converged;
//   2. jobs: one per file (cycle_objectives.h); each job's file copied to its
//      baseline, and the whole workspace snapshotted (cycle_scope.h);
//   3. plan (optional): a phase run whose answer becomes cycle_plan.md;
//   4. work: a phase run, the jobs in parallel, each its phases' workers and
//      gates (cycle_plans.h); then each job's transcripts and result.json, and
//      every stray write reverted and blamed (scope-violation);
//   5. review: a phase run giving each job's milestones (schema-checked, one
//      repair), or, gate-only, milestones from the workers' claims;
//   6. verify: a phase run of each claimed move's gate on the file as it is;
//   7. the writer (code): decide_job for each job, the file put back to its
//      baseline when refused, each applied transition recorded in the ledger
//      (insert_transition: at most once) before the status file is rewritten
//      (atomically), the audit exported to audit/transitions.jsonl.
// Every phase runs through the engine's phase runner, owned by (cycle, ID, N,
// PHASE), so a killed cycle run resumes where it was: a phase run that exists
// is resumed or read, never run twice; what the writer did is found again in
// the ledger and the status file.
//
// The loop stops when no item can advance (converged), at max_iterations, or
// at the token cap (status budget: resumable with a higher cap). Exit codes: 0
// converged with every item in a final state; 1 converged with items stuck, or
// max_iterations; 3 the budget, or a step awaits approval; 130 interrupted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flows/cycle_config.h"
#include "flows/cycle_plans.h"
#include "orch/cycle_store.h"
#include "orch/engine.h"
#include "orch/store.h"

namespace orch::flows {

struct CycleEnv {
  Store* store = nullptr;        // the ledger: the phases' runs
  CycleStore* cycles = nullptr;  // the same ledger's cycle runs
  std::shared_ptr<ExecutorRegistry> executors;
  std::function<std::int64_t()> now_ms;
  bool handle_signals = false;
  std::function<void(const std::string& line)> on_note;      // progress, one line at a time
  std::function<bool(const ApprovalRequest&)> ask_approval;  // the risk guard's question
};

struct CycleOutcome {
  std::string id;
  CycleStatus status = CycleStatus::Running;
  nlohmann::json doc;
  int exit_code = 1;
  std::string reason;
};

// Creates the cycle run and drives it.
Expected<CycleOutcome> start_cycle_run(CycleEnv& env, const CycleConfig& config);

// Goes on with a cycle run that has not ended (killed, interrupted, awaiting an
// approval), or that its budget stopped (`budget_tokens` raises the cap), with
// the config it started with. One that ended otherwise is refused.
Expected<CycleOutcome> resume_cycle_run(CycleEnv& env, const std::string& id,
                                        std::optional<std::int64_t> budget_tokens);

// What cycle 1 would work on, computed as the run would, nothing recorded.
struct CycleDryRun {
  std::vector<CycleTask> objectives;
  std::vector<CycleJob> jobs;
};
Expected<CycleDryRun> dry_run_cycle(const CycleConfig& config);

// The config a cycle run started with, from its document.
Expected<CycleConfig> cycle_config_of(const CycleRecord& record);

}  // namespace orch::flows
