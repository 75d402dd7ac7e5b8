// cli/plan_input.h — reading a plan file and validating it completely.
#pragma once

#include <string>

#include "orch/diagnostic.h"
#include "orch/executor.h"
#include "orch/plan.h"

namespace orch::cli {

struct PlanInput {
  Plan plan;
  std::string text;        // the file as submitted
  Diagnostics problems;    // parse and validation problems, all of them
  bool readable = true;    // false when the file could not be read at all
  std::string read_error;  // "PATH: is a folder, not a plan file", "PATH: cannot read the plan file: WHY"
};

PlanInput read_and_validate(const std::string& path, const std::string& workspace,
                            const ExecutorRegistry& executors);

// The same for a plan given as text (`orch mcp`'s validate and run tools):
// `name` labels the messages and says the format (a name ending in .json: JSON).
PlanInput validate_plan_text(std::string text, const std::string& name, const std::string& workspace,
                             const ExecutorRegistry& executors);

// For PLAN "-" read from a terminal: says on stderr that orch waits for the plan
// there and how to end it (a plan piped in is read without a word).
void say_reading_stdin();

// Prints every problem, one per line, to stderr.
void print_problems(const Diagnostics& problems);

}  // namespace orch::cli
