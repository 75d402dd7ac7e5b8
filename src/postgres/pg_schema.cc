// postgres/pg_schema.cc — THE LEDGER SCHEMA in PostgreSQL's dialect (v13, then its migrations).
//
// Column by column this is ledger/schema.cc's documentation; the differences:
//   * Booleans are BOOLEAN, times and counters BIGINT, money DOUBLE PRECISION.
//   * Process output (steps.result, attempts.output_tail, stdout_text,
//     stderr_text) is BYTEA: a step may print invalid UTF-8 or NUL bytes, which
//     a TEXT column of a UTF8 database refuses. Every other text column is TEXT,
//     and the server refuses a value that is not UTF-8 with a clear error.
//   * JSON columns stay TEXT (the bytes orch wrote, unchanged), checked by a cast
//     to json, as SQLite's json_valid().
//   * events.seq (and trace_events.seq, cycle_transitions.seq) is a BIGINT
//     identity: a sequence never gives a value twice, even to a rolled back
//     transaction. Seqs increase in the order they were given, which with two
//     concurrent writers need not be the order their transactions commit.
//   * runs.row_seq stands in for SQLite's rowid: it orders runs created in the
//     same millisecond (the later insert first).
//   * The append-only rules are triggers that raise (PL/pgSQL) as SQLite's do;
//     no "never replaced" trigger is needed, PostgreSQL has no INSERT OR REPLACE.
//   * attempt_output (not in SQLite, whose outputs are the log files): a finished
//     attempt's stdout and stderr, in chunks of at most 256 KiB, in order of seq.
//   * lock_holders (not in SQLite, whose locks are files naming their pid): the
//     process that last took each lock, for the Busy message. The lock itself is
//     a session-level advisory lock (pg_store_lock.cc); a row outlives its holder,
//     and is read only while the lock is held.

#include "postgres/pg_schema.h"

#include <fmt/format.h>

namespace orch::detail {

namespace {

constexpr const char* kPgSchemaV13 = R"sql(
CREATE TABLE schema_version (
  version     INTEGER PRIMARY KEY,
  applied_at  BIGINT NOT NULL,
  description TEXT NOT NULL
);

CREATE TABLE runs (
  id               TEXT PRIMARY KEY,
  name             TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled',
                                                   'budget_exhausted', 'escalated', 'interrupted',
                                                   'awaiting_approval')),
  reason           TEXT NOT NULL,
  plan_path        TEXT NOT NULL,
  workspace        TEXT NOT NULL,
  plan_version     INTEGER NOT NULL,
  concurrency      INTEGER NOT NULL,
  keep_going       BOOLEAN NOT NULL,
  exit_code        INTEGER NOT NULL,
  created_at       BIGINT NOT NULL,
  updated_at       BIGINT NOT NULL,
  finished_at      BIGINT NOT NULL,
  spent_tokens     BIGINT NOT NULL,
  spent_cost_usd   DOUBLE PRECISION NOT NULL,
  spent_attempts   BIGINT NOT NULL,
  spent_wall_ms    BIGINT NOT NULL,
  owner_pid        INTEGER NOT NULL,
  cancel_requested BOOLEAN NOT NULL,
  budget_json      TEXT NOT NULL DEFAULT '{}' CHECK (budget_json::json IS NOT NULL),
  owner_kind       TEXT NOT NULL DEFAULT '' CHECK (owner_kind IN ('', 'task', 'review', 'cycle')),
  owner_id         TEXT NOT NULL DEFAULT '',
  owner_round      INTEGER NOT NULL DEFAULT 0,
  owner_phase      TEXT NOT NULL DEFAULT '',
  row_seq          BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE
);
CREATE INDEX runs_by_owner ON runs (owner_kind, owner_id, created_at);
CREATE INDEX runs_by_created ON runs (created_at, row_seq);

CREATE TABLE plans (
  run_id     TEXT NOT NULL REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED,
  version    INTEGER NOT NULL CHECK (version >= 1),
  path       TEXT NOT NULL,
  text       TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (run_id, version)
);

