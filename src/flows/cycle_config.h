// flows/cycle_config.h — cycle.yaml, the configuration of `orch cycle`
// (docs/cycle.md; schema: schemas/cycle.schema.json).
//
//   name: proofs                       # default: the file's stem
//   workspace: .                       # relative to cycle.yaml's folder (default: that folder)
//   status:
//     file: status.yaml                # relative to the workspace
//     fields: {id: id, file: file, state: state}
//   lifecycle:
//     states: [nl_reviewed, bound, aligned, proved]
//     stages:
//       formalize:
//         move: nl_reviewed -> bound|aligned
//         worker: {worker: claude, prompt_file: prompts/formalize.md}
//         gate: lake env lean {file}
//       prove:
//         move: aligned -> proved
//         worker:
//           command: ./prove.sh {file} {ids}   # block style: in {...} a '{' opens a mapping
//         gate: lake env lean {file}
//   plan: {model: planner}             # optional: writes cycle_plan.md
//   review: gate-only                  # or a role returning milestones
//   max_iterations: 10
//   max_parallel: 8
//   past_attempts: 1
//   budget: {tokens: 2000000}
//   scope: {ignore: [".lake/**", "build/**"]}
//   workers: .orch/workers.yaml        # relative to the workspace (default: that one, when present)
//   models: .orch/models.yaml
//
// A role (a stage's worker, the plan, the review) is one of: `command:` a shell
// command (run with /bin/sh -c in the workspace; `{file}`, `{ids}`, `{stage}`
// stand for the job's file, its tasks' ids and the stage, given to the shell
// as quoted variables), `worker: NAME` an agent CLI of the workers file, or
// `model: NAME` a model of the models file. A model cannot edit a file, so a
// stage's worker is a command or a worker. `prompt:` or `prompt_file:` is the
// brief of a worker or model (a default brief when absent); `attempts:` (1..10;
// 1, and 2 for the review, whose malformed answer gets one repair) and
// `timeout:` (a duration as plans write one) bound its step. A gate is a shell
// command with `{file}` and `{id}` (one item's id: the gate runs per item).
//
// load_cycle_config reads the file with every problem at once, each
// "FILE:LINE: FIELD: message" (unknown keys, wrong types, missing fields, a
// lifecycle that does not hold together, a stage with no worker or gate, a
// model as a stage's worker), then checks it against the schema as a net.
// The reader leaves one rule to the schema: a state is one word (a move could
// not name "in review"). Prompt files are read at load; the workspace, the status
// file and the workers and models files given must exist. Worker and model
// names are not looked up here (the runtime's pre-flight does, with the
// catalogs). Pure over the file system (reads only). cycle_config.cc reads;
// cycle_config_json.cc keeps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flows/cycle_lifecycle.h"
#include "flows/cycle_status.h"
#include "orch/error.h"

namespace orch::flows {

inline constexpr int kCycleMaxIterations = 1000;
inline constexpr int kCycleMaxParallel = 256;

enum class RoleKind { Command, Worker, Model };

struct CycleRole {
  RoleKind kind = RoleKind::Command;
  std::string command;   // Command: the shell command, with its {placeholders}
  std::string executor;  // Worker: "worker:NAME"; Model: "llm:NAME"
  std::string prompt;    // the brief (prompt_file read at load); "" = the default brief
  int attempts = 1;      // attempts of the role's step (the engine retries with the reason)
  std::optional<std::int64_t> timeout_ms;  // per attempt
  int line = 0;                            // of its key in cycle.yaml
};

struct CycleStageConfig {
  std::string name;  // as in the lifecycle
  CycleRole worker;
  std::string gate;  // the shell command, with {file} and {id}
  int line = 0;
};

struct CycleConfig {
  std::filesystem::path file;       // cycle.yaml, absolute
  std::string name;                 // default: the file's stem
  std::filesystem::path workspace;  // absolute
  std::filesystem::path status_file;  // absolute
  StatusFields fields;
  Lifecycle lifecycle;
  // One per lifecycle stage, in the lifecycle's order (Lifecycle::stages(): by
  // name, as it reads its stages from a JSON object).
  std::vector<CycleStageConfig> stages;
  std::optional<CycleRole> plan;         // unset: no plan phase
  std::optional<CycleRole> review;       // unset: gate-only
  int max_iterations = 10;
  int max_parallel = 8;
  int past_attempts = 1;
  std::optional<std::int64_t> budget_tokens;  // the cap on every phase's tokens together; unset: none
  std::vector<std::string> scope_ignore;      // glob patterns, workspace-relative
  std::string workers_file;  // `workers:`, absolute; "" = WORKSPACE/.orch/workers.yaml when present
  std::string models_file;   // `models:`; likewise .orch/models.yaml

  const CycleStageConfig* stage(const std::string& name) const;
};

// Reads cycle.yaml. Fails (InvalidInput, NotFound for a missing file) with every
// problem, one per line.
Expected<CycleConfig> load_cycle_config(const std::filesystem::path& file);

// The config as JSON (kept in the cycle's record, so a resume goes on with
// exactly what it started with) and back.
nlohmann::json cycle_config_json(const CycleConfig& config);
Expected<CycleConfig> cycle_config_from_json(const nlohmann::json& doc);

// The commented cycle.yaml `orch cycle init` writes.
std::string cycle_init_text();

}  // namespace orch::flows
