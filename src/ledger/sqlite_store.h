// ledger/sqlite_store.h — the Store on an embedded SQLite file (.orch/orch.db).
//
// One SqliteStore is one connection, used from one thread at a time; any number
// of SqliteStores (in this or other processes) may share a file. Each statement
// is prepared the first time it is used and reused after that (see
// sqlite_statement.h): most orch commands run a handful of the store's
// statements, and preparing all of them at open was a measurable part of a
// short command's time (docs/benchmarks.md). How the
// connection is configured: connection_settings.h. The schema: schema.cc.
//
// Beyond the Store contract:
//   * commit() that fails rolls the transaction back, so the store is usable
//     again (begin() works) and no write lock is left held.
//   * rollback() outside a transaction does nothing, so error paths may call it
//     unconditionally.
//   * update_run() writes cancel_requested from the record like every other
//     column. To never lose a cancel requested by another process, read
//     cancel_requested() inside the same begin()..commit() as the update_run():
//     begin() takes the write lock, so no request_cancel() lands in between.
//   * insert_attempt() stores the record's status as given (normally running); an
//     attempt inserted with a final status is final at once and never changes.
//   * finish_attempt() with status running is refused (Internal): it is not an end.
//   * update_run() and request_cancel() of an unknown run fail with NotFound, as do
//     latest_plan() and cancel_requested(); find_run() returns nullopt instead.
//   * append_event() stores an empty data_json as "{}"; data must be JSON.
//   * insert_cycle(), update_cycle() store an empty doc_json as "{}".
//   * insert_transition() of an unknown cycle run fails with NotFound at once,
//     inside a transaction too, and writes nothing (the foreign key alone would
//     only fail the COMMIT, the whole transaction with it).
#pragma once

#include <filesystem>
#include <memory>

#include "ledger/wal_checkpointer.h"
#include "orch/cycle_store.h"
#include "orch/review_store.h"
#include "orch/store.h"
#include "orch/trace_store.h"
#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_statement.h"

namespace orch {

// Also the TraceStore of `orch task` (orch/trace_store.h), the ReviewStore of
// `orch review` (orch/review_store.h) and the CycleStore of `orch cycle`
// (orch/cycle_store.h; its part in sqlite_cycles.cc): one connection serves all
// four, and begin()/commit()/rollback() are shared.
class SqliteStore final : public Store, public TraceStore, public ReviewStore, public CycleStore {
 public:
  // Opens or creates the ledger (see open_sqlite_store in orch/store.h).
  static Expected<std::unique_ptr<SqliteStore>> open(const std::filesystem::path& db_path);

  const std::filesystem::path& folder() const override { return folder_; }
  std::filesystem::path location() const override { return db_.path(); }

  Expected<void> begin() override;
  Expected<void> commit() override;
  Expected<void> rollback() override;

  Expected<void> insert_run(const RunRecord& run) override;
  Expected<void> update_run(const RunRecord& run) override;
  Expected<void> insert_plan_version(const PlanVersion& plan) override;
  Expected<void> upsert_step(const StepRecord& step) override;
  Expected<void> insert_step(const StepRecord& step) override;
  Expected<void> insert_attempt(const AttemptRecord& attempt) override;
  Expected<void> finish_attempt(const AttemptRecord& attempt) override;
  Expected<std::int64_t> append_event(const EventRecord& event) override;
  Expected<void> request_cancel(const std::string& run_id) override;

