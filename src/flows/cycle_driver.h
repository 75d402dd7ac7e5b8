// flows/cycle_driver.h — the loop of one cycle run: its cycles, each cycle's
// phases, its document (flows/cycle_run.h says what a cycle does).
//
// A CycleDriver holds a cycle run whose lock the caller has taken: its ledger
// record, its document and its config. drive() runs cycles until the run stops
// (converged, max_iterations, the budget, a failure) or pauses (a phase
// interrupted or awaiting approval). Each cycle goes through CycleProgress, one
// step at a time, and the document is saved to the ledger after each, so a
// resume starts at the step that was not finished: cycle_driver.cc has the
// loop and the phases, cycle_driver_work.cc the preparation and what is read
// from the work phase, cycle_driver_write.cc the milestones, the verify phase
// and the writer.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flows/cycle_config.h"
#include "flows/cycle_doc.h"
#include "flows/cycle_plans.h"
#include "flows/cycle_run.h"
#include "orch/cycle_store.h"
#include "orch/store.h"

namespace orch::flows::cycle_detail {

inline constexpr const char* kPlanPhase = "plan";
inline constexpr const char* kWorkPhase = "work";
inline constexpr const char* kReviewPhase = "review";
inline constexpr const char* kVerifyPhase = "verify";

// A phase's run as the cycle reads it.
struct PhaseRun {
  std::string run_id;
  RunStatus status = RunStatus::Failed;
  std::string reason;
  std::vector<StepRecord> steps;
  std::vector<AttemptRecord> attempts;

  const StepRecord* step(const std::string& id) const;
  // The attempts of step `id`, in order.
  std::vector<const AttemptRecord*> attempts_of(const std::string& id) const;
};

// What happened to one task in the work phase.
enum class TaskWork {
  GateHeld,      // its worker ran and its gate held
  GateFailed,    // its worker ran, its gate did not hold
  WorkerFailed,  // its phase's worker failed (the engine put the file back)
  Blocked,       // an earlier phase of its job did not hold: its phase did not run
};
const char* task_work_name(TaskWork w);

class CycleDriver {
 public:
  CycleDriver(CycleEnv& env, CycleRecord record, nlohmann::json doc, CycleConfig config);

  Expected<CycleOutcome> drive();

 private:
  void note(const std::string& line) const {
    if (env_.on_note) env_.on_note(line);
  }
  Expected<void> save();
  Expected<CycleOutcome> stop(CycleStatus status, const std::string& reason, int exit_code);
  CycleOutcome paused(const PhaseRun& p, int n, const char* phase) const;
  CyclePlanContext context(int n, std::int64_t tokens_left) const;
  // Runs (or resumes, or reads) phase `name` of cycle n. nullopt: it paused or
  // was stopped by the budget (`pause_` holds the outcome to return).
  Expected<std::optional<PhaseRun>> phase(
      int n, const char* name, const std::function<nlohmann::ordered_json(const CyclePlanContext&)>& build);

  // What a cycle begun now would work on (the status file read now).
  Expected<std::vector<CycleTask>> objectives_now();
  // Records cycle n's objectives and jobs; false when no item can advance.
  Expected<bool> begin_cycle(int n);
  // The steps of a cycle, each done once (CycleProgress).
  Expected<std::optional<CycleOutcome>> run_cycle(int n);
  Expected<void> prepare(int n, const std::vector<CycleJob>& jobs);
  // What each worker reads its tasks from (ORCH_CYCLE_TASKS), before the work phase starts or resumes.
  Expected<void> write_tasks_files(int n, const std::vector<CycleJob>& jobs);
  Expected<void> read_plan(int n, const PhaseRun& p);
  Expected<void> read_work(int n, const std::vector<CycleJob>& jobs, const PhaseRun& p);
  Expected<std::optional<CycleOutcome>> review(int n, const std::vector<CycleJob>& jobs);
  Expected<std::optional<CycleOutcome>> verify(int n, const std::vector<CycleJob>& jobs);
  Expected<void> write(int n, const std::vector<CycleJob>& jobs);
  Expected<void> export_audit();

  nlohmann::json& cycle_doc(int n);
  std::vector<CycleJob> jobs_of(int n);
  void set_progress(int n, CycleProgress p);

  CycleEnv& env_;
  CycleRecord record_;
  nlohmann::json doc_;
  CycleConfig c_;
  CyclePaths paths_;
  std::optional<CycleOutcome> pause_;
};

}  // namespace orch::flows::cycle_detail
