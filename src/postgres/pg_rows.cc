#include "postgres/pg_rows.h"

namespace orch::detail::pg_rows {

// Column lists, spliced into the statements at compile time. Their order is the
// parameter order of the *_params functions and the column order of the read_* ones.
#define ORCH_PG_RUN_COLUMNS                                                                        \
  "id, name, status, reason, plan_path, workspace, plan_version, concurrency, keep_going, "        \
  "exit_code, created_at, updated_at, finished_at, spent_tokens, spent_cost_usd, spent_attempts, " \
  "spent_wall_ms, owner_pid, cancel_requested, budget_json, owner_kind, owner_id, owner_round, "   \
  "owner_phase, dispatch"
#define ORCH_PG_PLAN_COLUMNS "run_id, version, path, text, created_at"
#define ORCH_PG_STEP_COLUMNS                                                               \
  "run_id, step_id, idx, goal, executor, status, reason, result, fingerprint, "            \
  "attempts_counted, last_attempt, tokens_in, tokens_out, cost_usd, wall_ms, started_at, " \
  "finished_at"
#define ORCH_PG_ATTEMPT_COLUMNS                                                                \
  "run_id, step_id, number, status, counted, ending, exit_code, signal, reason, checks_json, " \
  "fingerprint, stdout_path, stderr_path, stdout_bytes, stderr_bytes, stdout_truncated, "      \
  "stderr_truncated, output_tail, tokens_in, tokens_out, cost_usd, started_at, finished_at, "  \
  "duration_ms, snapshot_dir, stdout_text, stderr_text, cache_read_tokens, cache_write_tokens, host, model"
#define ORCH_PG_EVENT_COLUMNS "seq, run_id, ts, kind, step_id, attempt, data"

// ---- runs -------------------------------------------------------------------------

const char kInsertRun[] = "INSERT INTO runs (" ORCH_PG_RUN_COLUMNS
                          ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
                          "$16, $17, $18, $19, $20, $21, $22, $23, $24, $25)";
const char kUpdateRun[] =
    "UPDATE runs SET name = $2, status = $3, reason = $4, plan_path = $5, workspace = $6, "
    "plan_version = $7, concurrency = $8, keep_going = $9, exit_code = $10, created_at = $11, "
    "updated_at = $12, finished_at = $13, spent_tokens = $14, spent_cost_usd = $15, "
    "spent_attempts = $16, spent_wall_ms = $17, owner_pid = $18, cancel_requested = $19, "
    "budget_json = $20, owner_kind = $21, owner_id = $22, owner_round = $23, owner_phase = $24, "
    "dispatch = $25 "
    "WHERE id = $1";
const char kFindRun[] = "SELECT " ORCH_PG_RUN_COLUMNS " FROM runs WHERE id = $1";
// row_seq breaks ties between runs created in the same millisecond (later insert first).
const char kListRuns[] = "SELECT " ORCH_PG_RUN_COLUMNS " FROM runs ORDER BY created_at DESC, row_seq DESC";
const char kOwnedRuns[] = "SELECT " ORCH_PG_RUN_COLUMNS
                          " FROM runs WHERE owner_kind = $1 AND owner_id = $2 "
                          "ORDER BY created_at DESC, row_seq DESC";
const char kRequestCancel[] = "UPDATE runs SET cancel_requested = true WHERE id = $1";
const char kCancelRequested[] = "SELECT cancel_requested FROM runs WHERE id = $1";
const char kCancelRequestedForUpdate[] = "SELECT cancel_requested FROM runs WHERE id = $1 FOR UPDATE";
const char kAttemptTotals[] =
    "SELECT coalesce(sum(tokens_in + tokens_out), 0), coalesce(sum(cost_usd), 0.0), "
    "count(*) FILTER (WHERE counted), coalesce(max(greatest(started_at, finished_at)), 0) "
    "FROM attempts WHERE run_id = $1";

PgParams run_params(const RunRecord& r) {
  PgParams p;
  p.text(r.id)
      .text(r.name)
      .text(run_status_name(r.status))
      .text(r.reason)
      .text(r.plan_path)
      .text(r.workspace);
  p.integer(r.plan_version).integer(r.concurrency).boolean(r.keep_going).integer(r.exit_code);
  p.integer(r.created_at).integer(r.updated_at).integer(r.finished_at);
  p.integer(r.spent_tokens).real(r.spent_cost_usd).integer(r.spent_attempts).integer(r.spent_wall_ms);
  p.integer(r.owner_pid).boolean(r.cancel_requested).text(r.budget_json.empty() ? "{}" : r.budget_json);
  p.text(owner_kind_name(r.owner.kind)).text(r.owner.id).integer(r.owner.round).text(r.owner.phase);
  p.text(dispatch_name(r.dispatch));
  return p;
}

// Status columns are CHECK-constrained to the known names, so the fallbacks in the
// read_* functions are never taken.
RunRecord read_run(const PgResult& s, int i) {
  RunRecord r;
  r.id = s.text(i, 0);
  r.name = s.text(i, 1);
  r.status = parse_run_status(s.text(i, 2)).value_or(RunStatus::Failed);
  r.reason = s.text(i, 3);
  r.plan_path = s.text(i, 4);
  r.workspace = s.text(i, 5);
  r.plan_version = static_cast<int>(s.integer(i, 6));
  r.concurrency = static_cast<int>(s.integer(i, 7));
  r.keep_going = s.boolean(i, 8);
  r.exit_code = static_cast<int>(s.integer(i, 9));
  r.created_at = s.integer(i, 10);
  r.updated_at = s.integer(i, 11);
  r.finished_at = s.integer(i, 12);
  r.spent_tokens = s.integer(i, 13);
  r.spent_cost_usd = s.real(i, 14);
  r.spent_attempts = s.integer(i, 15);
  r.spent_wall_ms = s.integer(i, 16);
  r.owner_pid = static_cast<int>(s.integer(i, 17));
  r.cancel_requested = s.boolean(i, 18);
  r.budget_json = s.text(i, 19);
  r.owner.kind = parse_owner_kind(s.text(i, 20)).value_or(OwnerKind::None);
  r.owner.id = s.text(i, 21);
  r.owner.round = static_cast<int>(s.integer(i, 22));
  r.owner.phase = s.text(i, 23);
  r.dispatch = parse_dispatch(s.text(i, 24)).value_or(Dispatch::Local);
  return r;
}

// ---- plans ------------------------------------------------------------------------

const char kInsertPlan[] = "INSERT INTO plans (" ORCH_PG_PLAN_COLUMNS ") VALUES ($1, $2, $3, $4, $5)";
const char kLatestPlan[] =
    "SELECT " ORCH_PG_PLAN_COLUMNS " FROM plans WHERE run_id = $1 ORDER BY version DESC LIMIT 1";
const char kPlanVersions[] = "SELECT " ORCH_PG_PLAN_COLUMNS " FROM plans WHERE run_id = $1 ORDER BY version";

PgParams plan_params(const PlanVersion& p) {
  return PgParams().text(p.run_id).integer(p.version).text(p.path).text(p.text).integer(p.created_at);
}

PlanVersion read_plan(const PgResult& s, int i) {
  PlanVersion p;
  p.run_id = s.text(i, 0);
  p.version = static_cast<int>(s.integer(i, 1));
  p.path = s.text(i, 2);
  p.text = s.text(i, 3);
  p.created_at = s.integer(i, 4);
  return p;
}

// ---- steps ------------------------------------------------------------------------

const char kUpsertStep[] =
    "INSERT INTO steps (" ORCH_PG_STEP_COLUMNS
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) "
    "ON CONFLICT (run_id, step_id) DO UPDATE SET idx = excluded.idx, goal = excluded.goal, "
    "executor = excluded.executor, status = excluded.status, reason = excluded.reason, "
    "result = excluded.result, fingerprint = excluded.fingerprint, "
    "attempts_counted = excluded.attempts_counted, last_attempt = excluded.last_attempt, "
    "tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out, cost_usd = excluded.cost_usd, "
    "wall_ms = excluded.wall_ms, started_at = excluded.started_at, finished_at = excluded.finished_at";
