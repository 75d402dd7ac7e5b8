// postgres/pg_rows.h — how each Store record maps to its PostgreSQL columns.
//
// As ledger/record_rows.h for SQLite: the SQL of every statement beside the
// functions that turn a record into its parameters and a row back into a
// record, so a column list and its binding never drift apart. Parameters are
// numbered in column order ($1 = first column), which lets an INSERT and the
// matching UPDATE share one function.
#pragma once

#include "orch/store.h"
#include "postgres/pg_connection.h"

namespace orch::detail::pg_rows {

// runs: $1..$25 in the order of RunRecord; kUpdateRun sets every column but id ($1).
extern const char kInsertRun[];
extern const char kUpdateRun[];
extern const char kFindRun[];          // $1 = id
extern const char kListRuns[];         // newest first
extern const char kOwnedRuns[];        // $1 = owner kind, $2 = owner id; newest first
extern const char kRequestCancel[];    // $1 = id
extern const char kCancelRequested[];  // $1 = id
// The same, locking the run's row until the transaction ends (PgStore::cancel_requested).
extern const char kCancelRequestedForUpdate[];
extern const char kAttemptTotals[];  // $1 = run id
PgParams run_params(const RunRecord& run);
RunRecord read_run(const PgResult& rows, int row);

// plans: $1..$5 in the order of PlanVersion.
extern const char kInsertPlan[];
extern const char kLatestPlan[];  // $1 = run_id
extern const char kPlanVersions[];  // $1 = run_id
PgParams plan_params(const PlanVersion& plan);
PlanVersion read_plan(const PgResult& rows, int row);

// steps: $1..$17 in the order of StepRecord.
extern const char kUpsertStep[];
extern const char kStepsOfRun[];        // $1 = run_id, by idx
extern const char kStepStatusCounts[];  // $1 = run_id: (status, count) rows
extern const char kFindStep[];          // $1 = run_id, $2 = step_id
PgParams step_params(const StepRecord& step);
StepRecord read_step(const PgResult& rows, int row);

// attempts: $1..$30 in the order of AttemptRecord. kFinishAttempt updates every
// column but the key ($1..$3), only while the row is still running.
extern const char kInsertAttempt[];
extern const char kFinishAttempt[];
extern const char kAttemptsOfRun[];   // $1 = run_id, by step idx then number
extern const char kAttemptsOfStep[];  // $1 = run_id, $2 = step_id, by number
PgParams attempt_params(const AttemptRecord& attempt);
AttemptRecord read_attempt(const PgResult& rows, int row);

// events: the insert takes $1..$6 = run_id, ts, kind, step_id, attempt, data and returns seq.
extern const char kInsertEvent[];
extern const char kRecordEvent[];   // kInsertEvent without its answer (a turn's events)
extern const char kEventsOfRun[];   // $1 = run_id, $2 = after seq, $3 = limit (NULL: all)
extern const char kEventsOfKind[];  // $1 = run_id, $2 = kind
PgParams event_params(const EventRecord& event);
EventRecord read_event(const PgResult& rows, int row);

// attempt_output: $1..$6 = run_id, step_id, number, stream, seq, bytes.
extern const char kInsertOutputChunk[];
extern const char kOutputChunks[];  // $1 = run_id, $2 = step_id, $3 = number, $4 = stream: bytes by seq

}  // namespace orch::detail::pg_rows
