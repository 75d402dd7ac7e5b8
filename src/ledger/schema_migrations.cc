// ledger/schema_migrations.cc — the ledger's migrations after v1 (the v1 schema
// and every table's documentation: schema.cc), and the ordered list of all of
// them that migrate.cc applies (schema.h).
#include <array>

#include "ledger/schema.h"

namespace orch {

namespace {

// To change the schema, append {2, "what it does", kSchemaV2} with the ALTER/CREATE
// statements that turn a v1 file into v2, document the new columns in schema.cc and in
// docs/store.md, and update the row mappings (record_rows.cc). Never edit kSchemaV1.
// v2: the plan's budget limits on the run row, so `orch status` and the run report
// need not re-parse a (possibly 100,000-step) plan to show them.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE runs ADD COLUMN budget_json TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(budget_json));
)sql";

// v3: the risk guard and workers. runs.status and steps.status may be
// 'awaiting_approval', attempts.status 'stalled'. SQLite cannot ALTER a CHECK
// constraint; for a change that every existing row still satisfies its
// documented procedure (https://sqlite.org/lang_altertable.html, "making other
// kinds of table schema changes", the simpler procedure) is to rewrite the
// table's CREATE text in sqlite_schema under writable_schema and bump the schema
// cookie; migrate.cc does that for migrations marked edits_schema_text, then runs
// PRAGMA integrity_check and the migration's `verify` query. Each replace()
// widens one IN list at its closing "))", which occurs once in each table.
constexpr const char* kSchemaV3 = R"sql(
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, '''interrupted''))', '''interrupted'', ''awaiting_approval''))')
 WHERE type = 'table' AND name = 'runs';
UPDATE sqlite_schema SET sql = replace(sql, '''cancelled''))', '''cancelled'', ''awaiting_approval''))')
 WHERE type = 'table' AND name = 'steps';
UPDATE sqlite_schema SET sql = replace(sql, '''interrupted''))', '''interrupted'', ''stalled''))')
 WHERE type = 'table' AND name = 'attempts';
PRAGMA writable_schema = OFF;
)sql";
constexpr const char* kVerifyV3 = R"sql(
SELECT count(*) = 3 FROM sqlite_schema
 WHERE type = 'table'
   AND ((name = 'runs' AND sql LIKE '%''interrupted'', ''awaiting_approval''))%')
     OR (name = 'steps' AND sql LIKE '%''cancelled'', ''awaiting_approval''))%')
     OR (name = 'attempts' AND sql LIKE '%''interrupted'', ''stalled''))%'))
)sql";

// v4: the request runtime's traces (`orch task`).
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE traces (
  id          TEXT PRIMARY KEY NOT NULL,
  request     TEXT NOT NULL,
  project     TEXT NOT NULL,
  workspace   TEXT NOT NULL,
  state       TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('open', 'done', 'escalated', 'abandoned')),
  doc         TEXT NOT NULL CHECK (json_valid(doc)),
  run_id      TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  closed_at   INTEGER NOT NULL
);
CREATE INDEX traces_by_status ON traces (status, updated_at);

CREATE TABLE trace_events (
  seq       INTEGER PRIMARY KEY AUTOINCREMENT,
  trace_id  TEXT NOT NULL REFERENCES traces (id) DEFERRABLE INITIALLY DEFERRED,
  ts        INTEGER NOT NULL,
  kind      TEXT NOT NULL,
  state     TEXT NOT NULL,
  data      TEXT NOT NULL CHECK (json_valid(data))
);
CREATE INDEX trace_events_by_trace ON trace_events (trace_id, seq);

CREATE TRIGGER trace_events_never_change BEFORE UPDATE ON trace_events
BEGIN
  SELECT RAISE(ABORT, 'trace events are append-only: an event never changes');
END;
CREATE TRIGGER trace_events_never_deleted BEFORE DELETE ON trace_events
BEGIN
  SELECT RAISE(ABORT, 'trace events are append-only: events are never deleted');
