// postgres/pg_store.h — the Store on a PostgreSQL database, through libpq.
//
// The same contract and the same semantics as SqliteStore (ledger/sqlite_store.h,
// whose "beyond the Store contract" list holds here too), on a database that
// stores on many machines may share. Where it differs:
//   * lock() and locked() are session-level advisory locks of the server
//     (pg_store_lock.cc), not files: one lock, one connection of its own, so a
//     holder that dies, on any machine, releases it when its connection drops.
//     A restart of the server drops them too: begin() and commit() first take
//     again every lock this store holds whose connection was lost, and fail
//     with ErrorCode::Busy, for good, once another process took one meanwhile.
//   * A lost connection (the server restarted) is got back (pg_reconnect.h):
//     a statement outside a transaction, and begin(), connect again and are
//     sent again; inside one, the transaction fails with ErrorCode::Disconnected
//     (the server rolled it back) and the next begin() connects again.
//   * A finished attempt's log files are copied into the database
//     (attempt_output, pg_store_output.cc) in the transaction that finishes it,
//     and read_attempt_output serves them from there: `orch logs` works from any
//     machine, and after the files are gone.
//   * A statement that fails inside begin()..commit() aborts the transaction
//     (PostgreSQL's rule; SQLite undoes only the statement): commit() then
//     fails and rolls it back.
//   * cancel_requested() inside a transaction locks the run's row (FOR UPDATE)
//     until it ends: as with SQLite's BEGIN IMMEDIATE, no request_cancel() lands
//     between that read and the update_run() of the same turn, so none is lost.
//   * folder() is a local folder given at open, for the attempt logs while they
//     are written, snapshots and the spawn journal.
//   * insert_transition() of an unknown cycle run fails with NotFound at once
//     and writes nothing (a SELECT first: the deferred foreign key would only
//     fail the COMMIT); inside a transaction the transaction goes on.
// Also the TraceStore, ReviewStore and CycleStore of the ledger (their parts in
// pg_store_traces.cc and pg_store_cycles.cc), as SqliteStore is: one connection
// serves all four, and begin()/commit()/rollback() are shared (open_postgres_ledger,
// pg_ledger.cc). One PgStore is one connection (plus one per held lock), used
// from one thread at a time. The schema: pg_schema.cc.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "orch/cycle_store.h"
#include "orch/review_store.h"
#include "orch/store.h"
#include "orch/trace_store.h"
#include "postgres/pg_connection.h"

namespace orch {

namespace detail {
class PgLockTable;  // the locks a PgStore holds (pg_store_lock.cc)
}

class PgStore final : public Store, public TraceStore, public ReviewStore, public CycleStore {
 public:
  // Connects to `url`, and creates or checks the ledger's tables in the first
  // schema of its search_path (pg_schema.h).
  static Expected<std::unique_ptr<PgStore>> open(const std::string& url, std::filesystem::path folder);

  const std::filesystem::path& folder() const override { return folder_; }
  std::filesystem::path location() const override { return location_; }

  Expected<std::unique_ptr<StoreLock>> lock(
      const std::string& name,
      const std::function<std::string(const std::string& holder)>& when_busy = {}) override;
  bool locked(const std::string& name) override;
  Expected<OutputRead> read_attempt_output(const AttemptRecord& a, AttemptStream stream,
                                           const std::function<void(std::string_view)>& sink) const override;

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
  Expected<void> record_event(const EventRecord& event) override;
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

  // TraceStore and ReviewStore (pg_store_traces.cc)
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

  // CycleStore (pg_store_cycles.cc)
  Expected<void> insert_cycle(const CycleRecord& cycle) override;
  Expected<void> update_cycle(const CycleRecord& cycle) override;
  Expected<std::optional<CycleRecord>> find_cycle(const std::string& id) override;
  Expected<std::vector<CycleRecord>> list_cycles() override;
  Expected<bool> insert_transition(const CycleTransition& transition) override;
  Expected<std::vector<CycleTransition>> transitions(const std::string& run) override;

  // The connection itself, for tests (raw queries).
  detail::PgConnection& connection() { return *conn_; }

 private:
  PgStore(std::string url, std::unique_ptr<detail::PgConnection> conn, std::filesystem::path folder,
          std::string schema, detail::PgReconnectPolicy reconnect);
  Error not_found(const std::string& what) const;
  // Copies a final attempt's log files into attempt_output (pg_store_output.cc).
  Expected<void> keep_outputs(const AttemptRecord& a);
  // Takes again the held locks whose connection was lost; Busy once one was
  // taken by another process meanwhile (pg_store_lock.cc).
  Expected<void> keep_locks();

  std::string url_;                      // for the connections of locks
  detail::PgReconnectPolicy reconnect_;  // ORCH_PG_RECONNECT_S, read at open
  std::shared_ptr<detail::PgLockTable>
      locks_;  // the locks held (shared with them: they may outlive the store)
  // A pointer: read_attempt_output is const, and reading is a use of the connection.
  std::unique_ptr<detail::PgConnection> conn_;
  std::filesystem::path folder_;
  std::string schema_;              // the schema holding the ledger: locks are per ledger
  std::filesystem::path location_;  // "postgresql://HOST:PORT/DB (schema S)", for messages
};

}  // namespace orch
