// postgres/pg_runtime_rows.cc — the SQL of the runtimes' statements on
// PostgreSQL, and how their records turn into parameters and back (see
// pg_runtime_rows.h).
#include "postgres/pg_runtime_rows.h"

#include <string_view>

namespace orch::detail::pg_rows {

namespace {

// An empty document is stored as "{}" (as the SQLite ledger does).
std::string_view doc_or_empty_object(const std::string& doc) {
  return doc.empty() ? std::string_view("{}") : std::string_view(doc);
}

}  // namespace

#define ORCH_PG_TRACE_COLUMNS \
  "id, request, project, workspace, state, status, doc, run_id, created_at, updated_at, closed_at"
#define ORCH_PG_REVIEW_COLUMNS "id, name, workspace, status, verdict, rounds, doc, created_at, updated_at"
#define ORCH_PG_CYCLE_COLUMNS \
  "id, name, workspace, config_file, status, cycles, doc_json, created_at, updated_at"
#define ORCH_PG_TRANSITION_COLUMNS \
  "run, cycle, job, item, from_state, to_state, gate, gate_exit, hash_before, hash_after, time_ms"

// ---- traces (v4) ------------------------------------------------------------------

const char kInsertTrace[] =
    "INSERT INTO traces (" ORCH_PG_TRACE_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
const char kUpdateTrace[] =
    "UPDATE traces SET request = $2, project = $3, workspace = $4, state = $5, status = $6, doc = $7, "
    "run_id = $8, created_at = $9, updated_at = $10, closed_at = $11 WHERE id = $1";
const char kFindTrace[] = "SELECT " ORCH_PG_TRACE_COLUMNS " FROM traces WHERE id = $1";
const char kListTraces[] = "SELECT " ORCH_PG_TRACE_COLUMNS " FROM traces ORDER BY created_at DESC, id DESC";

PgParams trace_params(const TraceRecord& t) {
  PgParams p;
  p.text(t.id).text(t.request).text(t.project).text(t.workspace).text(t.state);
  p.text(trace_status_name(t.status)).text(doc_or_empty_object(t.doc_json)).text(t.run_id);
  p.integer(t.created_at).integer(t.updated_at).integer(t.closed_at);
  return p;
}

TraceRecord read_trace(const PgResult& r, int row) {
  TraceRecord t;
  t.id = r.text(row, 0);
  t.request = r.text(row, 1);
  t.project = r.text(row, 2);
  t.workspace = r.text(row, 3);
  t.state = r.text(row, 4);
  t.status = parse_trace_status(r.text(row, 5)).value_or(TraceStatus::Open);
  t.doc_json = r.text(row, 6);
  t.run_id = r.text(row, 7);
  t.created_at = r.integer(row, 8);
  t.updated_at = r.integer(row, 9);
  t.closed_at = r.integer(row, 10);
  return t;
}

const char kInsertTraceEvent[] =
    "INSERT INTO trace_events (trace_id, ts, kind, state, data) VALUES ($1, $2, $3, $4, $5) RETURNING seq";
const char kTraceEvents[] =
    "SELECT seq, trace_id, ts, kind, state, data FROM trace_events WHERE trace_id = $1 ORDER BY seq";

PgParams trace_event_params(const TraceEventRecord& e) {
  PgParams p;
  p.text(e.trace_id).integer(e.ts).text(e.kind).text(e.state).text(doc_or_empty_object(e.data_json));
  return p;
}

TraceEventRecord read_trace_event(const PgResult& r, int row) {
  TraceEventRecord e;
  e.seq = r.integer(row, 0);
  e.trace_id = r.text(row, 1);
  e.ts = r.integer(row, 2);
  e.kind = r.text(row, 3);
  e.state = r.text(row, 4);
  e.data_json = r.text(row, 5);
  return e;
}

// ---- reviews (v5) -----------------------------------------------------------------

const char kInsertReview[] =
    "INSERT INTO reviews (" ORCH_PG_REVIEW_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const char kUpdateReview[] =
    "UPDATE reviews SET name = $2, workspace = $3, status = $4, verdict = $5, rounds = $6, doc = $7, "
    "created_at = $8, updated_at = $9 WHERE id = $1";
const char kFindReview[] = "SELECT " ORCH_PG_REVIEW_COLUMNS " FROM reviews WHERE id = $1";
const char kListReviews[] =
    "SELECT " ORCH_PG_REVIEW_COLUMNS " FROM reviews ORDER BY created_at DESC, id DESC";

PgParams review_params(const ReviewRecord& v) {
  PgParams p;
  p.text(v.id).text(v.name).text(v.workspace).text(review_status_name(v.status)).text(v.verdict);
  p.integer(v.rounds).text(doc_or_empty_object(v.doc_json)).integer(v.created_at).integer(v.updated_at);
  return p;
}

ReviewRecord read_review(const PgResult& r, int row) {
  ReviewRecord v;
  v.id = r.text(row, 0);
  v.name = r.text(row, 1);
  v.workspace = r.text(row, 2);
  v.status = parse_review_status(r.text(row, 3)).value_or(ReviewStatus::Running);
  v.verdict = r.text(row, 4);
  v.rounds = static_cast<int>(r.integer(row, 5));
  v.doc_json = r.text(row, 6);
  v.created_at = r.integer(row, 7);
  v.updated_at = r.integer(row, 8);
  return v;
}

// ---- cycles (v13) -----------------------------------------------------------------

const char kInsertCycle[] =
    "INSERT INTO cycles (" ORCH_PG_CYCLE_COLUMNS ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const char kUpdateCycle[] =
    "UPDATE cycles SET name = $2, workspace = $3, config_file = $4, status = $5, cycles = $6, "
    "doc_json = $7, created_at = $8, updated_at = $9 WHERE id = $1";
const char kFindCycle[] = "SELECT " ORCH_PG_CYCLE_COLUMNS " FROM cycles WHERE id = $1";
const char kListCycles[] = "SELECT " ORCH_PG_CYCLE_COLUMNS " FROM cycles ORDER BY created_at DESC, id DESC";
const char kCycleExists[] = "SELECT 1 FROM cycles WHERE id = $1";

PgParams cycle_params(const CycleRecord& c) {
  PgParams p;
  p.text(c.id).text(c.name).text(c.workspace).text(c.config_file).text(cycle_status_name(c.status));
  p.integer(c.cycles).text(doc_or_empty_object(c.doc_json)).integer(c.created_at).integer(c.updated_at);
  return p;
}

CycleRecord read_cycle(const PgResult& r, int row) {
  CycleRecord c;
  c.id = r.text(row, 0);
  c.name = r.text(row, 1);
  c.workspace = r.text(row, 2);
  c.config_file = r.text(row, 3);
  c.status = parse_cycle_status(r.text(row, 4)).value_or(CycleStatus::Running);
  c.cycles = static_cast<int>(r.integer(row, 5));
  c.doc_json = r.text(row, 6);
  c.created_at = r.integer(row, 7);
  c.updated_at = r.integer(row, 8);
  return c;
}

// ON CONFLICT DO NOTHING: a second transition of a (run, cycle, item) writes
// nothing (the UNIQUE constraint of the table).
const char kInsertTransition[] = "INSERT INTO cycle_transitions (" ORCH_PG_TRANSITION_COLUMNS
                                 ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) "
                                 "ON CONFLICT (run, cycle, item) DO NOTHING";
