// flows/task_runtime.h — the request runtime's operations: plan, log, close,
// gc, show and list of `orch task` (docs/task.md).
//
// Every operation reads and writes traces through the ledger (TraceStore): a
// change is decided and written between begin() and commit(), under the ledger's
// write lock, so two processes driving one trace are serialised and the state
// machine (task_trace.h) is checked against the row as it is, not as it was.
// After each commit the trace is exported to <workspace>/.orch/traces/<id>.json,
// written atomically; the ledger stays the authority (a failed export is an
// error, and the next successful change re-exports the whole trace).
//
// Engines (recall, context, skills, similarity, route, planner) are called as
// functions while the trace is planned; one that fails is recorded FAILED with
// its error under engine_results and its stage goes on without it. The learning
// loop runs on every close (pass, fail, abandoned): harvest the lesson, update
// the fault ledger, reindex, in that order, each isolated the same way and
// recorded under learning_results.
//
// Not thread-safe; one TaskEnv per thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flows/planner.h"
#include "flows/task_trace.h"
#include "flows/task_verifier.h"
#include "orch/error.h"
#include "orch/store.h"
#include "orch/trace_store.h"

namespace orch {
class ToolRegistry;
}

namespace orch::flows {

// The project's task settings: <workspace>/.orch/task.yaml, optional.
//   abandon_after: 24h     an open trace untouched this long is ABANDONED by gc
//   verify_timeout: 10m    per VERIFY command
struct TaskSettings {
  std::chrono::milliseconds abandon_after{std::chrono::hours(24)};
  std::chrono::milliseconds verify_timeout{std::chrono::minutes(10)};
};
// Errors name the file, line and field.
Expected<TaskSettings> load_task_settings(const std::filesystem::path& workspace);

struct TaskEnv {
  Store* store = nullptr;                // the ledger (runs: VERIFY commands, `task run`)
  TraceStore* traces = nullptr;          // the same ledger's traces
  std::filesystem::path workspace;       // absolute
  std::function<std::int64_t()> now_ms;  // wall clock, ms since the epoch
  std::shared_ptr<ExecutorRegistry> executors;
  const ToolRegistry* registry = nullptr;  // for routing (tool-direct); may be null
  // The PLAN engine: the planner (templates first). Unset: PLAN is recorded skipped.
  std::function<Expected<PlannedRequest>(const std::string& request)> planner;
  TaskSettings settings;
  bool handle_signals = false;
};

std::filesystem::path trace_file(const std::filesystem::path& workspace, const std::string& id);
std::filesystem::path trace_plan_file(const std::filesystem::path& workspace, const std::string& id);

// What `task plan` found when the request is ambiguous (zero intent keyword
// hits) and no intent was assumed: no trace is created; the question to ask.
struct AmbiguousRequest {
  std::string question;
  std::vector<std::string> intents;  // the taxonomy, to choose from
};

struct PlanTaskOptions {
  std::string project;
  std::optional<std::string> assume_intent;  // --assume: skips the ambiguity question
};

struct PlannedTask {
  std::optional<Trace> trace;  // unset when ambiguous
  std::optional<AmbiguousRequest> ambiguous;
  std::vector<std::string> abandoned;  // traces gc closed first
};

// Closes stale traces (gc), classifies the request, creates the trace at
// CLASSIFY, then runs the engine stages at the head of its pipeline (ROUTE,
// RECALL, SIMILARITY, PLAN), logging each state as it enters it.
Expected<PlannedTask> plan_task(TaskEnv& env, const std::string& request, const PlanTaskOptions& options);

// Enters `state`. VERIFY runs the verifier (`verify` says what is attested);
// its verdict is recorded on the trace. `interrupted` is set when the VERIFY
// commands were interrupted (nothing is recorded then).
Expected<Trace> log_task(TaskEnv& env, const std::string& trace_ref, TaskState state, const std::string& note,
                         const VerifyOptions& verify, bool* interrupted = nullptr);

// Closes the trace: pass → DONE, fail → ESCALATED; then the learning loop.
Expected<Trace> close_task(TaskEnv& env, const std::string& trace_ref, const std::string& result,
                           const std::string& summary);

// ABANDONED for every open trace untouched for longer than `older_than`; each is
// harvested like any closed trace. Returns their ids.
Expected<std::vector<std::string>> gc_tasks(TaskEnv& env, std::chrono::milliseconds older_than);

// A trace by id, by a unique id prefix, or by the path of its exported JSON.
Expected<Trace> find_task(TaskEnv& env, const std::string& trace_ref);
Expected<std::vector<Trace>> list_tasks(TaskEnv& env, bool open_only);  // newest first

// Enters `state` with the state machine's checks, under the write lock, with no
// verifier: a VERIFY's verdict is given (task run derives it from the execute
// attempt's checks; log_task from the verifier it ran). `verdict_run` is the run
// that produced the verdict ("": the trace's run).
Expected<Trace> record_state(TaskEnv& env, const std::string& trace_id, TaskState state,
                             const std::string& note, const VerifyRecord* verdict,
                             const std::string& verdict_run = "");
// Sets fields of an open trace (run_id, budget) under the write lock.
Expected<Trace> update_task(TaskEnv& env, const std::string& trace_id,
                            const std::function<void(Trace&)>& change);

}  // namespace orch::flows