END;
CREATE TRIGGER trace_events_never_replaced BEFORE INSERT ON trace_events
WHEN EXISTS (SELECT 1 FROM trace_events WHERE seq = NEW.seq)
BEGIN
  SELECT RAISE(ABORT, 'trace events are append-only: this seq already exists');
END;
)sql";

// v5: the review runtime's reviews (`orch review`).
constexpr const char* kSchemaV5 = R"sql(
CREATE TABLE reviews (
  id          TEXT PRIMARY KEY NOT NULL,
  name        TEXT NOT NULL,
  workspace   TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('running', 'passed', 'failed', 'escalated', 'spend_cap')),
  verdict     TEXT NOT NULL CHECK (verdict IN ('', 'PASS', 'REVISE', 'BLOCK', 'INCOMPLETE')),
  rounds      INTEGER NOT NULL CHECK (rounds >= 0),
  doc         TEXT NOT NULL CHECK (json_valid(doc)),
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);
CREATE INDEX reviews_by_created ON reviews (created_at);
)sql";

// v6: small outputs kept in the attempt's row instead of a file of their own.
constexpr const char* kSchemaV6 = R"sql(
ALTER TABLE attempts ADD COLUMN stdout_text TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN stderr_text TEXT NOT NULL DEFAULT '';
)sql";

// v7: the status CHECK constraints as OR chains instead of IN lists. SQLite
// evaluates a CHECK `x IN (a, b, c, ...)` of more than two values by building a
// temporary b-tree of the list every time a statement checks a row: each step
// upsert, attempt insert and attempt finish built one or two (a third of the
// instructions orch ran on the 5000-step benchmark; docs/benchmarks.md, session
// 20). The same values compared one by one accept and refuse exactly what the
// lists did, so every existing row satisfies the new text and it is rewritten as
// in v3; `verify` checks that no IN list of text values is left in the tables.
constexpr const char* kSchemaV7 = R"sql(
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (status IN (''running'', ''succeeded'', ''failed'', ''cancelled'',
                                                   ''budget_exhausted'', ''escalated'', ''interrupted'', ''awaiting_approval''))',
'CHECK (status = ''running'' OR status = ''succeeded'' OR status = ''failed'' OR
                                                    status = ''cancelled'' OR status = ''budget_exhausted'' OR status = ''escalated'' OR
                                                    status = ''interrupted'' OR status = ''awaiting_approval'')')
 WHERE type = 'table' AND name = 'runs';
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (status IN (''pending'', ''running'', ''done'', ''failed'', ''skipped'',
                                                   ''cancelled'', ''awaiting_approval''))',
'CHECK (status = ''pending'' OR status = ''running'' OR status = ''done'' OR
                                                    status = ''failed'' OR status = ''skipped'' OR status = ''cancelled'' OR
                                                    status = ''awaiting_approval'')')
 WHERE type = 'table' AND name = 'steps';
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (status IN (''running'', ''succeeded'', ''failed'', ''timed_out'',
                                                   ''cancelled'', ''interrupted'', ''stalled''))',
'CHECK (status = ''running'' OR status = ''succeeded'' OR status = ''failed'' OR
                                                    status = ''timed_out'' OR status = ''cancelled'' OR status = ''interrupted'' OR
                                                    status = ''stalled'')')
 WHERE type = 'table' AND name = 'attempts';
UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (status IN (''open'', ''done'', ''escalated'', ''abandoned''))',
'CHECK (status = ''open'' OR status = ''done'' OR status = ''escalated'' OR status = ''abandoned'')')
 WHERE type = 'table' AND name = 'traces';
UPDATE sqlite_schema SET sql = replace(replace(sql,
'CHECK (status IN (''running'', ''passed'', ''failed'', ''escalated'', ''spend_cap''))',
'CHECK (status = ''running'' OR status = ''passed'' OR status = ''failed'' OR status = ''escalated'' OR
              status = ''spend_cap'')'),
'CHECK (verdict IN ('''', ''PASS'', ''REVISE'', ''BLOCK'', ''INCOMPLETE''))',
'CHECK (verdict = '''' OR verdict = ''PASS'' OR verdict = ''REVISE'' OR verdict = ''BLOCK'' OR
              verdict = ''INCOMPLETE'')')
 WHERE type = 'table' AND name = 'reviews';