const char kTransitionsOfRun[] =
    "SELECT seq, " ORCH_PG_TRANSITION_COLUMNS " FROM cycle_transitions WHERE run = $1 ORDER BY seq";

PgParams transition_params(const CycleTransition& t) {
  PgParams p;
  p.text(t.run).integer(t.cycle).text(t.job).text(t.item).text(t.from).text(t.to).text(t.gate);
  p.integer(t.gate_exit).text(t.hash_before).text(t.hash_after).integer(t.time_ms);
  return p;
}

CycleTransition read_transition(const PgResult& r, int row) {
  CycleTransition t;
  t.seq = r.integer(row, 0);
  t.run = r.text(row, 1);
  t.cycle = static_cast<int>(r.integer(row, 2));
  t.job = r.text(row, 3);
  t.item = r.text(row, 4);
  t.from = r.text(row, 5);
  t.to = r.text(row, 6);
  t.gate = r.text(row, 7);
  t.gate_exit = static_cast<int>(r.integer(row, 8));
  t.hash_before = r.text(row, 9);
  t.hash_after = r.text(row, 10);
  t.time_ms = r.integer(row, 11);
  return t;
}

#undef ORCH_PG_TRANSITION_COLUMNS
#undef ORCH_PG_CYCLE_COLUMNS
#undef ORCH_PG_REVIEW_COLUMNS
#undef ORCH_PG_TRACE_COLUMNS

}  // namespace orch::detail::pg_rows
