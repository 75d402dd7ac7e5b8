#include "ledger/record_rows.h"

namespace orch::detail::rows {

// Column lists, spliced into the statements at compile time. Their order is the
// parameter order of the bind_* functions and the column order of the read_* ones.
#define ORCH_RUN_COLUMNS                                                                           \
  "id, name, status, reason, plan_path, workspace, plan_version, concurrency, keep_going, "        \
  "exit_code, created_at, updated_at, finished_at, spent_tokens, spent_cost_usd, spent_attempts, " \
  "spent_wall_ms, owner_pid, cancel_requested, budget_json, owner_kind, owner_id, owner_round, "   \
  "owner_phase, dispatch"
#define ORCH_PLAN_COLUMNS "run_id, version, path, text, created_at"
#define ORCH_STEP_COLUMNS                                                                  \
  "run_id, step_id, idx, goal, executor, status, reason, result, fingerprint, "            \
  "attempts_counted, last_attempt, tokens_in, tokens_out, cost_usd, wall_ms, started_at, " \
  "finished_at"
#define ORCH_ATTEMPT_COLUMNS                                                                   \
  "run_id, step_id, number, status, counted, ending, exit_code, signal, reason, checks_json, " \
  "fingerprint, stdout_path, stderr_path, stdout_bytes, stderr_bytes, stdout_truncated, "      \
  "stderr_truncated, output_tail, tokens_in, tokens_out, cost_usd, started_at, finished_at, "  \
  "duration_ms, snapshot_dir, stdout_text, stderr_text, cache_read_tokens, cache_write_tokens, host, model"
#define ORCH_EVENT_COLUMNS "seq, run_id, ts, kind, step_id, attempt, data"

// ---- runs -------------------------------------------------------------------------

const char kInsertRun[] = "INSERT INTO runs (" ORCH_RUN_COLUMNS
                          ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                          "?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)";
const char kUpdateRun[] =
    "UPDATE runs SET name = ?2, status = ?3, reason = ?4, plan_path = ?5, workspace = ?6, "
    "plan_version = ?7, concurrency = ?8, keep_going = ?9, exit_code = ?10, created_at = ?11, "
    "updated_at = ?12, finished_at = ?13, spent_tokens = ?14, spent_cost_usd = ?15, "
    "spent_attempts = ?16, spent_wall_ms = ?17, owner_pid = ?18, cancel_requested = ?19, "
    "budget_json = ?20, owner_kind = ?21, owner_id = ?22, owner_round = ?23, owner_phase = ?24, "
    "dispatch = ?25 "
    "WHERE id = ?1";
const char kFindRun[] = "SELECT " ORCH_RUN_COLUMNS " FROM runs WHERE id = ?1";
// rowid breaks ties between runs created in the same millisecond (later insert first).
const char kListRuns[] = "SELECT " ORCH_RUN_COLUMNS " FROM runs ORDER BY created_at DESC, rowid DESC";
const char kOwnedRuns[] = "SELECT " ORCH_RUN_COLUMNS
                          " FROM runs WHERE owner_kind = ?1 AND owner_id = ?2 "
                          "ORDER BY created_at DESC, rowid DESC";
const char kRequestCancel[] = "UPDATE runs SET cancel_requested = 1 WHERE id = ?1";
const char kCancelRequested[] = "SELECT cancel_requested FROM runs WHERE id = ?1";
const char kAttemptTotals[] =
    "SELECT coalesce(sum(tokens_in + tokens_out), 0), coalesce(sum(cost_usd), 0.0), coalesce(sum(counted), "
    "0), coalesce(max(max(started_at, finished_at)), 0) "
    "FROM attempts WHERE run_id = ?1";

void bind_run(Statement& s, const RunRecord& r) {
  s.bind_text(1, r.id);
  s.bind_text(2, r.name);
  s.bind_text(3, run_status_name(r.status));
  s.bind_text(4, r.reason);
  s.bind_text(5, r.plan_path);
  s.bind_text(6, r.workspace);
  s.bind_int(7, r.plan_version);
  s.bind_int(8, r.concurrency);
  s.bind_bool(9, r.keep_going);
  s.bind_int(10, r.exit_code);
  s.bind_int(11, r.created_at);
  s.bind_int(12, r.updated_at);
  s.bind_int(13, r.finished_at);
  s.bind_int(14, r.spent_tokens);
  s.bind_real(15, r.spent_cost_usd);
  s.bind_int(16, r.spent_attempts);
  s.bind_int(17, r.spent_wall_ms);
  s.bind_int(18, r.owner_pid);
  s.bind_bool(19, r.cancel_requested);
  s.bind_text(20, r.budget_json);
  s.bind_text(21, owner_kind_name(r.owner.kind));
  s.bind_text(22, r.owner.id);
  s.bind_int(23, r.owner.round);
  s.bind_text(24, r.owner.phase);
  s.bind_text(25, dispatch_name(r.dispatch));
}

// Status columns are CHECK-constrained to the known names, so the fallbacks in the
// read_* functions are never taken for a file this orch accepted.
RunRecord read_run(const Statement& s) {
  RunRecord r;
  r.id = s.column_text(0);
  r.name = s.column_text(1);
  r.status = parse_run_status(s.column_text(2)).value_or(RunStatus::Failed);
  r.reason = s.column_text(3);
  r.plan_path = s.column_text(4);
  r.workspace = s.column_text(5);
  r.plan_version = static_cast<int>(s.column_int(6));
  r.concurrency = static_cast<int>(s.column_int(7));
  r.keep_going = s.column_bool(8);
  r.exit_code = static_cast<int>(s.column_int(9));
  r.created_at = s.column_int(10);
  r.updated_at = s.column_int(11);
  r.finished_at = s.column_int(12);
  r.spent_tokens = s.column_int(13);
  r.spent_cost_usd = s.column_real(14);
  r.spent_attempts = s.column_int(15);
  r.spent_wall_ms = s.column_int(16);
  r.owner_pid = static_cast<int>(s.column_int(17));
  r.cancel_requested = s.column_bool(18);
  r.budget_json = s.column_text(19);
  r.owner.kind = parse_owner_kind(s.column_text(20)).value_or(OwnerKind::None);
  r.owner.id = s.column_text(21);
  r.owner.round = static_cast<int>(s.column_int(22));
  r.owner.phase = s.column_text(23);
  r.dispatch = parse_dispatch(s.column_text(24)).value_or(Dispatch::Local);
  return r;
}

// ---- plans ------------------------------------------------------------------------

const char kInsertPlan[] = "INSERT INTO plans (" ORCH_PLAN_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5)";
const char kLatestPlan[] =
    "SELECT " ORCH_PLAN_COLUMNS " FROM plans WHERE run_id = ?1 ORDER BY version DESC LIMIT 1";
