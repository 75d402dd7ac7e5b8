// ledger/schema.cc — THE LEDGER SCHEMA (orch's durable format). Keep docs/store.md in step.
//
// An orch ledger is a SQLite database (.orch/orch.db by default) in WAL mode with
// PRAGMA application_id = 0x6F726368 ("orch"). Times are INTEGER milliseconds since
// the Unix epoch (UTC); 0 means "not yet". Booleans are INTEGER 0/1. Money is REAL
// US dollars. Text columns hold the bytes orch was given, unchanged (step output may
// be invalid UTF-8). Status columns hold the names from ledger/status_names.cc.
//
// schema_version   one row per migration applied to this file
//   version          the schema version the migration produced; MAX(version) is the
//                    file's version. An orch refuses a file newer than it knows.
//   applied_at       when it was applied (ms)
//   description      what the migration did
//
// runs             one row per run (one execution of a plan, resumable)
//   id               the run id (e.g. 20240101-120000-ab12), primary key
//   name             the plan's name
//   status           running | succeeded | failed | cancelled | budget_exhausted |
//                    escalated | interrupted
//   reason           why the run ended the way it did ("step 'b' failed"), '' while running
//   plan_path        the plan file as given (absolute)
//   workspace        the workspace directory (absolute)
//   plan_version     the latest version in `plans` (--replan adds versions)
//   concurrency      the -j limit
//   keep_going       1 when on_failure is continue (--keep-going)
//   exit_code        the orch exit code the run ended with; -1 while running
//   created_at, updated_at, finished_at (0 while not finished)
//   spent_tokens, spent_cost_usd, spent_attempts, spent_wall_ms
//                    budget spent so far, summed over resumes; interrupted attempts
//                    are not counted in spent_attempts. Rewritten at most every
//                    250 ms while the run goes on: the attempts rows are the
//                    authority (resume sums them)
//   owner_pid        the process driving the run now, 0 when none
//   cancel_requested 1 once `orch cancel` asked the run to stop; the driving process
//                    polls it. Any process may set it.
//   budget_json      (v2) the plan's budget limits, a JSON object with the keys set
//                    in the plan: tokens, cost_usd, wall_ms, attempts; '{}' when none
//                    (and for runs recorded before v2)
//   owner_kind       (v11) the runtime the run was started for: '' (a run of
//                    `orch run`), task, review or cycle
//   owner_id         (v11) that runtime's id for its work: the task's trace id, the
//                    review's id, the cycle's id; '' when no owner
//   owner_round      (v11) the owner's round the run belongs to; 0 when none
//   owner_phase      (v11) the phase of that round (review: reviewers, judge,
//                    claims, fix); '' when none. Index runs_by_owner serves
//                    "the runs of this owner" (Store::owned_runs). The four are
//                    written with the run and never change (trigger
//                    runs_owner_never_changes).
//
// plans            every version of a run's plan, exactly as submitted (immutable)
//   run_id, version  primary key; version 1 is the plan the run started with
//   path             the file it came from
//   text             its full text
//   created_at
//
// steps            the current state of each step of a run (updated in place)
//   run_id, step_id  primary key
//   idx              the step's position in the plan (steps are listed by idx)
//   goal, executor   as in the plan
//   status           pending | running | done | failed | skipped | cancelled
//   reason           why it failed or was skipped
//   result           the result of the attempt that made it done
//   fingerprint      hash of the rendered attempt that made it done (--replan compares it)
//   attempts_counted attempts counted against the step's cap since it was last reset
//   last_attempt     the highest attempt number so far (numbers are never reused)
//   tokens_in, tokens_out, cost_usd, wall_ms   summed over its attempts
//   started_at, finished_at
//
// attempts         one row per execution of a step: APPEND-ONLY
//   run_id, step_id, number   primary key; number counts from 1 per step
//   status           running | succeeded | failed | timed_out | cancelled | interrupted
//   counted          0 for attempts not charged to the step's cap (interrupted)
//   ending           how the process ended: exited, signaled, timed_out, stalled,
//                    cancelled, spawn_failed, error, setup_failed, interrupted
//                    (orch/attempt_outcome.h); '' while it runs
//   exit_code        -1 when it did not exit normally
//   signal           the signal that ended it, 0 when none
//   reason           the failed check or error; '' when it succeeded
//   checks_json      JSON array: [{"kind":..,"held":..,"reason":..}, ...]
//   fingerprint      hash of the rendered attempt (executor, command, inputs, checks)
//   stdout_path, stderr_path   its output files (.orch/runs/<run>/<step>.<n>.stdout|stderr);
//                    '' for a stream kept in stdout_text/stderr_text instead
//   stdout_bytes, stderr_bytes, stdout_truncated, stderr_truncated
//   output_tail      the last 2 KiB of output (given to the next attempt as previous_failure)
//   tokens_in, tokens_out, cost_usd
//   started_at, finished_at (0 while running), duration_ms
//   snapshot_dir     where the step's `writes:` files were saved first; '' if none
//   host             (v12) the machine that ran it (its host name): its log files
//                    and snapshot are there; '' for attempts recorded before v12
//   cache_read_tokens, cache_write_tokens   (v10) of tokens_in, those the provider
//                    read from and wrote to its prompt cache (0 when it says nothing
//                    of a cache); tokens_in counts them already
//   stdout_text, stderr_text   (v6) a stream kept whole in the row instead of a file
//                    (the llm executor's output up to 64 KiB, masked like the
//                    files; its path is then ''); '' otherwise
//   A row is inserted as running and moved once to a final status. Triggers refuse
//   any UPDATE of a finished row, any change of a row's key, any DELETE, and an
//   INSERT that would replace an existing row (INSERT OR REPLACE).
//
// events           every state change, in order: APPEND-ONLY (no UPDATE, no DELETE)
//   seq              strictly increasing over the whole file, never reused (events are
//                    never deleted; AUTOINCREMENT until v8)
//   run_id, ts
//   kind             run_started, step_ready, attempt_started, ... (docs/store.md)
//   step_id          '' for run-level events
//   attempt          the attempt number, 0 when not about an attempt
//   data             a JSON object with details ('{}' when none)
//
// traces           (v4) one row per request trace of `orch task` (updated in place)
//   id               the trace id (e.g. 20261130-121500-fix-the-stale-date-crash), primary key
//   request          the request, verbatim
//   project          --project, '' when none
//   workspace        the workspace directory (absolute)
//   state            the state entered last: CLASSIFY ... SUMMARIZE, DONE, ESCALATED, ABANDONED
//   status           open | done | escalated | abandoned
//   doc              the trace document (schemas/trace.schema.json): classification,
//                    pipeline, transitions, verify verdicts, engine and learning results
//   run_id           the run `orch task run` drives for it; '' when none
//   created_at, updated_at (the last transition), closed_at (0 while open)
//
// trace_events     (v4) every transition and outcome of a trace, in order: APPEND-ONLY
//   seq              strictly increasing (AUTOINCREMENT)
//   trace_id, ts
//   kind             trace_created, state_entered, verify_verdict, engine_result,
//                    closed, learning_result (docs/store.md)
//   state            the state it is about ('' when none)
//   data             a JSON object with details
//
// reviews          (v5) one row per review of `orch review` (updated in place)
//   id               the review id (e.g. 20261130-150200-paper), primary key
//   name             the RUN.yaml's name
//   workspace        the workspace directory (absolute)
//   status           running | passed | failed | escalated | spend_cap | abandoned (v9)
//   verdict          the last round's verdict: PASS, REVISE, BLOCK, INCOMPLETE ('' before round 1)
//   rounds           rounds completed
//   doc              the review document (schemas/review-report.schema.json): the
//                    resolved config, every round's findings, verdicts, fixes,
//                    escalations, tokens, score
//   created_at, updated_at
//
// cycles           (v13) one row per cycle run of `orch cycle` (updated in place)
//   id               the cycle run's id (e.g. 20261207-160000-proofs), primary key
//   name             the cycle.yaml's name
//   workspace        the workspace directory (absolute)
//   config_file      the cycle.yaml it started with (absolute)
//   status           running | converged | max_iterations | budget | failed
//   cycles           cycles finished (their writer done)
//   doc_json         the cycle run's document (schemas/cycle-report.schema.json):
//                    the config, every cycle's objectives, jobs, milestones and
//                    the writer's decisions
//   created_at, updated_at
//
// cycle_transitions (v13) every change of an item's state a cycle run's writer
//                  applied, in order: the audit, exported to
//                  .orch/cycles/RUN/audit/transitions.jsonl. APPEND-ONLY, at most
//                  one per (run, cycle, item)
//   seq              strictly increasing, never reused (never deleted, as events)
//   run              the cycle run (foreign key to cycles)
//   cycle            the cycle it was applied in: 1, 2, ...
//   job              the slug of the job that worked on the item
//   item             the item's id in the status file
//   from_state, to_state   the item's state before and after
//   gate             the gate command, as run
//   gate_exit        its exit code
//   hash_before      the content hash of the item's file before the job
//   hash_after       and as the gate checked it
//   time_ms          when the writer applied it
//   Triggers refuse any UPDATE or DELETE; an INSERT of a second row for the same
//   (run, cycle, item) writes nothing, whatever its conflict clause (INSERT OR
//   REPLACE included), so a writer resumed after kill -9 never applies one twice.
//
// Foreign keys (PRAGMA foreign_keys=ON in every orch connection) tie plans, steps,
// attempts and events to their run, attempts to their step, trace events to their
// trace and cycle transitions to their cycle run. They are DEFERRABLE
// INITIALLY DEFERRED: checked at COMMIT, so the engine may write the rows of one
// loop turn in any order.