CREATE TABLE steps (
  run_id           TEXT NOT NULL REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED,
  step_id          TEXT NOT NULL,
  idx              INTEGER NOT NULL,
  goal             TEXT NOT NULL,
  executor         TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed', 'skipped',
                                                   'cancelled', 'awaiting_approval')),
  reason           TEXT NOT NULL,
  result           BYTEA NOT NULL,
  fingerprint      TEXT NOT NULL,
  attempts_counted INTEGER NOT NULL,
  last_attempt     INTEGER NOT NULL,
  tokens_in        BIGINT NOT NULL,
  tokens_out       BIGINT NOT NULL,
  cost_usd         DOUBLE PRECISION NOT NULL,
  wall_ms          BIGINT NOT NULL,
  started_at       BIGINT NOT NULL,
  finished_at      BIGINT NOT NULL,
  PRIMARY KEY (run_id, step_id)
);

CREATE TABLE attempts (
  run_id             TEXT NOT NULL,
  step_id            TEXT NOT NULL,
  number             INTEGER NOT NULL CHECK (number >= 1),
  status             TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'timed_out',
                                                     'cancelled', 'interrupted', 'stalled')),
  counted            BOOLEAN NOT NULL,
  ending             TEXT NOT NULL,
  exit_code          INTEGER NOT NULL,
  signal             INTEGER NOT NULL,
  reason             TEXT NOT NULL,
  checks_json        TEXT NOT NULL,
  fingerprint        TEXT NOT NULL,
  stdout_path        TEXT NOT NULL,
  stderr_path        TEXT NOT NULL,
  stdout_bytes       BIGINT NOT NULL,
  stderr_bytes       BIGINT NOT NULL,
  stdout_truncated   BOOLEAN NOT NULL,
  stderr_truncated   BOOLEAN NOT NULL,
  output_tail        BYTEA NOT NULL,
  tokens_in          BIGINT NOT NULL,
  tokens_out         BIGINT NOT NULL,
  cost_usd           DOUBLE PRECISION NOT NULL,
  started_at         BIGINT NOT NULL,
  finished_at        BIGINT NOT NULL,
  duration_ms        BIGINT NOT NULL,
  snapshot_dir       TEXT NOT NULL,
  stdout_text        BYTEA NOT NULL DEFAULT '',
  stderr_text        BYTEA NOT NULL DEFAULT '',
  cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
  cache_write_tokens BIGINT NOT NULL DEFAULT 0,
  host               TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, step_id, number),
  FOREIGN KEY (run_id, step_id) REFERENCES steps (run_id, step_id) DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE events (
  seq     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id  TEXT NOT NULL REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED,
  ts      BIGINT NOT NULL,
  kind    TEXT NOT NULL,
  step_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  data    TEXT NOT NULL CHECK (data::json IS NOT NULL)
);
CREATE INDEX events_by_run ON events (run_id, seq);