const char kPlanVersions[] = "SELECT " ORCH_PLAN_COLUMNS " FROM plans WHERE run_id = ?1 ORDER BY version";

void bind_plan(Statement& s, const PlanVersion& p) {
  s.bind_text(1, p.run_id);
  s.bind_int(2, p.version);
  s.bind_text(3, p.path);
  s.bind_text(4, p.text);
  s.bind_int(5, p.created_at);
}

PlanVersion read_plan(const Statement& s) {
  PlanVersion p;
  p.run_id = s.column_text(0);
  p.version = static_cast<int>(s.column_int(1));
  p.path = s.column_text(2);
  p.text = s.column_text(3);
  p.created_at = s.column_int(4);
  return p;
}

// ---- steps ------------------------------------------------------------------------

const char kUpsertStep[] =
    "INSERT INTO steps (" ORCH_STEP_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) "
    "ON CONFLICT (run_id, step_id) DO UPDATE SET idx = excluded.idx, goal = excluded.goal, "
    "executor = excluded.executor, status = excluded.status, reason = excluded.reason, "
    "result = excluded.result, fingerprint = excluded.fingerprint, "
    "attempts_counted = excluded.attempts_counted, last_attempt = excluded.last_attempt, "
    "tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out, cost_usd = excluded.cost_usd, "
    "wall_ms = excluded.wall_ms, started_at = excluded.started_at, finished_at = excluded.finished_at";
// The same row written over in place, for a step the ledger has (one lookup by
// the key, where the upsert tries an insert first).
const char kUpdateStep[] =
    "UPDATE steps SET idx = ?3, goal = ?4, executor = ?5, status = ?6, reason = ?7, result = ?8, "
    "fingerprint = ?9, attempts_counted = ?10, last_attempt = ?11, tokens_in = ?12, tokens_out = ?13, "
    "cost_usd = ?14, wall_ms = ?15, started_at = ?16, finished_at = ?17 WHERE run_id = ?1 AND step_id = ?2";