  Expected<std::optional<RunRecord>> find_run(const std::string& run_id) override;
  Expected<std::vector<RunRecord>> list_runs() override;
  Expected<std::vector<RunRecord>> owned_runs(OwnerKind kind, const std::string& owner_id) override;
  Expected<PlanVersion> latest_plan(const std::string& run_id) override;
  Expected<std::vector<PlanVersion>> plan_versions(const std::string& run_id) override;
  Expected<std::vector<StepRecord>> steps(const std::string& run_id) override;
  Expected<std::map<StepStatus, int>> step_status_counts(const std::string& run_id) override;
  Expected<std::optional<StepRecord>> find_step(const std::string& run_id,
                                                const std::string& step_id) override;
  Expected<std::vector<AttemptRecord>> attempts(const std::string& run_id,
                                                const std::string& step_id = "") override;
  Expected<std::vector<EventRecord>> events(const std::string& run_id, std::int64_t after_seq = 0,
                                            int limit = -1) override;
  Expected<std::vector<EventRecord>> events_of_kind(const std::string& run_id,
                                                    const std::string& kind) override;
  Expected<bool> cancel_requested(const std::string& run_id) override;
  Expected<AttemptTotals> attempt_totals(const std::string& run_id) override;

  // TraceStore
  Expected<void> insert_trace(const TraceRecord& trace) override;
  Expected<void> update_trace(const TraceRecord& trace) override;
  Expected<std::optional<TraceRecord>> find_trace(const std::string& id) override;
  Expected<std::vector<TraceRecord>> list_traces() override;
  Expected<std::int64_t> append_trace_event(const TraceEventRecord& event) override;
  Expected<std::vector<TraceEventRecord>> trace_events(const std::string& trace_id) override;

  Expected<void> insert_review(const ReviewRecord& review) override;
  Expected<void> update_review(const ReviewRecord& review) override;
  Expected<std::optional<ReviewRecord>> find_review(const std::string& id) override;
  Expected<std::vector<ReviewRecord>> list_reviews() override;

  // CycleStore (sqlite_cycles.cc)
  Expected<void> insert_cycle(const CycleRecord& cycle) override;
  Expected<void> update_cycle(const CycleRecord& cycle) override;
  Expected<std::optional<CycleRecord>> find_cycle(const std::string& id) override;
  Expected<std::vector<CycleRecord>> list_cycles() override;
  Expected<bool> insert_transition(const CycleTransition& transition) override;
  Expected<std::vector<CycleTransition>> transitions(const std::string& run) override;

  // The connection itself, for diagnostics and tests (PRAGMA values, raw queries).
  SqliteDb& connection() { return db_; }

  // The connection's WAL checkpoints (ledger/wal_checkpointer.h): after a commit
  // that grows the WAL enough, a thread of the store's own copies it into the
  // database, so the writer does not stall on the checkpoint's fsyncs.
  const WalCheckpointer& checkpointer() const { return *checkpointer_; }

  // Closing stops the checkpoint thread, then shrinks a large WAL
  // (shrink_wal_if_large).
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

 private:
  // Every statement the store runs, each prepared on first use (prepared()).
  struct Statements {
    Statement begin, commit, rollback;
    Statement insert_run, update_run, find_run, list_runs, owned_runs, request_cancel, cancel_requested,
        attempt_totals;
    Statement insert_plan, latest_plan, plan_versions;
    Statement upsert_step, update_step, steps_of_run, count_steps_of_run, step_status_counts, find_step;
    Statement insert_attempt, finish_attempt, attempts_of_run, attempts_of_step;
    Statement insert_event, events_of_run, events_of_kind;
    Statement insert_trace, update_trace, find_trace, list_traces, insert_trace_event, trace_events;
    Statement insert_review, update_review, find_review, list_reviews;
    Statement insert_cycle, update_cycle, find_cycle, list_cycles, cycle_exists, insert_transition,
        transitions_of_run;
  };

  SqliteStore(SqliteDb db, std::filesystem::path folder) : db_(std::move(db)), folder_(std::move(folder)) {}
  // `statement`, prepared from `sql` if it is not yet.
  Expected<Statement*> prepared(Statement& statement, const char* sql);
  Error not_found(const std::string& what) const;

  SqliteDb db_;  // declared first: destroyed after the statements that use it
  std::filesystem::path folder_;
  Statements sql_;
  std::unique_ptr<WalCheckpointer> checkpointer_;  // stopped by the destructor, before db_ closes
};

}  // namespace orch
