// orch/validate.h — mechanical checks of a plan before anything runs.
//
// validate_plan reports every problem at once: missing or duplicate ids, unknown
// deps (with a did-you-mean), cycles (the cycle printed), placeholders naming a
// step that is not an ancestor or an input that is not declared, unknown
// executors, postconditions that cannot be evaluated (missing fields, a regex
// that does not compile, a schema that is not a JSON Schema or a schema file that
// cannot be read),
// and paths (post, writes, output) that escape the workspace.
#pragma once

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "orch/diagnostic.h"
#include "orch/plan.h"
#include "orch/plan_loader.h"

namespace orch {

struct ValidateOptions {
  // Used to resolve relative paths (after symlinks) and reject those that escape.
  std::filesystem::path workspace = ".";
  // Returns true when an executor name is known. Default: shell, builtin:echo, builtin:json.
  std::function<bool(const std::string&)> executor_known;
  // Optional per-executor check of a step (e.g. builtin:echo needs input `text`).
  std::function<void(const Step&, Diagnostics&)> executor_check;
  // Folder of the plan file, for result_json schema_path (default: the file's parent).
  std::filesystem::path plan_dir;
  // What diagnostics call a plan that has no source_path ("<stdin>" for one read
  // from standard input); a plan with a source_path is called by it.
  std::string file_name;
};

Diagnostics validate_plan(const Plan& plan, const ValidateOptions& options);

// Every problem of a plan as parse_plan read it, at once and in file order: what
// the loader said, and validate_plan's problems whenever they mean something (the
// loader said nothing, or `loaded.checkable`: a plan with a readable step list
// whose other fields were not all read).
Diagnostics plan_problems(const LoadResult& loaded, const ValidateOptions& options);

// A problem with `step`, for executors' check_step: at the line of the first of
// `fields` the step wrote ("executor", "inputs", ...), else the step's own line.
Diagnostic step_diagnostic(const Step& step, std::initializer_list<std::string_view> fields, std::string message);

// The steps in an order where every step comes after its deps (plan order
// preserved among independent steps). Requires a plan without cycles.
std::vector<int> topological_order(const Plan& plan);

// Ancestor test used for placeholder checks: is `ancestor` reachable from `step` via deps?
bool is_ancestor(const Plan& plan, int ancestor, int step);

}  // namespace orch