const char kStepsOfRun[] = "SELECT " ORCH_STEP_COLUMNS " FROM steps WHERE run_id = ?1 ORDER BY idx, step_id";
const char kCountStepsOfRun[] = "SELECT count(*) FROM steps WHERE run_id = ?1";
const char kStepStatusCounts[] = "SELECT status, count(*) FROM steps WHERE run_id = ?1 GROUP BY status";
const char kFindStep[] = "SELECT " ORCH_STEP_COLUMNS " FROM steps WHERE run_id = ?1 AND step_id = ?2";

void bind_step(Statement& s, const StepRecord& r) {
  s.bind_text(1, r.run_id);
  s.bind_text(2, r.step_id);
  s.bind_int(3, r.idx);
  s.bind_text(4, r.goal);
  s.bind_text(5, r.executor);
  s.bind_text(6, step_status_name(r.status));
  s.bind_text(7, r.reason);
  s.bind_text(8, r.result);
  s.bind_text(9, r.fingerprint);
  s.bind_int(10, r.attempts_counted);
  s.bind_int(11, r.last_attempt);
  s.bind_int(12, r.tokens_in);
  s.bind_int(13, r.tokens_out);
  s.bind_real(14, r.cost_usd);
  s.bind_int(15, r.wall_ms);
  s.bind_int(16, r.started_at);
  s.bind_int(17, r.finished_at);
}

StepRecord read_step(const Statement& s) {
  StepRecord r;
  r.run_id = s.column_text(0);
  r.step_id = s.column_text(1);
  r.idx = static_cast<int>(s.column_int(2));
  r.goal = s.column_text(3);
  r.executor = s.column_text(4);
  r.status = parse_step_status(s.column_text(5)).value_or(StepStatus::Pending);
  r.reason = s.column_text(6);
  r.result = s.column_text(7);
  r.fingerprint = s.column_text(8);
  r.attempts_counted = static_cast<int>(s.column_int(9));
  r.last_attempt = static_cast<int>(s.column_int(10));
  r.tokens_in = s.column_int(11);
  r.tokens_out = s.column_int(12);
  r.cost_usd = s.column_real(13);
  r.wall_ms = s.column_int(14);
  r.started_at = s.column_int(15);
  r.finished_at = s.column_int(16);
  return r;
}

// ---- attempts ---------------------------------------------------------------------

const char kInsertAttempt[] =
    "INSERT INTO attempts (" ORCH_ATTEMPT_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
    "?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)";
const char kFinishAttempt[] =
    "UPDATE attempts SET status = ?4, counted = ?5, ending = ?6, exit_code = ?7, signal = ?8, "
    "reason = ?9, checks_json = ?10, fingerprint = ?11, stdout_path = ?12, stderr_path = ?13, "
    "stdout_bytes = ?14, stderr_bytes = ?15, stdout_truncated = ?16, stderr_truncated = ?17, "
    "output_tail = ?18, tokens_in = ?19, tokens_out = ?20, cost_usd = ?21, started_at = ?22, "
    "finished_at = ?23, duration_ms = ?24, snapshot_dir = ?25, stdout_text = ?26, stderr_text = ?27, "
    "cache_read_tokens = ?28, cache_write_tokens = ?29, host = ?30, model = ?31 "
    "WHERE run_id = ?1 AND step_id = ?2 AND number = ?3 AND status = 'running'";
// Steps are ordered by their plan position; a correlated lookup (by the steps
// primary key) keeps the select list free of join ambiguity.
const char kAttemptsOfRun[] =
    "SELECT " ORCH_ATTEMPT_COLUMNS
    " FROM attempts WHERE run_id = ?1 ORDER BY (SELECT idx FROM steps WHERE steps.run_id = "
    "attempts.run_id AND steps.step_id = attempts.step_id), step_id, number";
const char kAttemptsOfStep[] =
    "SELECT " ORCH_ATTEMPT_COLUMNS " FROM attempts WHERE run_id = ?1 AND step_id = ?2 ORDER BY number";

void bind_attempt(Statement& s, const AttemptRecord& a) {
  s.bind_text(1, a.run_id);
  s.bind_text(2, a.step_id);
  s.bind_int(3, a.number);
  s.bind_text(4, attempt_status_name(a.status));
  s.bind_bool(5, a.counted);
  s.bind_text(6, a.status == AttemptStatus::Running ? "" : attempt_ending_name(a.ending));
  s.bind_int(7, a.exit_code);
  s.bind_int(8, a.signal);
  s.bind_text(9, a.reason);
  s.bind_text(10, a.checks_json);
  s.bind_text(11, a.fingerprint);
  s.bind_text(12, a.stdout_path);
  s.bind_text(13, a.stderr_path);
  s.bind_int(14, a.stdout_bytes);
  s.bind_int(15, a.stderr_bytes);
  s.bind_bool(16, a.stdout_truncated);
  s.bind_bool(17, a.stderr_truncated);
  s.bind_text(18, a.output_tail);
  s.bind_int(19, a.tokens_in);
  s.bind_int(20, a.tokens_out);
  s.bind_real(21, a.cost_usd);
  s.bind_int(22, a.started_at);
  s.bind_int(23, a.finished_at);
  s.bind_int(24, a.duration_ms);
  s.bind_text(25, a.snapshot_dir);
  s.bind_text(26, a.stdout_text);
  s.bind_text(27, a.stderr_text);
  s.bind_int(28, a.cache_read_tokens);
  s.bind_int(29, a.cache_write_tokens);
  s.bind_text(30, a.host);
  s.bind_text(31, a.model);
}