#include "ledger/schema.h"

#include <array>

namespace orch {

namespace {

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE schema_version (
  version     INTEGER PRIMARY KEY,
  applied_at  INTEGER NOT NULL,
  description TEXT NOT NULL
);

CREATE TABLE runs (
  id               TEXT PRIMARY KEY NOT NULL,
  name             TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled',
                                                   'budget_exhausted', 'escalated', 'interrupted')),
  reason           TEXT NOT NULL,
  plan_path        TEXT NOT NULL,
  workspace        TEXT NOT NULL,
  plan_version     INTEGER NOT NULL,
  concurrency      INTEGER NOT NULL,
  keep_going       INTEGER NOT NULL CHECK (keep_going IN (0, 1)),
  exit_code        INTEGER NOT NULL,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL,
  finished_at      INTEGER NOT NULL,
  spent_tokens     INTEGER NOT NULL,
  spent_cost_usd   REAL NOT NULL,
  spent_attempts   INTEGER NOT NULL,
  spent_wall_ms    INTEGER NOT NULL,
  owner_pid        INTEGER NOT NULL,
  cancel_requested INTEGER NOT NULL CHECK (cancel_requested IN (0, 1))
);

CREATE TABLE plans (
  run_id     TEXT NOT NULL REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED,
  version    INTEGER NOT NULL CHECK (version >= 1),
  path       TEXT NOT NULL,
  text       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, version)
);

