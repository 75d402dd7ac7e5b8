// flows/cycle_plans.h — the engine plans of one cycle of `orch cycle`: what
// each phase runs, as steps (docs/cycle.md, "How a cycle runs").
//
//   plan    one step, the plan role: its answer becomes cycle_plan.md, free text
//           handed to the workers (orch never reads it for control);
//   work    per job (one file), per phase (one per stage among its tasks, in the
//           lifecycle's order): the worker step `SLUG.phase-K` (its `writes:` is
//           the job's file: snapshotted before each attempt, put back when the
//           attempt fails), then one gate step per task `SLUG.gate-K.N`; the next
//           phase's worker depends on every gate of this one, so phase 2 runs only
//           if phase 1's gates held. Jobs run in parallel (max_parallel), and a
//           failure stops only its own job (on_failure: continue);
//   review  (a review role) one step per job, `SLUG.review`, whose answer must
//           validate against the milestones schema built for the job (its ids,
//           the lifecycle's states and the seed's words): a malformed one fails the
//           attempt and the retry — the repair — is told why;
//   verify  one gate step per task whose milestone claims a move, `SLUG.verify.N`,
//           on the file as it is then: the writer's evidence.
// Every text the user wrote (commands, prompts) reaches the plan literally: a
// `${` in it is never read as a placeholder. A worker or gate gets its job in
// environment variables (ORCH_CYCLE_*), and `{file}`, `{ids}`, `{stage}`, `{id}`
// in a command become those variables, quoted, so a file name is never split or
// run by the shell.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flows/cycle_config.h"
#include "flows/cycle_objectives.h"

namespace orch::flows {

// One phase of a job: the tasks of one stage.
struct JobPhase {
  int number = 1;  // 1, 2, ...
  std::string stage;
  std::vector<std::size_t> tasks;  // indexes into CycleJob::tasks
};

// A FileJob as a cycle runs it: named by a slug unique in the cycle (its step
// ids and its folder), with its phases.
struct CycleJob {
  std::string slug;
  std::string file;
  std::vector<CycleTask> tasks;
  std::vector<JobPhase> phases;
};

std::vector<CycleJob> cycle_jobs(const std::vector<FileJob>& jobs, const Lifecycle& lifecycle);

std::string worker_step_id(const CycleJob& job, int phase);
std::string gate_step_id(const CycleJob& job, int phase, std::size_t task);  // task: index in job.tasks
std::string review_step_id(const CycleJob& job);
std::string verify_step_id(const CycleJob& job, std::size_t task);
inline constexpr const char* kCyclePlanStep = "plan";

// The folders of a cycle run: .orch/cycles/RUN/...
struct CyclePaths {
  std::filesystem::path root;  // .orch/cycles/RUN
  std::filesystem::path cycle(int n) const;
  std::filesystem::path job(int n, const std::string& slug) const;
  std::filesystem::path scope(int n) const;  // the workspace snapshot of cycle n
  std::filesystem::path audit() const;       // audit/transitions.jsonl
};

// A gate command with its placeholders given values, for people and the audit:
// `cc -fsyntax-only src/a.c`.
std::string gate_as_run(const std::string& gate, const std::string& file, const std::string& id);

// What every phase plan is built from.
struct CyclePlanContext {
  const CycleConfig* config = nullptr;
  std::string run;  // the cycle run's id
  int cycle = 0;
  CyclePaths paths;
  std::int64_t tokens_left = -1;  // the plan's token budget; -1: none
};

nlohmann::ordered_json plan_phase_plan(const CyclePlanContext& c, const std::vector<CycleJob>& jobs);
// `plan_file`: cycle_plan.md when the plan phase wrote one ("" otherwise).
nlohmann::ordered_json work_phase_plan(const CyclePlanContext& c, const std::vector<CycleJob>& jobs,
                                       const std::string& plan_file);
// The file the worker of `phase` reads its tasks from (ORCH_CYCLE_TASKS); written
// by the driver before the work phase starts.
std::filesystem::path tasks_file(const CyclePlanContext& c, const CycleJob& job, int phase);
nlohmann::json tasks_file_json(const CyclePlanContext& c, const CycleJob& job, const JobPhase& phase);

// What the reviewer of one job is shown (written to jobs/SLUG/review.json).
struct ReviewInput {
  const CycleJob* job = nullptr;
  nlohmann::json context;  // tasks, claims, gate results, baseline and file paths
};
nlohmann::ordered_json review_phase_plan(const CyclePlanContext& c, const std::vector<ReviewInput>& inputs);
// The schema a job's review answer must validate against.
nlohmann::json milestones_schema(const CycleJob& job, const Lifecycle& lifecycle);

// One gate the writer needs run on a file as it is now.
struct VerifyCheck {
  const CycleJob* job = nullptr;
  std::size_t task = 0;  // index in job->tasks
};
nlohmann::ordered_json verify_phase_plan(const CyclePlanContext& c, const std::vector<VerifyCheck>& checks);

}  // namespace orch::flows