AttemptRecord read_attempt(const Statement& s) {
  AttemptRecord a;
  a.run_id = s.column_text(0);
  a.step_id = s.column_text(1);
  a.number = static_cast<int>(s.column_int(2));
  a.status = parse_attempt_status(s.column_text(3)).value_or(AttemptStatus::Failed);
  a.counted = s.column_bool(4);
  a.ending = parse_attempt_ending(s.column_text(5)).value_or(AttemptEnding::Error);
  a.exit_code = static_cast<int>(s.column_int(6));
  a.signal = static_cast<int>(s.column_int(7));
  a.reason = s.column_text(8);
  a.checks_json = s.column_text(9);
  a.fingerprint = s.column_text(10);
  a.stdout_path = s.column_text(11);
  a.stderr_path = s.column_text(12);
  a.stdout_bytes = s.column_int(13);
  a.stderr_bytes = s.column_int(14);
  a.stdout_truncated = s.column_bool(15);
  a.stderr_truncated = s.column_bool(16);
  a.output_tail = s.column_text(17);
  a.tokens_in = s.column_int(18);
  a.tokens_out = s.column_int(19);
  a.cost_usd = s.column_real(20);
  a.started_at = s.column_int(21);
  a.finished_at = s.column_int(22);
  a.duration_ms = s.column_int(23);
  a.snapshot_dir = s.column_text(24);
  a.stdout_text = s.column_text(25);
  a.stderr_text = s.column_text(26);
  a.cache_read_tokens = s.column_int(27);
  a.cache_write_tokens = s.column_int(28);
  a.host = s.column_text(29);
  a.model = s.column_text(30);
  return a;
}

// ---- events -----------------------------------------------------------------------

const char kInsertEvent[] =
    "INSERT INTO events (run_id, ts, kind, step_id, attempt, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const char kEventsOfRun[] =
    "SELECT " ORCH_EVENT_COLUMNS " FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3";

const char kEventsOfKind[] =
    "SELECT " ORCH_EVENT_COLUMNS " FROM events WHERE run_id = ?1 AND kind = ?2 ORDER BY seq";

void bind_event(Statement& s, const EventRecord& e) {
  s.bind_text(1, e.run_id);
  s.bind_int(2, e.ts);
  s.bind_text(3, e.kind);
  s.bind_text(4, e.step_id);
  s.bind_int(5, e.attempt);
  // An event with no details is stored as the empty object, so `data` is always
  // valid JSON for json_extract().
  s.bind_text(6, e.data_json.empty() ? std::string_view("{}") : std::string_view(e.data_json));
}

EventRecord read_event(const Statement& s) {
  EventRecord e;
  e.seq = s.column_int(0);
  e.run_id = s.column_text(1);
  e.ts = s.column_int(2);
  e.kind = s.column_text(3);
  e.step_id = s.column_text(4);
  e.attempt = static_cast<int>(s.column_int(5));
  e.data_json = s.column_text(6);
  return e;
}

// ---- traces (v4) ------------------------------------------------------------------

#define ORCH_TRACE_COLUMNS \
  "id, request, project, workspace, state, status, doc, run_id, created_at, updated_at, closed_at"

const char kInsertTrace[] =
    "INSERT INTO traces (" ORCH_TRACE_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
const char kUpdateTrace[] =
    "UPDATE traces SET request = ?2, project = ?3, workspace = ?4, state = ?5, status = ?6, doc = ?7, "
    "run_id = ?8, created_at = ?9, updated_at = ?10, closed_at = ?11 WHERE id = ?1";
const char kFindTrace[] = "SELECT " ORCH_TRACE_COLUMNS " FROM traces WHERE id = ?1";
const char kListTraces[] = "SELECT " ORCH_TRACE_COLUMNS " FROM traces ORDER BY created_at DESC, id DESC";