CREATE TABLE steps (
  run_id           TEXT NOT NULL REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED,
  step_id          TEXT NOT NULL,
  idx              INTEGER NOT NULL,
  goal             TEXT NOT NULL,
  executor         TEXT NOT NULL,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed', 'skipped',
                                                   'cancelled')),
  reason           TEXT NOT NULL,
  result           TEXT NOT NULL,
  fingerprint      TEXT NOT NULL,
  attempts_counted INTEGER NOT NULL,
  last_attempt     INTEGER NOT NULL,
  tokens_in        INTEGER NOT NULL,
  tokens_out       INTEGER NOT NULL,
  cost_usd         REAL NOT NULL,
  wall_ms          INTEGER NOT NULL,
  started_at       INTEGER NOT NULL,
  finished_at      INTEGER NOT NULL,
  PRIMARY KEY (run_id, step_id)
);

CREATE TABLE attempts (
  run_id           TEXT NOT NULL,
  step_id          TEXT NOT NULL,
  number           INTEGER NOT NULL CHECK (number >= 1),
  status           TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'timed_out',
                                                   'cancelled', 'interrupted')),
  counted          INTEGER NOT NULL CHECK (counted IN (0, 1)),
  ending           TEXT NOT NULL,
  exit_code        INTEGER NOT NULL,
  signal           INTEGER NOT NULL,
  reason           TEXT NOT NULL,
  checks_json      TEXT NOT NULL,
  fingerprint      TEXT NOT NULL,
  stdout_path      TEXT NOT NULL,
  stderr_path      TEXT NOT NULL,
  stdout_bytes     INTEGER NOT NULL,
  stderr_bytes     INTEGER NOT NULL,
  stdout_truncated INTEGER NOT NULL CHECK (stdout_truncated IN (0, 1)),
  stderr_truncated INTEGER NOT NULL CHECK (stderr_truncated IN (0, 1)),
  output_tail      TEXT NOT NULL,
  tokens_in        INTEGER NOT NULL,
  tokens_out       INTEGER NOT NULL,
  cost_usd         REAL NOT NULL,
  started_at       INTEGER NOT NULL,
  finished_at      INTEGER NOT NULL,
  duration_ms      INTEGER NOT NULL,
  snapshot_dir     TEXT NOT NULL,
  PRIMARY KEY (run_id, step_id, number),
  FOREIGN KEY (run_id, step_id) REFERENCES steps (run_id, step_id) DEFERRABLE INITIALLY DEFERRED
);
-- No extra index: the primary key's index serves "the attempts of a run" and "of a
-- step", and every index costs a page write per attempt on the engine's hot path.