CREATE TABLE attempt_output (
  run_id  TEXT NOT NULL,
  step_id TEXT NOT NULL,
  number  INTEGER NOT NULL,
  stream  TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr')),
  seq     INTEGER NOT NULL CHECK (seq >= 0),
  bytes   BYTEA NOT NULL,
  PRIMARY KEY (run_id, step_id, number, stream, seq),
  FOREIGN KEY (run_id, step_id, number) REFERENCES attempts (run_id, step_id, number)
    DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE lock_holders (
  name     TEXT PRIMARY KEY,
  pid      INTEGER NOT NULL,
  host     TEXT NOT NULL,
  taken_at BIGINT NOT NULL
);

CREATE FUNCTION orch_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER attempts_finished_never_change BEFORE UPDATE ON attempts
  FOR EACH ROW WHEN (OLD.status <> 'running')
  EXECUTE FUNCTION orch_refuse('attempts are append-only: a finished attempt never changes');
CREATE TRIGGER attempts_key_never_changes BEFORE UPDATE OF run_id, step_id, number ON attempts
  FOR EACH ROW WHEN (NEW.run_id IS DISTINCT FROM OLD.run_id OR NEW.step_id IS DISTINCT FROM OLD.step_id
                     OR NEW.number IS DISTINCT FROM OLD.number)
  EXECUTE FUNCTION orch_refuse('attempts are append-only: an attempt''s run, step and number never change');
CREATE TRIGGER attempts_never_deleted BEFORE DELETE ON attempts
  FOR EACH ROW EXECUTE FUNCTION orch_refuse('attempts are append-only: attempts are never deleted');
CREATE TRIGGER attempt_output_never_changes BEFORE UPDATE OR DELETE ON attempt_output
  FOR EACH ROW EXECUTE FUNCTION orch_refuse('attempt output is append-only: it never changes');

CREATE TRIGGER events_never_change BEFORE UPDATE ON events
  FOR EACH ROW EXECUTE FUNCTION orch_refuse('events are append-only: an event never changes');
CREATE TRIGGER events_never_deleted BEFORE DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION orch_refuse('events are append-only: events are never deleted');

CREATE TRIGGER plans_never_change BEFORE UPDATE ON plans
  FOR EACH ROW EXECUTE FUNCTION orch_refuse('plan versions are immutable: a submitted plan never changes');
CREATE TRIGGER plans_never_deleted BEFORE DELETE ON plans
  FOR EACH ROW EXECUTE FUNCTION orch_refuse('plan versions are immutable: plan versions are never deleted');

CREATE TRIGGER runs_owner_never_changes BEFORE UPDATE OF owner_kind, owner_id, owner_round, owner_phase ON runs
  FOR EACH ROW WHEN (OLD.owner_kind IS DISTINCT FROM NEW.owner_kind OR OLD.owner_id IS DISTINCT FROM NEW.owner_id
                     OR OLD.owner_round IS DISTINCT FROM NEW.owner_round
                     OR OLD.owner_phase IS DISTINCT FROM NEW.owner_phase)
  EXECUTE FUNCTION orch_refuse('a run''s owner never changes');

-- The runtimes' tables (traces v4, reviews v5 and v9, cycles v13): created now so
-- the version means the same in both dialects; the stores that write them on
-- PostgreSQL are still to come.
CREATE TABLE traces (
  id          TEXT PRIMARY KEY,
  request     TEXT NOT NULL,
  project     TEXT NOT NULL,
  workspace   TEXT NOT NULL,
  state       TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('open', 'done', 'escalated', 'abandoned')),
  doc         TEXT NOT NULL CHECK (doc::json IS NOT NULL),
  run_id      TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL,
  closed_at   BIGINT NOT NULL
);
CREATE INDEX traces_by_status ON traces (status, updated_at);

CREATE TABLE trace_events (
  seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  trace_id  TEXT NOT NULL REFERENCES traces (id) DEFERRABLE INITIALLY DEFERRED,
  ts        BIGINT NOT NULL,
  kind      TEXT NOT NULL,
  state     TEXT NOT NULL,
  data      TEXT NOT NULL CHECK (data::json IS NOT NULL)
);
CREATE INDEX trace_events_by_trace ON trace_events (trace_id, seq);
CREATE TRIGGER trace_events_never_change BEFORE UPDATE OR DELETE ON trace_events
  FOR EACH ROW EXECUTE FUNCTION orch_refuse('trace events are append-only: an event never changes');

CREATE TABLE reviews (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  workspace   TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('running', 'passed', 'failed', 'escalated', 'spend_cap',
                                              'abandoned')),
  verdict     TEXT NOT NULL CHECK (verdict IN ('', 'PASS', 'REVISE', 'BLOCK', 'INCOMPLETE')),
  rounds      INTEGER NOT NULL CHECK (rounds >= 0),
  doc         TEXT NOT NULL CHECK (doc::json IS NOT NULL),
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL
);
CREATE INDEX reviews_by_created ON reviews (created_at);

