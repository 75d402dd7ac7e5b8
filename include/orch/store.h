// orch/store.h — the durable ledger: runs, plan versions, steps, attempts, events.
//
// The Store is the single source of truth for what happened. Status views, reports
// and resume read it, never the engine's memory. The contract every
// implementation keeps (src/ledger/sqlite_store.h is the SQLite one, and says how):
//   * Attempts are append-only: insert_attempt() adds a row in status running;
//     finish_attempt() moves it once to a final status; a finished row never
//     changes again, whoever writes (the store itself refuses it, not only orch).
//   * Every state change the engine makes is also an event row (append_event), in
//     order (seq is strictly increasing per store, and never reused).
//   * The engine groups the writes of one loop turn between begin() and commit():
//     they are durable together, or (a crash, rollback()) not at all.
//   * Readers in other processes (orch status, runs, logs) see only committed
//     turns and never block a writer; two processes writing different runs may
//     wait for each other briefly, never fail.
//   * A run's owner (RunOwner) is written with the run and never changes;
//     owned_runs() finds an owner's runs without reading the others.
// folder() is a folder on the machine that drives the runs, beside the ledger:
// attempt logs, snapshots and the spawn journal live there (and the run locks,
// for a store that keeps them in files: lock()).
// A Store object is used from one thread at a time. orch/ledger.h gives the
// Store with the TraceStore and ReviewStore of the same ledger.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/attempt_outcome.h"
#include "orch/error.h"