const char kStepsOfRun[] =
    "SELECT " ORCH_PG_STEP_COLUMNS " FROM steps WHERE run_id = $1 ORDER BY idx, step_id";
const char kStepStatusCounts[] = "SELECT status, count(*) FROM steps WHERE run_id = $1 GROUP BY status";
const char kFindStep[] = "SELECT " ORCH_PG_STEP_COLUMNS " FROM steps WHERE run_id = $1 AND step_id = $2";

PgParams step_params(const StepRecord& r) {
  PgParams p;
  p.text(r.run_id).text(r.step_id).integer(r.idx).text(r.goal).text(r.executor);
  p.text(step_status_name(r.status)).text(r.reason).bytes(r.result).text(r.fingerprint);
  p.integer(r.attempts_counted).integer(r.last_attempt).integer(r.tokens_in).integer(r.tokens_out);
  p.real(r.cost_usd).integer(r.wall_ms).integer(r.started_at).integer(r.finished_at);
  return p;
}

StepRecord read_step(const PgResult& s, int i) {
  StepRecord r;
  r.run_id = s.text(i, 0);
  r.step_id = s.text(i, 1);
  r.idx = static_cast<int>(s.integer(i, 2));
  r.goal = s.text(i, 3);
  r.executor = s.text(i, 4);
  r.status = parse_step_status(s.text(i, 5)).value_or(StepStatus::Pending);
  r.reason = s.text(i, 6);
  r.result = s.bytes(i, 7);
  r.fingerprint = s.text(i, 8);
  r.attempts_counted = static_cast<int>(s.integer(i, 9));
  r.last_attempt = static_cast<int>(s.integer(i, 10));
  r.tokens_in = s.integer(i, 11);
  r.tokens_out = s.integer(i, 12);
  r.cost_usd = s.real(i, 13);
  r.wall_ms = s.integer(i, 14);
  r.started_at = s.integer(i, 15);
  r.finished_at = s.integer(i, 16);
  return r;
}

