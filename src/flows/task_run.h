// flows/task_run.h — `orch task run`: orch drives every stage of a request
// itself, through the core engine (docs/task.md, "Autonomous mode").
//
// plan_task classifies the request, creates the trace and runs the engine
// stages at the head of its pipeline (ROUTE, RECALL, SIMILARITY, PLAN). The
// stages after it become one plan, run by the Engine like any plan:
//   context    builtin:echo: what RECALL packed (the notes and lessons that fit)
//   execute    the model stage that does the work, through the worker or model
//              given (`worker:NAME`, `llm:NAME`, `llm`); goal = the request.
//              Its postconditions ARE the VERIFY stage: a non-empty result and
//              every command of the trace's checklist (shell_zero, in order).
//              attempts = 1 + kMaxRetries, so a failed VERIFY sends EXECUTE back
//              with the failed check and the output's tail in its prompt (the
//              engine's previous_failure), at most twice.
//   review     (deep pipelines) a model stage that reviews the work
//   summarize  a model stage that summarises what was done
// A tool-direct trace (the capability gate said no model is needed: a trivial
// request a registry tool covers) is run without any model or worker:
//   execute    tool:NAME, the tool the ROUTE engine chose, its inputs read from
//              the request (flows/tool_direct.h). Its postconditions are the
//              VERIFY stage as above, after exit_zero (the executor has already
//              held the output to its contract). attempts = 1: the same inputs
//              give the same output. Inputs the request does not give → the
//              trace is closed fail (ESCALATED, exit 3) before any run.
//   summarize  builtin:echo: which tool ran, with what, and its result.
// The executor given (--worker/--model) is then not used, and the default one
// (llm) need not be configured.
// The plan's token budget is the trace's budget (600/3000/12000, research
// 20000): every model and worker call is charged to it by the engine and a call
// the remaining budget cannot cover is never started.
//
// The trace follows the run: after every engine event the trace's transitions
// are brought up to date from the ledger's attempts (sync_trace_with_run), with
// the same state-machine checks as `orch task log` — EXECUTE when an execute
// attempt starts, VERIFY with its verdict when one ends, REVIEW, SUMMARIZE.
// Because the trace is derived from the ledger, a run killed with kill -9 and
// continued with resume_task (`orch task run --resume TRACE`) ends with the same
// trace as one that was never interrupted.
//
// The end: the run succeeded → close pass (DONE, exit 0); execute failed after
// its retries → close fail (ESCALATED, exit 3); budget exhausted → close fail
// (exit 4); interrupted → the trace stays open at its state (exit 130); a step
// failed for its set-up (an attempt ended setup_failed: a model's key not set,
// credentials refused) → the trace stays open, not verified, closed or learnt
// from (exit 2), and resume_task runs the failed step again.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "flows/task_runtime.h"
#include "orch/engine.h"

namespace orch::flows {

struct TaskRunOptions {
  std::string executor = "llm";  // the model stages': worker:NAME, llm:NAME or llm
  bool executor_given = false;   // named by the caller (--worker/--model): checked even when unused
  PlanTaskOptions plan;
  std::function<void(const ProgressEvent&)> on_progress;
  std::function<void(const std::string& run_id)> on_started;
};

struct TaskRunOutcome {
  std::optional<Trace> trace;                 // unset when ambiguous
  std::optional<AmbiguousRequest> ambiguous;  // exit 3 with the question
  RunStatus run_status = RunStatus::Failed;
  std::string reason;
  // Set when a step failed for its set-up, not its work ("step 'execute':
  // provider 'x' takes its key from $X, which is not set"; HTTP 401/403): the
  // trace is left open — no VERIFY, no close, no lesson — and exit_code is 2.
  std::string setup_failure;
  int exit_code = 1;
};

Expected<TaskRunOutcome> run_task(TaskEnv& env, const std::string& request, const TaskRunOptions& options);
// Continues the run of an open trace (after a crash or an interruption).
Expected<TaskRunOutcome> resume_task(TaskEnv& env, const std::string& trace_ref,
                                     const TaskRunOptions& options);

// Appends to the trace the transitions its run's attempts imply and it does not
// have yet (see above). Idempotent.
Expected<Trace> sync_trace_with_run(TaskEnv& env, const std::string& trace_id);

}  // namespace orch::flows
