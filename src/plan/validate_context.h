// plan/validate_context.h — what the pieces of validate_plan share.
//
// validate.cc checks the plan as a whole (ids, deps, cycles, limits, executors);
// validate_placeholders.cc and validate_post.cc check one step's templates and
// postconditions/paths. Each reports through ValidateContext so every diagnostic
// gets the plan file, a line and the step id the same way.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "orch/diagnostic.h"
#include "orch/validate.h"
#include "plan/graph.h"

namespace orch::detail {

struct ValidateContext {
  const Plan& plan;
  const ValidateOptions& options;
  const StepGraph& graph;
  AncestorQuery& ancestors;
  std::filesystem::path plan_dir;  // for result_json schema_path
  Diagnostics& out;

  // Reports against `step` at the line of `field` (falling back to the first
  // of `fallbacks` that was written, then to the step itself).
  void step_error(const Step& step, std::string_view field, std::string message,
                  std::initializer_list<std::string_view> fallbacks = {}) const;
  void step_error_at(const Step& step, int line, std::string message) const;
  // The name diagnostics give the plan: its file, else options.file_name.
  const std::string& file() const { return plan.source_path.empty() ? options.file_name : plan.source_path; }
  // A plan-level problem at the line of a plan field ("concurrency", "budget.tokens").
  void plan_error(std::string_view field, std::string message) const;
  // The step's position in Plan::steps (what the graph and #E<idx> count; a plan
  // built in code may not have set Step::index).
  int position(const Step& step) const { return static_cast<int>(&step - plan.steps.data()); }
};

void check_placeholders(const ValidateContext& ctx, const Step& step);
void check_postconditions(const ValidateContext& ctx, const Step& step);
// `when:`: it parses, names ancestors only, and its types hold (plan/condition.h).
void check_condition(const ValidateContext& ctx, const Step& step);
// writes, output: inside the workspace.
void check_step_paths(const ValidateContext& ctx, const Step& step);
// Strings that reach a process or the file system must not hold a NUL byte.
void check_nul_bytes(const ValidateContext& ctx, const Step& step);

}  // namespace orch::detail
