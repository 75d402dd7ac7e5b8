// cli/task_env.h — the flags every `orch task` subcommand shares, and the
// TaskEnv (flows/task_runtime.h) they open: the ledger, the workspace, the
// executors (models, registry, workers files), the project's task settings and
// the planner.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/request_plan.h"
#include "flows/task_runtime.h"
#include "orch/ledger.h"
#include "orch/store.h"

namespace orch {
class ToolRegistry;
}

namespace orch::cli {

struct TaskFlags {
  std::string store;  // default: <workspace>/.orch/orch.db
  std::string workspace = ".";
  std::string models;
  std::string registry;
  std::string workers;
  bool json = false;
  RequestPlanArgs planner;
};

// --store, --workspace and --json on `sub`; with `executors`, also --models,
// --registry and --workers (the commands that run something).
void add_task_flags(CLI::App& sub, TaskFlags& flags, bool executors);

// An open TaskEnv and what it points into.
struct OpenTask {
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<ToolRegistry> registry;
  flows::TaskEnv env;
  OpenTask();
  ~OpenTask();
  OpenTask(OpenTask&&) noexcept;
};

// Opens the ledger (created when missing), reads the settings and, when asked,
// the executors. Errors name the file.
Expected<OpenTask> open_task(const TaskFlags& flags, bool executors, bool quiet_planner);

// The trace, for a person: state, pipeline, next states, checklist, verdicts.
std::string describe_trace(const flows::Trace& trace);

}  // namespace orch::cli