PRAGMA writable_schema = OFF;
)sql";
constexpr const char* kVerifyV7 = R"sql(
SELECT count(*) = 5 FROM sqlite_schema
 WHERE type = 'table' AND name IN ('runs', 'steps', 'attempts', 'traces', 'reviews')
   AND sql NOT LIKE '%IN (''%' AND sql LIKE '%CHECK (status = %'
)sql";

// v8: events.seq without AUTOINCREMENT. Events are never deleted (the
// events_never_deleted trigger), so the largest seq is never taken away and
// SQLite's plain choice, the largest plus one, is already strictly increasing
// and never reused; AUTOINCREMENT only added a read and a write of
// sqlite_sequence to every event (about 5% of orch's own CPU on the 5000-step
// benchmark). The table's pages are the same either way, so the text is
// rewritten as in v3 and the events row of sqlite_sequence is dropped.
constexpr const char* kSchemaV8 = R"sql(
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'seq     INTEGER PRIMARY KEY AUTOINCREMENT,', 'seq     INTEGER PRIMARY KEY,')
 WHERE type = 'table' AND name = 'events';
PRAGMA writable_schema = OFF;
DELETE FROM sqlite_sequence WHERE name = 'events';
)sql";
constexpr const char* kVerifyV8 = R"sql(
SELECT count(*) = 1 FROM sqlite_schema
 WHERE type = 'table' AND name = 'events'
   AND sql NOT LIKE '%AUTOINCREMENT%' AND sql LIKE '%seq     INTEGER PRIMARY KEY,%'
)sql";

// v9: a review can be abandoned (`orch review --abandon ID`): one more value in
// the reviews status CHECK, rewritten as in v7. Every existing row satisfies the
// wider constraint.
constexpr const char* kSchemaV9 = R"sql(
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, 'status = ''escalated'' OR
              status = ''spend_cap'')',
'status = ''escalated'' OR
              status = ''spend_cap'' OR status = ''abandoned'')')
 WHERE type = 'table' AND name = 'reviews';
PRAGMA writable_schema = OFF;
)sql";
constexpr const char* kVerifyV9 = R"sql(
SELECT count(*) = 1 FROM sqlite_schema
 WHERE type = 'table' AND name = 'reviews' AND sql LIKE '%status = ''spend_cap'' OR status = ''abandoned'')%'
)sql";

// v10: the prompt cache's share of an attempt's input tokens, kept apart for the
// report (tokens_in already counts them). Existing rows said nothing of a cache.
constexpr const char* kSchemaV10 = R"sql(
ALTER TABLE attempts ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
)sql";

// v11: the owner of a run (engine/phase_runner.h): the runtime, its id, round and
// phase, so a runtime finds its runs by key instead of parsing their names. The
// runs of earlier orchs are given their owners here, from the same evidence the
// runtimes read before: a task's run is the one its trace names (or, for a trace
// killed before it recorded one, the run named "task TRACE"); a review's phase
// is the run named "review ID round N PHASE" of a review that exists, with one
// of the review's four phases. Any other run keeps no owner. From then on a
// run's owner is the one it was written with (a trigger refuses a change).
constexpr const char* kSchemaV11 = R"sql(
ALTER TABLE runs ADD COLUMN owner_kind TEXT NOT NULL DEFAULT ''
  CHECK (owner_kind = '' OR owner_kind = 'task' OR owner_kind = 'review' OR owner_kind = 'cycle');
ALTER TABLE runs ADD COLUMN owner_id TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN owner_round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN owner_phase TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_owner ON runs (owner_kind, owner_id, created_at);
UPDATE runs SET owner_kind = 'task', owner_id = t.id
  FROM traces AS t
 WHERE t.run_id = runs.id OR (t.run_id = '' AND runs.name = 'task ' || t.id);