// ---- attempts ---------------------------------------------------------------------

const char kInsertAttempt[] =
    "INSERT INTO attempts (" ORCH_PG_ATTEMPT_COLUMNS
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, "
    "$15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31)";
const char kFinishAttempt[] =
    "UPDATE attempts SET status = $4, counted = $5, ending = $6, exit_code = $7, signal = $8, "
    "reason = $9, checks_json = $10, fingerprint = $11, stdout_path = $12, stderr_path = $13, "
    "stdout_bytes = $14, stderr_bytes = $15, stdout_truncated = $16, stderr_truncated = $17, "
    "output_tail = $18, tokens_in = $19, tokens_out = $20, cost_usd = $21, started_at = $22, "
    "finished_at = $23, duration_ms = $24, snapshot_dir = $25, stdout_text = $26, stderr_text = $27, "
    "cache_read_tokens = $28, cache_write_tokens = $29, host = $30, model = $31 "
    "WHERE run_id = $1 AND step_id = $2 AND number = $3 AND status = 'running'";
// Steps are ordered by their plan position; a correlated lookup (by the steps
// primary key) keeps the select list free of join ambiguity.
const char kAttemptsOfRun[] =
    "SELECT " ORCH_PG_ATTEMPT_COLUMNS
    " FROM attempts WHERE run_id = $1 ORDER BY (SELECT idx FROM steps WHERE steps.run_id = "
    "attempts.run_id AND steps.step_id = attempts.step_id), step_id, number";
const char kAttemptsOfStep[] =
    "SELECT " ORCH_PG_ATTEMPT_COLUMNS " FROM attempts WHERE run_id = $1 AND step_id = $2 ORDER BY number";

PgParams attempt_params(const AttemptRecord& a) {
  PgParams p;
  p.text(a.run_id).text(a.step_id).integer(a.number).text(attempt_status_name(a.status)).boolean(a.counted);
  p.text(a.status == AttemptStatus::Running ? "" : attempt_ending_name(a.ending));
  p.integer(a.exit_code).integer(a.signal).text(a.reason).text(a.checks_json).text(a.fingerprint);
  p.text(a.stdout_path).text(a.stderr_path).integer(a.stdout_bytes).integer(a.stderr_bytes);
  p.boolean(a.stdout_truncated).boolean(a.stderr_truncated).bytes(a.output_tail);
  p.integer(a.tokens_in).integer(a.tokens_out).real(a.cost_usd);
  p.integer(a.started_at).integer(a.finished_at).integer(a.duration_ms).text(a.snapshot_dir);
  p.bytes(a.stdout_text).bytes(a.stderr_text).integer(a.cache_read_tokens).integer(a.cache_write_tokens);
  p.text(a.host).text(a.model);
  return p;
}