namespace orch {

// AwaitingApproval (run and step, schema v3): the risk guard paused a step until
// a human approves it (`orch approve`, then `orch resume`). Stalled (attempt,
// schema v3): a worker that made no progress for its stall_after was killed.
enum class RunStatus {
  Running,
  Succeeded,
  Failed,
  Cancelled,
  BudgetExhausted,
  Escalated,
  Interrupted,
  AwaitingApproval
};
enum class StepStatus { Pending, Running, Done, Failed, Skipped, Cancelled, AwaitingApproval };
enum class AttemptStatus { Running, Succeeded, Failed, TimedOut, Cancelled, Interrupted, Stalled };

const char* run_status_name(RunStatus s);          // "running", "succeeded", ..., "budget_exhausted"
const char* step_status_name(StepStatus s);        // "pending", "running", "done", ...
const char* attempt_status_name(AttemptStatus s);  // "running", ..., "timed_out", "interrupted"
std::optional<RunStatus> parse_run_status(std::string_view name);
std::optional<StepStatus> parse_step_status(std::string_view name);
std::optional<AttemptStatus> parse_attempt_status(std::string_view name);

// Which runtime a run was started for (schema v11). A run of `orch run` has no
// owner; a task's run, each phase of a review's rounds and of a cycle's names
// its owner, so the owner finds its runs by these columns (Store::owned_runs),
// never by parsing their names: a plan a user named "review x round 1 judge" is
// nobody's phase.
enum class OwnerKind { None, Task, Review, Cycle };
const char* owner_kind_name(OwnerKind k);  // "", "task", "review", "cycle"
std::optional<OwnerKind> parse_owner_kind(std::string_view name);

// Where a run's attempts execute (schema v14): in the process that drives it
// (Local), or in `orch worker` processes that claim them from a PostgreSQL
// ledger (Workers, docs/workers-distributed.md). Written with the run; a resume
// keeps it.
enum class Dispatch { Local, Workers };
const char* dispatch_name(Dispatch d);  // "", "workers"
std::optional<Dispatch> parse_dispatch(std::string_view name);

struct RunOwner {
  OwnerKind kind = OwnerKind::None;
  std::string id;     // the owner's id: a task's trace id, a review's id, a cycle's id
  int round = 0;      // the owner's round the run belongs to (0: none)
  std::string phase;  // the phase of that round ("reviewers", "judge", ...; "": none)
  bool operator==(const RunOwner&) const = default;
};

// Times are milliseconds since the Unix epoch (UTC).
struct RunRecord {
  std::string id;
  std::string name;
  RunStatus status = RunStatus::Running;
  std::string reason;     // why the run ended the way it did ("step 'b' failed", ...)
  std::string plan_path;  // as given on the command line (absolute)
  std::string workspace;  // absolute
  int plan_version = 1;   // latest version in the plans table
  int concurrency = 1;
  bool keep_going = false;
  int exit_code = -1;  // -1 while running
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
  std::int64_t finished_at = 0;  // 0 while not finished
  std::int64_t spent_tokens = 0;
  double spent_cost_usd = 0;
  std::int64_t spent_attempts = 0;  // counted attempts (interrupted ones are not)
  std::int64_t spent_wall_ms = 0;   // time the run was being driven, summed over resumes
  int owner_pid = 0;                // the process driving it now, 0 when none
  bool cancel_requested = false;
  // The plan's budget limits as JSON ({"tokens":..,"cost_usd":..,"wall_ms":..,
  // "attempts":..}, only those set), so reports need not re-parse the plan.
  std::string budget_json = "{}";
  RunOwner owner;  // (v11) none for a run of `orch run`
  Dispatch dispatch = Dispatch::Local;  // (v14)
};

struct PlanVersion {
  std::string run_id;
  int version = 1;
  std::string path;
  std::string text;  // the plan exactly as submitted
  std::int64_t created_at = 0;
};

struct StepRecord {
  std::string run_id;
  std::string step_id;
  int idx = 0;
  std::string goal;
  std::string executor;
  StepStatus status = StepStatus::Pending;
  std::string reason;        // why it failed or was skipped
  std::string result;        // the result of the attempt that made it done
  std::string fingerprint;   // of the rendered attempt that made it done
  int attempts_counted = 0;  // attempts counted against the step's cap since it was last reset
  int last_attempt = 0;      // highest attempt number so far (numbers never reuse)
  std::int64_t tokens_in = 0;
  std::int64_t tokens_out = 0;
  double cost_usd = 0;
  std::int64_t wall_ms = 0;  // summed duration of its attempts
  std::int64_t started_at = 0;
  std::int64_t finished_at = 0;
};

struct AttemptRecord {
  std::string run_id;
  std::string step_id;
  int number = 1;
  AttemptStatus status = AttemptStatus::Running;
  bool counted = true;  // false for interrupted attempts (not charged to the cap)
  AttemptEnding ending = AttemptEnding::Error;  // how the process ended (running: not yet known)
  int exit_code = -1;
  int signal = 0;
  std::string reason;       // the failed check or error, "" when it succeeded
  std::string checks_json;  // [{"kind":..,"held":..,"reason":..}, ...]
  std::string fingerprint;
  // A stream's file, or "" when the stream is kept in the row (stdout_text).
  std::string stdout_path;
  std::string stderr_path;
  // A stream kept whole in the ledger instead of a file (the llm executor's
  // output up to 64 KiB; masked like the files); "" when it has a file.
  std::string stdout_text;
  std::string stderr_text;
  std::int64_t stdout_bytes = 0;
  std::int64_t stderr_bytes = 0;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::string output_tail;     // last 2 KiB of output (for previous_failure)
  std::int64_t tokens_in = 0;  // the cache's included
  std::int64_t tokens_out = 0;
  std::int64_t cache_read_tokens = 0;   // (v10) of tokens_in: read from the prompt cache
  std::int64_t cache_write_tokens = 0;  // (v10) of tokens_in: written to it
  double cost_usd = 0;
  std::int64_t started_at = 0;
  std::int64_t finished_at = 0;  // 0 while running
  std::int64_t duration_ms = 0;
  std::string snapshot_dir;  // where `writes:` files were saved before it started ("" if none)
  // (v12) The machine that ran it (its host name): its log files while it runs
  // and its snapshot are on that machine. "" for attempts recorded before v12.
  std::string host;
  // (v15) The model the attempt called, "PROVIDER/MODEL" ("" when none, and for
  // attempts recorded before v15): /metrics counts tokens and cost by it.
  std::string model;
};

// What a run's attempts spent, summed from the append-only attempts table (the
// authority: the run row's spent_* totals may lag it by a loop turn).
struct AttemptTotals {
  std::int64_t tokens = 0;  // tokens_in + tokens_out
  double cost_usd = 0;
  std::int64_t counted = 0;  // attempts counted against budgets (not interrupted ones)
  std::int64_t last_ms = 0;  // the latest start or finish time of any attempt (0: none)
};

struct EventRecord {
  std::int64_t seq = 0;  // assigned by the store
  std::string run_id;
  std::int64_t ts = 0;
  std::string kind;       // run_started, step_ready, attempt_started, attempt_finished, step_done, ...
  std::string step_id;    // "" for run-level events
  int attempt = 0;        // 0 when not about an attempt
  std::string data_json;  // "{}" or a JSON object with details
};

// A lock of the store on a name: a run's id, or an owner's ("review-ID"). At most
// one holder at a time, across processes; a holder that dies (even by kill -9)
// releases it at once. Released when the object is destroyed.
class StoreLock {
 public:
  virtual ~StoreLock() = default;
};

// One of an attempt's two output streams.
enum class AttemptStream { Stdout, Stderr };

// Where the bytes of an attempt's stream were read from: its log file, its
// ledger record (an llm call's output is kept there), or nowhere (it wrote nothing).
enum class OutputSource { File, Ledger, None };
struct OutputRead {
  OutputSource source = OutputSource::None;
  std::string file;  // the file read, for OutputSource::File
};

class Store {
 public:
  virtual ~Store() = default;