UPDATE runs SET owner_kind = 'review', owner_id = p.review, owner_round = p.round, owner_phase = p.phase
  FROM (SELECT id AS run_id, review, CAST(substr(rest, 1, instr(rest, ' ') - 1) AS INTEGER) AS round,
               substr(rest, instr(rest, ' ') + 1) AS phase
          FROM (SELECT id, substr(tail, 1, instr(tail, ' round ') - 1) AS review,
                       substr(tail, instr(tail, ' round ') + 7) AS rest
                  FROM (SELECT id, substr(name, 8) AS tail FROM runs
                         WHERE owner_kind = '' AND name LIKE 'review % round % %'))) AS p
 WHERE runs.id = p.run_id AND p.round > 0 AND p.phase IN ('reviewers', 'judge', 'claims', 'fix')
   AND p.review IN (SELECT id FROM reviews);
CREATE TRIGGER runs_owner_never_changes BEFORE UPDATE OF owner_kind, owner_id, owner_round, owner_phase ON runs
  WHEN OLD.owner_kind IS NOT NEW.owner_kind OR OLD.owner_id IS NOT NEW.owner_id
    OR OLD.owner_round IS NOT NEW.owner_round OR OLD.owner_phase IS NOT NEW.owner_phase
BEGIN
  SELECT RAISE(ABORT, 'a run''s owner never changes');
END;
)sql";

// v12: the machine that ran an attempt, so that a ledger shared by several
// machines says where an attempt's log files and snapshot are. Earlier attempts
// ran on the machine of the ledger's folder: '' says nothing more.
constexpr const char* kSchemaV12 = R"sql(
ALTER TABLE attempts ADD COLUMN host TEXT NOT NULL DEFAULT '';
)sql";

// v13: the cycle runtime's cycle runs and the transitions their writer applied
// (`orch cycle`, orch/cycle_store.h). The status CHECK is an OR chain (v7).
// `seq` is a plain INTEGER PRIMARY KEY, as events.seq since v8: no row is ever
// deleted, so the largest plus one is never reused. The store inserts a
// transition with ON CONFLICT DO NOTHING; the trigger
// cycle_transitions_recorded_once makes a hand-written INSERT OR REPLACE (which
// would delete the first row without firing a DELETE trigger) write nothing too.
constexpr const char* kSchemaV13 = R"sql(
CREATE TABLE cycles (
  id          TEXT PRIMARY KEY NOT NULL,
  name        TEXT NOT NULL,
  workspace   TEXT NOT NULL,
  config_file TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status = 'running' OR status = 'converged' OR status = 'max_iterations' OR
                                   status = 'budget' OR status = 'failed'),
  cycles      INTEGER NOT NULL CHECK (cycles >= 0),
  doc_json    TEXT NOT NULL CHECK (json_valid(doc_json)),
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);
CREATE INDEX cycles_by_created ON cycles (created_at);

CREATE TABLE cycle_transitions (
  seq         INTEGER PRIMARY KEY,
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
  time_ms     INTEGER NOT NULL,
  UNIQUE (run, cycle, item)
);

CREATE TRIGGER cycle_transitions_never_change BEFORE UPDATE ON cycle_transitions
BEGIN
  SELECT RAISE(ABORT, 'cycle transitions are append-only: a transition never changes');
END;
CREATE TRIGGER cycle_transitions_never_deleted BEFORE DELETE ON cycle_transitions
BEGIN
  SELECT RAISE(ABORT, 'cycle transitions are append-only: transitions are never deleted');
END;
CREATE TRIGGER cycle_transitions_never_replaced BEFORE INSERT ON cycle_transitions
WHEN EXISTS (SELECT 1 FROM cycle_transitions WHERE seq = NEW.seq)
BEGIN
  SELECT RAISE(ABORT, 'cycle transitions are append-only: this seq already exists');
END;
CREATE TRIGGER cycle_transitions_recorded_once BEFORE INSERT ON cycle_transitions
WHEN EXISTS (SELECT 1 FROM cycle_transitions
             WHERE run = NEW.run AND cycle = NEW.cycle AND item = NEW.item)
