// ledger/record_rows.h — how each Store record maps to its table's columns.
//
// The SQL of every statement the store prepares lives in record_rows.cc, next to
// the functions that bind a record to its parameters and read it back from a row,
// so a column list and its binding can never drift apart. Parameters are
// numbered in column order (?1 = first column), which lets an INSERT and the
// matching UPDATE share one bind function.
#pragma once

#include "orch/review_store.h"
#include "orch/store.h"
#include "orch/trace_store.h"
#include "sqlite/sqlite_statement.h"

namespace orch::detail::rows {

// runs: ?1..?25 in the order of RunRecord (the owner's four, then dispatch, last). kUpdateRun sets every column but id (?1).
extern const char kInsertRun[];
extern const char kUpdateRun[];
extern const char kFindRun[];          // ?1 = id
extern const char kListRuns[];         // newest first
extern const char kOwnedRuns[];        // ?1 = owner kind, ?2 = owner id; newest first
extern const char kRequestCancel[];    // ?1 = id
extern const char kCancelRequested[];  // ?1 = id
extern const char kAttemptTotals[];    // ?1 = run id
void bind_run(Statement& statement, const RunRecord& run);
RunRecord read_run(const Statement& row);

// plans: ?1..?5 in the order of PlanVersion.
extern const char kInsertPlan[];
extern const char kLatestPlan[];  // ?1 = run_id
extern const char kPlanVersions[];  // ?1 = run_id
void bind_plan(Statement& statement, const PlanVersion& plan);
PlanVersion read_plan(const Statement& row);

// steps: ?1..?17 in the order of StepRecord; insert or replace every column but the key.
extern const char kUpsertStep[];
extern const char kUpdateStep[];        // bound as kUpsertStep
extern const char kStepsOfRun[];        // ?1 = run_id, by idx
extern const char kCountStepsOfRun[];   // ?1 = run_id, by idx
extern const char kStepStatusCounts[];  // ?1 = run_id: (status, count) rows
extern const char kFindStep[];          // ?1 = run_id, ?2 = step_id
void bind_step(Statement& statement, const StepRecord& step);
StepRecord read_step(const Statement& row);

// attempts: ?1..?30 in the order of AttemptRecord. kFinishAttempt updates every
// column but the key (?1..?3), only while the row is still running.
extern const char kInsertAttempt[];
extern const char kFinishAttempt[];
extern const char kAttemptsOfRun[];   // ?1 = run_id, by step idx then number
extern const char kAttemptsOfStep[];  // ?1 = run_id, ?2 = step_id, by number
void bind_attempt(Statement& statement, const AttemptRecord& attempt);
AttemptRecord read_attempt(const Statement& row);

// events: the insert binds ?1..?6 = run_id, ts, kind, step_id, attempt, data (seq is assigned).
extern const char kInsertEvent[];
extern const char kEventsOfRun[];   // ?1 = run_id, ?2 = after seq, ?3 = limit (-1: all)
extern const char kEventsOfKind[];  // ?1 = run_id, ?2 = kind
void bind_event(Statement& statement, const EventRecord& event);
EventRecord read_event(const Statement& row);

// traces (v4): ?1..?11 in the order of TraceRecord; kUpdateTrace sets every column but id (?1).
extern const char kInsertTrace[];
extern const char kUpdateTrace[];
extern const char kFindTrace[];   // ?1 = id
extern const char kListTraces[];  // newest first
void bind_trace(Statement& statement, const TraceRecord& trace);
TraceRecord read_trace(const Statement& row);

// trace_events (v4): the insert binds ?1..?5 = trace_id, ts, kind, state, data.
extern const char kInsertTraceEvent[];
extern const char kTraceEvents[];  // ?1 = trace_id, in order
void bind_trace_event(Statement& statement, const TraceEventRecord& event);
TraceEventRecord read_trace_event(const Statement& row);

// reviews (v5): ?1..?9 = id, name, workspace, status, verdict, rounds, doc,
// created_at, updated_at; kUpdateReview sets every column but id (?1).
extern const char kInsertReview[];
extern const char kUpdateReview[];
extern const char kFindReview[];   // ?1 = id
extern const char kListReviews[];  // newest first
void bind_review(Statement& statement, const ReviewRecord& review);
ReviewRecord read_review(const Statement& row);

}  // namespace orch::detail::rows