  // The folder the store lives in (.orch/ by default); logs and snapshots go under it.
  virtual const std::filesystem::path& folder() const = 0;
  // Where the ledger is, for messages: its file (a store without one: its folder).
  virtual std::filesystem::path location() const { return folder(); }
  // The error for a run id this store has no run of: "no run 'ID' in LOCATION",
  // the id's control characters escaped (it came from a command line).
  Error no_run(const std::string& run_id) const;

  // Takes the lock of `name` without waiting. When a live process holds it:
  // ErrorCode::Busy, the message naming that process — `when_busy(holder)`
  // writes it when given (holder: its pid, or "unknown"; for a name that is not
  // a run's), else it says the run is being driven and how to stop it. The
  // default is a file lock under folder() (util/file_lock.h), right for a store
  // whose drivers share this machine; a store shared between machines overrides
  // both.
  virtual Expected<std::unique_ptr<StoreLock>> lock(
      const std::string& name, const std::function<std::string(const std::string& holder)>& when_busy = {});
  // Whether a live process holds the lock of `name` now (a run being driven).
  virtual bool locked(const std::string& name);

  // Hands `stream` of attempt `a` to `sink`, piece by piece, from wherever the
  // store keeps it: the attempt's record, or its log file (the path the record
  // names; for a project moved with its store, the same name under
  // folder()/runs/RUN/). A store that keeps logs elsewhere overrides it.
  virtual Expected<OutputRead> read_attempt_output(const AttemptRecord& a, AttemptStream stream,
                                                   const std::function<void(std::string_view)>& sink) const;

  virtual Expected<void> begin() = 0;
  virtual Expected<void> commit() = 0;
  virtual Expected<void> rollback() = 0;