void bind_trace(Statement& s, const TraceRecord& t) {
  s.bind_text(1, t.id);
  s.bind_text(2, t.request);
  s.bind_text(3, t.project);
  s.bind_text(4, t.workspace);
  s.bind_text(5, t.state);
  s.bind_text(6, trace_status_name(t.status));
  s.bind_text(7, t.doc_json.empty() ? std::string_view("{}") : std::string_view(t.doc_json));
  s.bind_text(8, t.run_id);
  s.bind_int(9, t.created_at);
  s.bind_int(10, t.updated_at);
  s.bind_int(11, t.closed_at);
}

TraceRecord read_trace(const Statement& s) {
  TraceRecord t;
  t.id = s.column_text(0);
  t.request = s.column_text(1);
  t.project = s.column_text(2);
  t.workspace = s.column_text(3);
  t.state = s.column_text(4);
  t.status = parse_trace_status(s.column_text(5)).value_or(TraceStatus::Open);
  t.doc_json = s.column_text(6);
  t.run_id = s.column_text(7);
  t.created_at = s.column_int(8);
  t.updated_at = s.column_int(9);
  t.closed_at = s.column_int(10);
  return t;
}

const char kInsertTraceEvent[] =
    "INSERT INTO trace_events (trace_id, ts, kind, state, data) VALUES (?1, ?2, ?3, ?4, ?5)";
const char kTraceEvents[] =
    "SELECT seq, trace_id, ts, kind, state, data FROM trace_events WHERE trace_id = ?1 ORDER BY seq";

void bind_trace_event(Statement& s, const TraceEventRecord& e) {
  s.bind_text(1, e.trace_id);
  s.bind_int(2, e.ts);
  s.bind_text(3, e.kind);
  s.bind_text(4, e.state);
  s.bind_text(5, e.data_json.empty() ? std::string_view("{}") : std::string_view(e.data_json));
}

TraceEventRecord read_trace_event(const Statement& s) {
  TraceEventRecord e;
  e.seq = s.column_int(0);
  e.trace_id = s.column_text(1);
  e.ts = s.column_int(2);
  e.kind = s.column_text(3);
  e.state = s.column_text(4);
  e.data_json = s.column_text(5);
  return e;
}

// ---- reviews (v5) -----------------------------------------------------------------

#define ORCH_REVIEW_COLUMNS "id, name, workspace, status, verdict, rounds, doc, created_at, updated_at"

const char kInsertReview[] =
    "INSERT INTO reviews (" ORCH_REVIEW_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
const char kUpdateReview[] =
    "UPDATE reviews SET name = ?2, workspace = ?3, status = ?4, verdict = ?5, rounds = ?6, doc = ?7, "
    "created_at = ?8, updated_at = ?9 WHERE id = ?1";
const char kFindReview[] = "SELECT " ORCH_REVIEW_COLUMNS " FROM reviews WHERE id = ?1";
const char kListReviews[] = "SELECT " ORCH_REVIEW_COLUMNS " FROM reviews ORDER BY created_at DESC, id DESC";

void bind_review(Statement& s, const ReviewRecord& r) {
  s.bind_text(1, r.id);
  s.bind_text(2, r.name);
  s.bind_text(3, r.workspace);
  s.bind_text(4, review_status_name(r.status));
  s.bind_text(5, r.verdict);
  s.bind_int(6, r.rounds);
  s.bind_text(7, r.doc_json.empty() ? std::string_view("{}") : std::string_view(r.doc_json));
  s.bind_int(8, r.created_at);
  s.bind_int(9, r.updated_at);
}

ReviewRecord read_review(const Statement& s) {
  ReviewRecord r;
  r.id = s.column_text(0);
  r.name = s.column_text(1);
  r.workspace = s.column_text(2);
  r.status = parse_review_status(s.column_text(3)).value_or(ReviewStatus::Running);
  r.verdict = s.column_text(4);
  r.rounds = static_cast<int>(s.column_int(5));
  r.doc_json = s.column_text(6);
  r.created_at = s.column_int(7);
  r.updated_at = s.column_int(8);
  return r;
}

#undef ORCH_REVIEW_COLUMNS
#undef ORCH_TRACE_COLUMNS
#undef ORCH_RUN_COLUMNS
#undef ORCH_PLAN_COLUMNS
#undef ORCH_STEP_COLUMNS
#undef ORCH_ATTEMPT_COLUMNS
#undef ORCH_EVENT_COLUMNS

}  // namespace orch::detail::rows
