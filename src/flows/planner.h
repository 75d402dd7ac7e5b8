// flows/planner.h — turning a request in words into a validated plan.
//
// plan_request decides, in this order (docs/planner.md):
//   1. TriggerJob (trigger_job.h) does not fire: a single-step plan (the request
//      as the prompt of an `llm` step, or of the executor asked for).
//   2. A template of the library matches: its plan, filled with the request. No
//      model call. A template whose plan is invalid is an error naming its file.
//   3. Otherwise one planning call to the model, made by asking the engine to
//      run a one-step plan with executor `llm[:MODEL]` (recorded in the store
//      like any run, tokens and cost included). The reply is parsed and checked
//      by the core loader and validator; if it is invalid, one repair call
//      carries the problems; if that is still invalid (or a call fails), the
//      single-step plan is the fallback.
// Every plan returned has passed validate_plan with the given executors: a
// model's plan is never returned unvalidated. The result says which path was
// taken and why.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flows/plan_template.h"
#include "flows/trigger_job.h"
#include "orch/diagnostic.h"
#include "orch/error.h"
#include "orch/executor.h"
#include "orch/plan.h"
#include "orch/store.h"

namespace orch::flows {

enum class PlanPath { SingleStep, Template, Model, ModelRepaired, Fallback };
const char* plan_path_name(PlanPath path);  // "single_step", "template", "model", "model_repaired", "fallback"

struct PlannerOptions {
  // Where planning calls are recorded as runs. Called once, and only when a
  // planning call is to be made (so a request that needs no model opens no
  // store); unset, the model path falls back to the single step, saying why.
  std::function<Expected<Store*>()> store;
  // Validates every plan and runs the planning calls. Required.
  std::shared_ptr<ExecutorRegistry> executors;
  std::filesystem::path workspace = ".";
  const TemplateLibrary* templates = nullptr;  // null: no templates
  std::string model;  // the planning model: "" = `llm` (the models file's default_model), else `llm:MODEL`
  // The executor of the single-step plan: "" = the planning model's executor.
  // llm/llm:X/worker:X get inputs.prompt, builtin:echo inputs.text, shell the
  // request as its `sh` script; any other executor inputs.prompt.
  std::string single_step_executor;
  // Stop signals during a planning call stop it (the call's run is recorded
  // interrupted) and plan_request fails with ErrorCode::Interrupted.
  bool handle_signals = false;
};

struct PlannedRequest {
  Plan plan;         // validated
  std::string text;  // the plan as text (YAML, or the JSON a model wrote), what a run stores
  PlanPath path = PlanPath::SingleStep;
  std::string template_name;  // PlanPath::Template
  std::string why;            // one line: why this path
  TriggerResult trigger;
  std::vector<std::string> planning_runs;  // run ids of the planning calls, in order
  Diagnostics model_problems;  // what was wrong with the model's first (and second) plan

  // "template fix-failing-tests: <why>", "single_step: <why>", ...
  std::string summary() const;
};

Expected<PlannedRequest> plan_request(std::string_view request, const PlannerOptions& options);

}  // namespace orch::flows