AttemptRecord read_attempt(const PgResult& s, int i) {
  AttemptRecord a;
  a.run_id = s.text(i, 0);
  a.step_id = s.text(i, 1);
  a.number = static_cast<int>(s.integer(i, 2));
  a.status = parse_attempt_status(s.text(i, 3)).value_or(AttemptStatus::Failed);
  a.counted = s.boolean(i, 4);
  a.ending = parse_attempt_ending(s.text(i, 5)).value_or(AttemptEnding::Error);
  a.exit_code = static_cast<int>(s.integer(i, 6));
  a.signal = static_cast<int>(s.integer(i, 7));
  a.reason = s.text(i, 8);
  a.checks_json = s.text(i, 9);
  a.fingerprint = s.text(i, 10);
  a.stdout_path = s.text(i, 11);
  a.stderr_path = s.text(i, 12);
  a.stdout_bytes = s.integer(i, 13);
  a.stderr_bytes = s.integer(i, 14);
  a.stdout_truncated = s.boolean(i, 15);
  a.stderr_truncated = s.boolean(i, 16);
  a.output_tail = s.bytes(i, 17);
  a.tokens_in = s.integer(i, 18);
  a.tokens_out = s.integer(i, 19);
  a.cost_usd = s.real(i, 20);
  a.started_at = s.integer(i, 21);
  a.finished_at = s.integer(i, 22);
  a.duration_ms = s.integer(i, 23);
  a.snapshot_dir = s.text(i, 24);
  a.stdout_text = s.bytes(i, 25);
  a.stderr_text = s.bytes(i, 26);
  a.cache_read_tokens = s.integer(i, 27);
  a.cache_write_tokens = s.integer(i, 28);
  a.host = s.text(i, 29);
  a.model = s.text(i, 30);
  return a;
}

// ---- events -----------------------------------------------------------------------

#define ORCH_PG_INSERT_EVENT \
  "INSERT INTO events (run_id, ts, kind, step_id, attempt, data) VALUES ($1, $2, $3, $4, $5, $6)"
const char kInsertEvent[] = ORCH_PG_INSERT_EVENT " RETURNING seq";
const char kRecordEvent[] = ORCH_PG_INSERT_EVENT;
// LIMIT NULL is no limit.
const char kEventsOfRun[] =
    "SELECT " ORCH_PG_EVENT_COLUMNS " FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3";
const char kEventsOfKind[] =
    "SELECT " ORCH_PG_EVENT_COLUMNS " FROM events WHERE run_id = $1 AND kind = $2 ORDER BY seq";

PgParams event_params(const EventRecord& e) {
  // An event with no details is stored as the empty object, so `data` is always JSON.
  return PgParams().text(e.run_id).integer(e.ts).text(e.kind).text(e.step_id).integer(e.attempt).text(
      e.data_json.empty() ? std::string_view("{}") : std::string_view(e.data_json));
}

EventRecord read_event(const PgResult& s, int i) {
  EventRecord e;
  e.seq = s.integer(i, 0);
  e.run_id = s.text(i, 1);
  e.ts = s.integer(i, 2);
  e.kind = s.text(i, 3);
  e.step_id = s.text(i, 4);
  e.attempt = static_cast<int>(s.integer(i, 5));
  e.data_json = s.text(i, 6);
  return e;
}

// ---- attempt output ---------------------------------------------------------------

const char kInsertOutputChunk[] =
    "INSERT INTO attempt_output (run_id, step_id, number, stream, seq, bytes) VALUES ($1, $2, $3, $4, $5, "
    "$6)";
const char kOutputChunks[] =
    "SELECT bytes FROM attempt_output WHERE run_id = $1 AND step_id = $2 AND number = $3 AND stream = $4 "
    "ORDER BY seq";

#undef ORCH_PG_RUN_COLUMNS
#undef ORCH_PG_PLAN_COLUMNS
#undef ORCH_PG_STEP_COLUMNS
#undef ORCH_PG_ATTEMPT_COLUMNS
#undef ORCH_PG_EVENT_COLUMNS

}  // namespace orch::detail::pg_rows
