// postgres/pg_runtime_rows.h — how the runtimes' records (traces, reviews, cycle
// runs and their transitions) map to their PostgreSQL columns.
//
// As pg_rows.h does for the Store's records, and ledger/record_rows.h and
// ledger/cycle_rows.h for SQLite: the SQL of each statement beside the functions
// that turn a record into its parameters and a row back into a record,
// parameters numbered in column order ($1 = first column), so an INSERT and the
// matching UPDATE share one function.
#pragma once

#include <vector>

#include "orch/cycle_store.h"
#include "orch/review_store.h"
#include "orch/trace_store.h"
#include "postgres/pg_connection.h"

namespace orch::detail::pg_rows {

// traces (v4): $1..$11 in the order of TraceRecord; kUpdateTrace sets every column but id ($1).
extern const char kInsertTrace[];
extern const char kUpdateTrace[];
extern const char kFindTrace[];   // $1 = id
extern const char kListTraces[];  // newest first
PgParams trace_params(const TraceRecord& trace);
TraceRecord read_trace(const PgResult& rows, int row);

// trace_events (v4): the insert takes $1..$5 = trace_id, ts, kind, state, data and returns seq.
extern const char kInsertTraceEvent[];
extern const char kTraceEvents[];  // $1 = trace_id, in order
PgParams trace_event_params(const TraceEventRecord& event);
TraceEventRecord read_trace_event(const PgResult& rows, int row);

// reviews (v5): $1..$9 = id, name, workspace, status, verdict, rounds, doc,
// created_at, updated_at; kUpdateReview sets every column but id ($1).
extern const char kInsertReview[];
extern const char kUpdateReview[];
extern const char kFindReview[];   // $1 = id
extern const char kListReviews[];  // newest first
PgParams review_params(const ReviewRecord& review);
ReviewRecord read_review(const PgResult& rows, int row);

// cycles (v13): $1..$9 = id, name, workspace, config_file, status, cycles,
// doc_json, created_at, updated_at; kUpdateCycle sets every column but id ($1).
extern const char kInsertCycle[];
extern const char kUpdateCycle[];
extern const char kFindCycle[];    // $1 = id
extern const char kListCycles[];   // newest first
extern const char kCycleExists[];  // $1 = id: a row when it exists
PgParams cycle_params(const CycleRecord& cycle);
CycleRecord read_cycle(const PgResult& rows, int row);

// cycle_transitions (v13): the insert takes $1..$11 in the order of
// CycleTransition (seq is assigned), and writes nothing when the (run, cycle,
// item) has its transition already.
extern const char kInsertTransition[];
extern const char kTransitionsOfRun[];  // $1 = run, by seq
PgParams transition_params(const CycleTransition& transition);
CycleTransition read_transition(const PgResult& rows, int row);

// Every row of `result`, read by `read`.
template <class Read>
auto read_all_rows(const PgResult& result, Read read) {
  std::vector<decltype(read(result, 0))> out;
  out.reserve(static_cast<std::size_t>(result.rows()));
  for (int i = 0; i < result.rows(); ++i) out.push_back(read(result, i));
  return out;
}

}  // namespace orch::detail::pg_rows