BEGIN
  SELECT RAISE(IGNORE);
END;
)sql";

// v14: runs executed by `orch worker` processes (docs/workers-distributed.md):
// the run's dispatch, the queue of their attempts and the live workers. The
// queue is served by PostgreSQL (SELECT ... FOR UPDATE SKIP LOCKED); a SQLite
// ledger has the same tables, so that a version means the same in both
// dialects, and refuses a run with dispatch 'workers'.
constexpr const char* kSchemaV14 = R"sql(
ALTER TABLE runs ADD COLUMN dispatch TEXT NOT NULL DEFAULT '' CHECK (dispatch = '' OR dispatch = 'workers');

CREATE TABLE work_items (
  run_id           TEXT NOT NULL,
  step_id          TEXT NOT NULL,
  attempt          INTEGER NOT NULL,
  executor         TEXT NOT NULL,
  labels           TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(labels)),
  spec             BLOB NOT NULL,
  state            TEXT NOT NULL CHECK (state = 'queued' OR state = 'claimed' OR state = 'finished' OR
                                        state = 'settled' OR state = 'expired' OR state = 'lost'),
  worker           TEXT NOT NULL DEFAULT '',
  lease_until      INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  output_bytes     INTEGER NOT NULL DEFAULT -1,
  outcome          BLOB NOT NULL DEFAULT x'',
  reason           TEXT NOT NULL DEFAULT '',
  queued_at        INTEGER NOT NULL,
  claimed_at       INTEGER NOT NULL DEFAULT 0,
  finished_at      INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, step_id, attempt)
);

CREATE TABLE workers (
  name         TEXT PRIMARY KEY NOT NULL,
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  slots        INTEGER NOT NULL,
  labels       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(labels)),
  lease_ms     INTEGER NOT NULL,
  started_at   INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL,
  stopped_at   INTEGER NOT NULL DEFAULT 0
);
)sql";

// v15: the model an attempt called ("PROVIDER/MODEL"; the llm executor's), so
// that tokens and cost can be told by model (`orch serve`'s /metrics).
constexpr const char* kSchemaV15 = R"sql(
ALTER TABLE attempts ADD COLUMN model TEXT NOT NULL DEFAULT '';
)sql";

const std::array<Migration, 15> kMigrations{{
    {1, "initial schema: runs, plans, steps, attempts, events", schema_v1_sql()},
    {2, "runs.budget_json: the plan's budget limits", kSchemaV2},
    {3, "statuses awaiting_approval (runs, steps) and stalled (attempts)", kSchemaV3, true, kVerifyV3},
    {4, "traces and trace_events: the request runtime (orch task)", kSchemaV4},
    {5, "reviews: the review runtime (orch review)", kSchemaV5},
    {6, "attempts.stdout_text, stderr_text: outputs kept in the ledger", kSchemaV6},
    {7, "status CHECK constraints as OR chains: no temporary b-tree per row written", kSchemaV7, true,
     kVerifyV7},
    {8, "events.seq without AUTOINCREMENT: never reused since events are never deleted", kSchemaV8, true,
     kVerifyV8},
    {9, "reviews.status abandoned: a review ended unfinished by orch review --abandon", kSchemaV9, true,
     kVerifyV9},
    {10, "attempts.cache_read_tokens, cache_write_tokens: the prompt cache's share of tokens_in", kSchemaV10},
    {11, "runs.owner_kind, owner_id, owner_round, owner_phase: the runtime a run belongs to", kSchemaV11},
    {12, "attempts.host: the machine that ran the attempt", kSchemaV12},
    {13, "cycles and cycle_transitions: the cycle runtime (orch cycle)", kSchemaV13},
    {14, "runs.dispatch, work_items, workers: runs executed by orch worker processes", kSchemaV14},
    {15, "attempts.model: the model an attempt called", kSchemaV15},
}};

}  // namespace

std::span<const Migration> schema_migrations() {
  return kMigrations;
}

}  // namespace orch
