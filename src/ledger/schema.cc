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
// runs.dispatch    (v14) '' (the driving process runs the attempts) or 'workers'
//                  (`orch worker` processes claim them from work_items; a
//                  PostgreSQL ledger only, docs/workers-distributed.md)
//
// work_items       (v14) the queue of a workers run's attempts (one per attempt
//                  its driver recorded running), served by PostgreSQL's
//                  SELECT ... FOR UPDATE SKIP LOCKED (distrib/work_queue.cc)
//   run_id, step_id, attempt   primary key: the attempt it executes
//   executor         the step's executor
//   labels           JSON array (PostgreSQL: text[]): the step's runs-on; a
//                    worker claims it only when it has every label
//   spec             the rendered attempt, CBOR (distrib/attempt_wire.cc: a
//                    command's bytes go through unchanged, UTF-8 or not):
//                    command, environment, inputs, timeout, token cap
//   state            queued | claimed (a worker runs it under a lease) | finished
//                    (outcome set by the worker that held the lease) | settled
//                    (its driver took the outcome) | expired (its lease expired,
//                    or its driver withdrew it: a late completion is refused) |
//                    lost (its driver took that). Each change the driver reads
//                    is read, then acknowledged: a statement sent again after a
//                    lost connection never loses one. A
//                    worker claims, and completes, only an item whose attempt
//                    the ledger has running: one a resume closed is fenced off.
//   worker           the worker that claimed it ('' while queued)
//   lease_until      when the lease ends unless renewed (server time, ms)
//   cancel_requested 1 once the driver asked the worker to stop it
//   output_bytes     bytes its process wrote so far, as the worker last said
//   outcome          CBOR: how the attempt ended (distrib/attempt_wire.cc); empty
//                    until finished
//   reason           why it was lost ("lease expired on WORKER")
//   queued_at, claimed_at, finished_at
//
// workers          (v14) one row per `orch worker` (by --name), kept after it stops
//   name             primary key; host, pid: where it runs
//   slots, labels    what it can take (labels: JSON array; PostgreSQL text[])
//   lease_ms         its --lease-s: a worker whose heartbeat is older is gone
//   started_at, heartbeat_at (server time), stopped_at (0 while running)
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

}  // namespace

const char* schema_v1_sql() {
  return kSchemaV1;
}

}  // namespace orch
