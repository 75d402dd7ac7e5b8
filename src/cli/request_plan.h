// cli/request_plan.h — the planner's flags, shared by `orch plan` and `orch run --request`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "flows/planner.h"
#include "orch/store.h"

namespace orch::cli {

constexpr const char* kDefaultTemplates = ".orch/templates";

struct RequestPlanArgs {
  std::string model;      // --model: the planning model (default: the models file's default_model)
  std::string templates;  // --templates: user templates folder (default .orch/templates when it exists)
  std::string executor;   // --executor: the single step's executor
};

// Registers --model, --templates and --executor on `sub`.
void add_request_plan_flags(CLI::App& sub, RequestPlanArgs& args);

// The template library: the shipped templates, then --templates DIR (which must
// exist) or .orch/templates when it exists.
Expected<flows::TemplateLibrary> load_request_templates(const RequestPlanArgs& args);

// Plans `request` (docs/planner.md) and prints on stderr one line saying which
// path was taken and why. `store` is opened only if a planning call is made.
Expected<flows::PlannedRequest> plan_from_cli(const std::string& request, const RequestPlanArgs& args,
                                              const std::shared_ptr<ExecutorRegistry>& executors,
                                              const std::string& workspace,
                                              const std::function<Expected<Store*>()>& store, bool quiet);

}  // namespace orch::cli