  virtual Expected<void> insert_run(const RunRecord& run) = 0;
  virtual Expected<void> update_run(const RunRecord& run) = 0;  // every column but id
  virtual Expected<void> insert_plan_version(const PlanVersion& plan) = 0;
  virtual Expected<void> upsert_step(const StepRecord& step) = 0;
  // A step the ledger does not have yet (a new run's): as upsert_step, which a
  // store may make cheaper for rows it has.
  virtual Expected<void> insert_step(const StepRecord& step) { return upsert_step(step); }
  // An attempt's output: its streams are written, while it runs, to the files
  // its record names (stdout_path, stderr_path: on this machine, under
  // folder()), or kept in the record itself (stdout_text). When the record
  // becomes final (finish_attempt, or insert_attempt of a finished one) the files
  // are complete and are the store's: a store that keeps outputs elsewhere (rows
  // of a shared database) takes them there; a store whose outputs are those files
  // (SQLite) leaves them. read_attempt_output gives them back either way.
  virtual Expected<void> insert_attempt(const AttemptRecord& attempt) = 0;
  // Moves a running attempt to its final status. Fails (Store) for a finished row.
  virtual Expected<void> finish_attempt(const AttemptRecord& attempt) = 0;
  virtual Expected<std::int64_t> append_event(const EventRecord& event) = 0;
  // append_event for a caller that needs no seq (a scheduler turn's events).
  // Writes in a transaction — this, update_run, upsert_step, insert_step,
  // insert_attempt, finish_attempt — may be answered only at the transaction's
  // next read or its commit (a store that sends them to a server together,
  // postgres/pg_pipeline.cc): an error of one is then that read's or commit's.
  virtual Expected<void> record_event(const EventRecord& event) {
    auto seq = append_event(event);
    if (!seq) return std::unexpected(seq.error());
    return {};
  }
  virtual Expected<void> request_cancel(const std::string& run_id) = 0;

  virtual Expected<std::optional<RunRecord>> find_run(const std::string& run_id) = 0;
  virtual Expected<std::vector<RunRecord>> list_runs() = 0;  // newest first
  // The runs of one owner (all its rounds and phases), newest first. Served by
  // an index, so an owner with many runs in a large ledger is found at once.
  virtual Expected<std::vector<RunRecord>> owned_runs(OwnerKind kind, const std::string& owner_id) = 0;
  virtual Expected<PlanVersion> latest_plan(const std::string& run_id) = 0;
  // Every version of a run's plan (one per --replan), oldest first; none for an unknown run.
  virtual Expected<std::vector<PlanVersion>> plan_versions(const std::string& run_id) = 0;
  virtual Expected<std::vector<StepRecord>> steps(const std::string& run_id) = 0;  // by idx
  // One step's row. The default looks through what steps() returns.
  virtual Expected<std::optional<StepRecord>> find_step(const std::string& run_id,
                                                        const std::string& step_id);
  // How many of a run's steps are in each status, without reading the steps
  // (their results can be large). The default counts what steps() returns.
  virtual Expected<std::map<StepStatus, int>> step_status_counts(const std::string& run_id);
  // All attempts of a run (step_id empty) or of one step, by step then number.
  virtual Expected<std::vector<AttemptRecord>> attempts(const std::string& run_id,
                                                        const std::string& step_id = "") = 0;
  virtual Expected<std::vector<EventRecord>> events(const std::string& run_id, std::int64_t after_seq = 0,
                                                    int limit = -1) = 0;
  // The events of one kind ("step_approved", ...), in order; served by the
  // (run_id, seq) index, so cheap when the run has few of that kind.
  virtual Expected<std::vector<EventRecord>> events_of_kind(const std::string& run_id,
                                                            const std::string& kind) = 0;
  virtual Expected<bool> cancel_requested(const std::string& run_id) = 0;
  virtual Expected<AttemptTotals> attempt_totals(const std::string& run_id) = 0;
};

// Opens (creating if needed) a SQLite ledger at `db_path` (e.g. .orch/orch.db),
// in WAL mode, migrating its schema to the current version. Fails with a clear
// message when the file is not an orch ledger or is from a newer orch.
Expected<std::unique_ptr<Store>> open_sqlite_store(const std::filesystem::path& db_path);

// The schema version this orch writes (docs/store.md).
int store_schema_version();

}  // namespace orch