CREATE TABLE cycles (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  workspace   TEXT NOT NULL,
  config_file TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('running', 'converged', 'max_iterations', 'budget', 'failed')),
  cycles      INTEGER NOT NULL CHECK (cycles >= 0),
  doc_json    TEXT NOT NULL CHECK (doc_json::json IS NOT NULL),
  created_at  BIGINT NOT NULL,
  updated_at  BIGINT NOT NULL
);
CREATE INDEX cycles_by_created ON cycles (created_at);

CREATE TABLE cycle_transitions (
  seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run         TEXT NOT NULL REFERENCES cycles (id) DEFERRABLE INITIALLY DEFERRED,
  cycle       INTEGER NOT NULL CHECK (cycle >= 1),
  job         TEXT NOT NULL,
  item        TEXT NOT NULL,
  from_state  TEXT NOT NULL,
  to_state    TEXT NOT NULL,
  gate        TEXT NOT NULL,
  gate_exit   INTEGER NOT NULL,
  hash_before TEXT NOT NULL,
  hash_after  TEXT NOT NULL,
  time_ms     BIGINT NOT NULL,
  UNIQUE (run, cycle, item)
);
CREATE TRIGGER cycle_transitions_never_change BEFORE UPDATE OR DELETE ON cycle_transitions
  FOR EACH ROW EXECUTE FUNCTION orch_refuse('cycle transitions are append-only: a transition never changes');
)sql";

// v14 (ledger/schema_migrations.cc): runs executed by `orch worker` processes.
// labels are a text[] here, so a claim asks `labels <@ $worker_labels` of an
// index-free scan of the queued rows (the partial index keeps that scan to the
// queue). The queue's rows belong to their run (foreign key).
constexpr const char* kPgSchemaV14 = R"sql(
ALTER TABLE runs ADD COLUMN dispatch TEXT NOT NULL DEFAULT '' CHECK (dispatch IN ('', 'workers'));

CREATE TABLE work_items (
  run_id           TEXT NOT NULL REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED,
  step_id          TEXT NOT NULL,
  attempt          INTEGER NOT NULL,
  executor         TEXT NOT NULL,
  labels           TEXT[] NOT NULL DEFAULT '{}',
  spec             BYTEA NOT NULL,
  state            TEXT NOT NULL CHECK (state IN ('queued', 'claimed', 'finished', 'settled', 'expired', 'lost')),
  worker           TEXT NOT NULL DEFAULT '',
  lease_until      BIGINT NOT NULL DEFAULT 0,
  cancel_requested BOOLEAN NOT NULL DEFAULT false,
  output_bytes     BIGINT NOT NULL DEFAULT -1,
  outcome          BYTEA NOT NULL DEFAULT ''::bytea,
  reason           TEXT NOT NULL DEFAULT '',
  queued_at        BIGINT NOT NULL,
  claimed_at       BIGINT NOT NULL DEFAULT 0,
  finished_at      BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, step_id, attempt)
);
CREATE INDEX work_items_queued ON work_items (queued_at) WHERE state = 'queued';
CREATE INDEX work_items_open ON work_items (run_id) WHERE state IN ('queued', 'claimed', 'finished', 'expired');
CREATE INDEX work_items_by_worker ON work_items (worker) WHERE state = 'claimed';

CREATE TABLE workers (
  name         TEXT PRIMARY KEY,
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  slots        INTEGER NOT NULL,
  labels       TEXT[] NOT NULL DEFAULT '{}',
  lease_ms     BIGINT NOT NULL,
  started_at   BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  stopped_at   BIGINT NOT NULL DEFAULT 0
);
)sql";

// v15 (ledger/schema_migrations.cc): the model an attempt called.
constexpr const char* kPgSchemaV15 = R"sql(
ALTER TABLE attempts ADD COLUMN model TEXT NOT NULL DEFAULT '';
)sql";

// The migrations after v13, the PostgreSQL ledger's first version, in order.
struct PgMigration {
  int version;
  const char* description;
  const char* sql;
};
constexpr PgMigration kPgMigrations[] = {
    {14, "runs.dispatch, work_items, workers: runs executed by orch worker processes", kPgSchemaV14},
    {15, "attempts.model: the model an attempt called", kPgSchemaV15},
};