CREATE TABLE events (
  seq     INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id  TEXT NOT NULL REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED,
  ts      INTEGER NOT NULL,
  kind    TEXT NOT NULL,
  step_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  data    TEXT NOT NULL CHECK (json_valid(data))
);
CREATE INDEX events_by_run ON events (run_id, seq);

-- Append-only, enforced here so that no code path (and no stray sqlite3 session
-- short of dropping the triggers) can rewrite history. recursive_triggers is off,
-- so INSERT OR REPLACE would delete without firing the DELETE triggers: the
-- INSERT triggers refuse a row whose key already exists instead.
CREATE TRIGGER attempts_finished_never_change BEFORE UPDATE ON attempts
WHEN OLD.status <> 'running'
BEGIN
  SELECT RAISE(ABORT, 'attempts are append-only: a finished attempt never changes');
END;
CREATE TRIGGER attempts_key_never_changes BEFORE UPDATE OF run_id, step_id, number ON attempts
WHEN NEW.run_id IS NOT OLD.run_id OR NEW.step_id IS NOT OLD.step_id OR NEW.number IS NOT OLD.number
BEGIN
  SELECT RAISE(ABORT, 'attempts are append-only: an attempt''s run, step and number never change');
END;
CREATE TRIGGER attempts_never_deleted BEFORE DELETE ON attempts
BEGIN
  SELECT RAISE(ABORT, 'attempts are append-only: attempts are never deleted');
END;
CREATE TRIGGER attempts_never_replaced BEFORE INSERT ON attempts
WHEN EXISTS (SELECT 1 FROM attempts
             WHERE run_id = NEW.run_id AND step_id = NEW.step_id AND number = NEW.number)
BEGIN
  SELECT RAISE(ABORT, 'attempts are append-only: this attempt number already exists');
END;

CREATE TRIGGER events_never_change BEFORE UPDATE ON events
BEGIN
  SELECT RAISE(ABORT, 'events are append-only: an event never changes');
END;
CREATE TRIGGER events_never_deleted BEFORE DELETE ON events
BEGIN
  SELECT RAISE(ABORT, 'events are append-only: events are never deleted');
END;
CREATE TRIGGER events_never_replaced BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE seq = NEW.seq)
BEGIN
  SELECT RAISE(ABORT, 'events are append-only: this seq already exists');
END;

CREATE TRIGGER plans_never_change BEFORE UPDATE ON plans
BEGIN
  SELECT RAISE(ABORT, 'plan versions are immutable: a submitted plan never changes');
END;
CREATE TRIGGER plans_never_deleted BEFORE DELETE ON plans
BEGIN
  SELECT RAISE(ABORT, 'plan versions are immutable: plan versions are never deleted');
END;
CREATE TRIGGER plans_never_replaced BEFORE INSERT ON plans
WHEN EXISTS (SELECT 1 FROM plans WHERE run_id = NEW.run_id AND version = NEW.version)
BEGIN
  SELECT RAISE(ABORT, 'plan versions are immutable: this plan version already exists');
END;
)sql";

// To change the schema, append {2, "what it does", kSchemaV2} with the ALTER/CREATE
// statements that turn a v1 file into v2, document the new columns above and in
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

constexpr std::array<Migration, 13> kMigrations{{
    {1, "initial schema: runs, plans, steps, attempts, events", kSchemaV1},
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
}};

}  // namespace

std::span<const Migration> schema_migrations() {
  return kMigrations;
}

}  // namespace orch