Expected<void> apply_pg_migrations(PgConnection& conn, std::int64_t from, std::int64_t now_ms) {
  for (const PgMigration& m : kPgMigrations) {
    if (m.version <= from) continue;
    ORCH_TRY(conn.exec_script(fmt::format("migrating the ledger to schema version {}", m.version), m.sql));
    ORCH_TRY(conn.exec("recording the schema version",
                       "INSERT INTO schema_version (version, applied_at, description) VALUES ($1, $2, $3)",
                       PgParams().integer(m.version).integer(now_ms).text(m.description)));
  }
  return {};
}

// The key of the transaction-level advisory lock that serialises schema
// creation (pg_advisory_xact_lock): the bytes "orchschm". It is per database,
// so two ledgers in two schemas of one database also take turns: harmless, opens are rare.
constexpr std::int64_t kSchemaLockKey = 0x6f72636873636d6d;

}  // namespace

Expected<void> ensure_pg_schema(PgConnection& conn, std::int64_t now_ms) {
  ORCH_TRY(conn.begin());
  auto done = [&]() -> Expected<void> {
    ORCH_TRY(conn.exec("waiting for the schema lock", "SELECT pg_advisory_xact_lock($1)",
                       PgParams().integer(kSchemaLockKey)));
    auto where = ORCH_TRY(conn.exec("finding the ledger's schema",
                                    "SELECT current_schema(), to_regclass('schema_version') IS NOT NULL"));
    if (where.is_null(0, 0)) {
      return fail(ErrorCode::Store,
                  fmt::format("{}: no schema of the search_path exists to hold the ledger (create it, or "
                              "set search_path in the URL's options)",
                              conn.where()));
    }
    const std::string schema = where.text(0, 0);
    if (!where.boolean(0, 1)) {
      auto tables = ORCH_TRY(conn.exec("looking at the schema's tables",
                                       "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"));
      if (tables.integer(0, 0) != 0) {
        return fail(ErrorCode::Store, fmt::format("{}: schema '{}' has tables but no schema_version table: "
                                                  "not an orch ledger (give orch an empty schema)",
                                                  conn.where(), schema));
      }
      ORCH_TRY(conn.exec_script("creating the ledger's tables", kPgSchemaV13));
      ORCH_TRY(conn.exec("recording the schema version",
                         "INSERT INTO schema_version (version, applied_at, description) VALUES ($1, $2, $3)",
                         PgParams()
                             .integer(13)
                             .integer(now_ms)
                             .text("the PostgreSQL ledger at v13: runs, plans, steps, attempts, events, "
                                   "attempt_output, lock_holders, traces, reviews, cycles")));
      return apply_pg_migrations(conn, 13, now_ms);
    }
    auto version =
        ORCH_TRY(conn.exec("reading the schema version", "SELECT max(version) FROM schema_version"));
    const std::int64_t v = version.is_null(0, 0) ? 0 : version.integer(0, 0);
    if (v > kPgSchemaVersion) {
      return fail(ErrorCode::Store,
                  fmt::format("{}: the ledger in schema '{}' is at schema version {}, newer than this orch "
                              "(version {}): upgrade orch to use it",
                              conn.where(), schema, v, kPgSchemaVersion));
    }
    if (v >= 13 && v < kPgSchemaVersion) return apply_pg_migrations(conn, v, now_ms);
    if (v < kPgSchemaVersion) {
      // The PostgreSQL ledger began at v13; a lower version is no ledger orch wrote.
      return fail(ErrorCode::Store, fmt::format("{}: the ledger in schema '{}' is at schema version {}, "
                                                "which no orch's PostgreSQL ledger had",
                                                conn.where(), schema, v));
    }
    return {};
  }();
  if (!done) {
    (void)conn.rollback();
    return done;
  }
  return conn.commit();
}

}  // namespace orch::detail
