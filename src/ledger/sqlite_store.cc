#include "ledger/sqlite_store.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <system_error>

#include "ledger/migrate.h"
#include "ledger/record_rows.h"
#include "ledger/schema.h"
#include "ledger/statement_rows.h"
#include "orch/ledger.h"
#include "orch/workspace.h"
#include "sqlite/connection_settings.h"

namespace orch {

namespace fs = std::filesystem;
namespace rows = detail::rows;
using detail::collect;
using detail::first_row;

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int store_schema_version() {
  return schema_migrations().back().version;
}

Expected<std::unique_ptr<Store>> open_sqlite_store(const fs::path& db_path) {
  auto store = ORCH_TRY(SqliteStore::open(db_path));
  return std::unique_ptr<Store>(std::move(store));
}

namespace {

// The one SQLite connection behind all four interfaces.
class SqliteLedger final : public Ledger {
 public:
  explicit SqliteLedger(std::unique_ptr<SqliteStore> store) : store_(std::move(store)) {}
  Store& runs() override { return *store_; }
  TraceStore& traces() override { return *store_; }
  ReviewStore& reviews() override { return *store_; }
  CycleStore& cycles() override { return *store_; }

 private:
  std::unique_ptr<SqliteStore> store_;
};

}  // namespace

Expected<std::unique_ptr<Ledger>> open_sqlite_ledger(const fs::path& db_path) {
  auto store = ORCH_TRY(SqliteStore::open(db_path));
  return std::unique_ptr<Ledger>(std::make_unique<SqliteLedger>(std::move(store)));
}

Expected<std::unique_ptr<SqliteStore>> SqliteStore::open(const fs::path& db_path) {
  // Read the environment first: a typo in ORCH_SYNC must not leave a new file behind.
  const SyncMode sync = ORCH_TRY(sync_mode_from_env(std::getenv("ORCH_SYNC")));
  std::error_code ec;
  if (db_path.empty()) return fail(ErrorCode::Io, "'': not a usable ledger path: empty path");
  // The file itself, through any symlink: its folder holds the run locks, so two
  // paths to one ledger must come to one folder.
  auto resolved = resolve_symlinks(db_path);
  if (!resolved) {
    return fail(resolved.error().code, fmt::format("'{}': not a usable ledger path: {}", db_path.string(),
                                                   resolved.error().message));
  }
  const fs::path path = std::move(*resolved);
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return fail(ErrorCode::Io,
                fmt::format("{}: creating the ledger folder: {}", path.parent_path().string(), ec.message()));
  }
  // A ledger that does not exist yet is built whole under a temporary name and
  // renamed into place. An empty file (touched, or left by an orch older than
  // this) is created in place below, as on a filesystem that cannot rename
  // without replacing.
  if (fs::symlink_status(path, ec).type() == fs::file_type::not_found)
    ORCH_TRY(create_ledger_file(path, now_ms()));
  auto db = ORCH_TRY(SqliteDb::open(path, kLedgerFileKind));
  set_busy_timeout(db);
  ORCH_TRY(leave_files_on_close(db));
  // Decide what the file is before changing anything in it (even the journal mode).
  const int version = ORCH_TRY(ledger_schema_version(db));
  ORCH_TRY(apply_connection_settings(db, sync));
  if (version < store_schema_version()) ORCH_TRY(migrate_to_current(db, now_ms()));

  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(db), path.parent_path()));
  store->checkpointer_ = std::make_unique<WalCheckpointer>(path, sync);
  install_wal_checkpointer(store->db_, *store->checkpointer_);
  return store;
}

SqliteStore::~SqliteStore() {
  // The thread first: its last checkpoint leaves less for the one below to copy.
  checkpointer_->stop();
  // The statements are reset between uses and hold no read lock; a checkpoint
  // only needs the connection out of any transaction.
  shrink_wal_if_large(db_);
}

Expected<Statement*> SqliteStore::prepared(Statement& statement, const char* sql) {
  if (!statement.prepared()) statement = ORCH_TRY(Statement::prepare(db_, sql));
  return &statement;
}

Error SqliteStore::not_found(const std::string& what) const {
  return Error{ErrorCode::NotFound, fmt::format("{}: {}", db_.path().string(), what)};
}

// ---- transactions -----------------------------------------------------------------

Expected<void> SqliteStore::begin() {
  Statement& begin_sql = *ORCH_TRY(prepared(sql_.begin, "BEGIN IMMEDIATE"));
  // IMMEDIATE takes the write lock now, waiting (busy timeout) for another writer;
  // a deferred BEGIN would fail with SQLITE_BUSY when it later tried to write.
  return begin_sql.run([] { return "starting a transaction"; });
}

Expected<void> SqliteStore::commit() {
  Statement& commit_sql = *ORCH_TRY(prepared(sql_.commit, "COMMIT"));
  auto committed = commit_sql.run([] { return "committing"; });
  if (!committed && db_.in_transaction()) (void)rollback();
  return committed;
}

Expected<void> SqliteStore::rollback() {
  Statement& rollback_sql = *ORCH_TRY(prepared(sql_.rollback, "ROLLBACK"));
  if (!db_.in_transaction()) return {};
  return rollback_sql.run([] { return "rolling back"; });
}

// ---- writes -----------------------------------------------------------------------

Expected<void> SqliteStore::insert_run(const RunRecord& run) {
  Statement& insert_run_sql = *ORCH_TRY(prepared(sql_.insert_run, rows::kInsertRun));
  rows::bind_run(insert_run_sql, run);
  return insert_run_sql.run([&] { return fmt::format("inserting run '{}'", run.id); });
}

Expected<void> SqliteStore::update_run(const RunRecord& run) {
  Statement& update_run_sql = *ORCH_TRY(prepared(sql_.update_run, rows::kUpdateRun));
  rows::bind_run(update_run_sql, run);
  ORCH_TRY(update_run_sql.run([&] { return fmt::format("updating run '{}'", run.id); }));
  if (db_.changes() == 0)
    return std::unexpected(not_found(fmt::format("updating run '{}': no such run", run.id)));
  return {};
}

Expected<void> SqliteStore::insert_plan_version(const PlanVersion& plan) {
  Statement& insert_plan_sql = *ORCH_TRY(prepared(sql_.insert_plan, rows::kInsertPlan));
  rows::bind_plan(insert_plan_sql, plan);
  return insert_plan_sql.run(
      [&] { return fmt::format("inserting version {} of the plan of run '{}'", plan.version, plan.run_id); });
}

Expected<void> SqliteStore::upsert_step(const StepRecord& step) {
  // Most writes are of a step the ledger has (it is recorded pending when its run
  // starts, then running, then done): an UPDATE by the key costs one lookup; the
  // upsert only when it changed nothing.
  Statement& update_step_sql = *ORCH_TRY(prepared(sql_.update_step, rows::kUpdateStep));
  rows::bind_step(update_step_sql, step);
  ORCH_TRY(update_step_sql.run(
      [&] { return fmt::format("writing step '{}' of run '{}'", step.step_id, step.run_id); }));
  if (db_.changes() > 0) return {};
  return insert_step(step);
}

Expected<void> SqliteStore::insert_step(const StepRecord& step) {
  Statement& upsert_step_sql = *ORCH_TRY(prepared(sql_.upsert_step, rows::kUpsertStep));
  rows::bind_step(upsert_step_sql, step);
  return upsert_step_sql.run(
      [&] { return fmt::format("writing step '{}' of run '{}'", step.step_id, step.run_id); });
}

Expected<void> SqliteStore::insert_attempt(const AttemptRecord& attempt) {
  Statement& insert_attempt_sql = *ORCH_TRY(prepared(sql_.insert_attempt, rows::kInsertAttempt));
  rows::bind_attempt(insert_attempt_sql, attempt);
  return insert_attempt_sql.run([&] {
    return fmt::format("inserting attempt {} of step '{}' in run '{}'", attempt.number, attempt.step_id,
                       attempt.run_id);
  });
}

Expected<void> SqliteStore::finish_attempt(const AttemptRecord& attempt) {
  Statement& finish_attempt_sql = *ORCH_TRY(prepared(sql_.finish_attempt, rows::kFinishAttempt));
  auto describe = [&] {
    return fmt::format("finishing attempt {} of step '{}' in run '{}'", attempt.number, attempt.step_id,
                       attempt.run_id);
  };
  if (attempt.status == AttemptStatus::Running) {
    return fail(ErrorCode::Internal,
                fmt::format("{}: {}: 'running' is not a final status", db_.path().string(), describe()));
  }
  rows::bind_attempt(finish_attempt_sql, attempt);
  ORCH_TRY(finish_attempt_sql.run(describe));
  if (db_.changes() == 0) {
    return fail(ErrorCode::Store, fmt::format("{}: {}: no running attempt with that number (it is already "
                                              "finished, and finished attempts never change, or it was never "
                                              "started)",
                                              db_.path().string(), describe()));
  }
  return {};
}

Expected<std::int64_t> SqliteStore::append_event(const EventRecord& event) {
  Statement& insert_event_sql = *ORCH_TRY(prepared(sql_.insert_event, rows::kInsertEvent));
  rows::bind_event(insert_event_sql, event);
  ORCH_TRY(insert_event_sql.run(
      [&] { return fmt::format("appending event '{}' to run '{}'", event.kind, event.run_id); }));
  return sqlite3_last_insert_rowid(db_.handle());
}

Expected<void> SqliteStore::request_cancel(const std::string& run_id) {
  Statement& request_cancel_sql = *ORCH_TRY(prepared(sql_.request_cancel, rows::kRequestCancel));
  request_cancel_sql.bind_text(1, run_id);
  ORCH_TRY(
      request_cancel_sql.run([&] { return fmt::format("requesting cancellation of run '{}'", run_id); }));
  if (db_.changes() == 0)
    return std::unexpected(not_found(fmt::format("cancelling run '{}': no such run", run_id)));
  return {};
}

// ---- reads ------------------------------------------------------------------------

Expected<std::optional<RunRecord>> SqliteStore::find_run(const std::string& run_id) {
  Statement& find_run_sql = *ORCH_TRY(prepared(sql_.find_run, rows::kFindRun));
  find_run_sql.bind_text(1, run_id);
  return first_row(find_run_sql, rows::read_run, [&] { return fmt::format("reading run '{}'", run_id); });
}

Expected<std::vector<RunRecord>> SqliteStore::list_runs() {
  Statement& list_runs_sql = *ORCH_TRY(prepared(sql_.list_runs, rows::kListRuns));
  return collect(list_runs_sql, rows::read_run, [] { return "listing runs"; });
}

Expected<std::vector<RunRecord>> SqliteStore::owned_runs(OwnerKind kind, const std::string& owner_id) {
  Statement& owned_runs_sql = *ORCH_TRY(prepared(sql_.owned_runs, rows::kOwnedRuns));
  owned_runs_sql.bind_text(1, owner_kind_name(kind));
  owned_runs_sql.bind_text(2, owner_id);
  return collect(owned_runs_sql, rows::read_run,
                 [&] { return fmt::format("listing the runs of {} '{}'", owner_kind_name(kind), owner_id); });
}

Expected<PlanVersion> SqliteStore::latest_plan(const std::string& run_id) {
  Statement& latest_plan_sql = *ORCH_TRY(prepared(sql_.latest_plan, rows::kLatestPlan));
  latest_plan_sql.bind_text(1, run_id);
  auto plan = ORCH_TRY(first_row(latest_plan_sql, rows::read_plan,
                                 [&] { return fmt::format("reading the plan of run '{}'", run_id); }));
  if (!plan) return std::unexpected(not_found(fmt::format("run '{}' has no plan", run_id)));
  return std::move(*plan);
}

Expected<std::vector<PlanVersion>> SqliteStore::plan_versions(const std::string& run_id) {
  Statement& plan_versions_sql = *ORCH_TRY(prepared(sql_.plan_versions, rows::kPlanVersions));
  plan_versions_sql.bind_text(1, run_id);
  return collect(plan_versions_sql, rows::read_plan,
                 [&] { return fmt::format("reading the plan versions of run '{}'", run_id); });
}

Expected<std::vector<StepRecord>> SqliteStore::steps(const std::string& run_id) {
  Statement& count_steps_of_run_sql = *ORCH_TRY(prepared(sql_.count_steps_of_run, rows::kCountStepsOfRun));
  Statement& steps_of_run_sql = *ORCH_TRY(prepared(sql_.steps_of_run, rows::kStepsOfRun));
  auto describe = [&] { return fmt::format("reading the steps of run '{}'", run_id); };
  count_steps_of_run_sql.bind_text(1, run_id);
  auto count = ORCH_TRY(first_row(
      count_steps_of_run_sql, [](const Statement& row) { return row.column_int(0); }, describe));
  steps_of_run_sql.bind_text(1, run_id);
  return collect(steps_of_run_sql, rows::read_step, describe,
                 static_cast<std::size_t>(std::max<std::int64_t>(count.value_or(0), 0)));
}

Expected<std::optional<StepRecord>> SqliteStore::find_step(const std::string& run_id,
                                                           const std::string& step_id) {
  Statement& find_step_sql = *ORCH_TRY(prepared(sql_.find_step, rows::kFindStep));
  find_step_sql.bind_text(1, run_id);
  find_step_sql.bind_text(2, step_id);
  return first_row(find_step_sql, rows::read_step,
                   [&] { return fmt::format("reading step '{}' of run '{}'", step_id, run_id); });
}

Expected<std::map<StepStatus, int>> SqliteStore::step_status_counts(const std::string& run_id) {
  Statement& counts_sql = *ORCH_TRY(prepared(sql_.step_status_counts, rows::kStepStatusCounts));
  counts_sql.bind_text(1, run_id);
  auto read = [](const Statement& row) {
    return std::pair{parse_step_status(row.column_text(0)), static_cast<int>(row.column_int(1))};
  };
  std::map<StepStatus, int> counts;
  for (const auto& [status, n] : ORCH_TRY(
           collect(counts_sql, read, [&] { return fmt::format("counting the steps of run '{}'", run_id); })))
    if (status) counts[*status] = n;  // the schema's CHECK admits only known names
  return counts;
}

Expected<std::vector<AttemptRecord>> SqliteStore::attempts(const std::string& run_id,
                                                           const std::string& step_id) {
  Statement& attempts_of_run_sql = *ORCH_TRY(prepared(sql_.attempts_of_run, rows::kAttemptsOfRun));
  Statement& attempts_of_step_sql = *ORCH_TRY(prepared(sql_.attempts_of_step, rows::kAttemptsOfStep));
  if (step_id.empty()) {
    attempts_of_run_sql.bind_text(1, run_id);
    return collect(attempts_of_run_sql, rows::read_attempt,
                   [&] { return fmt::format("reading the attempts of run '{}'", run_id); });
  }
  attempts_of_step_sql.bind_text(1, run_id);
  attempts_of_step_sql.bind_text(2, step_id);
  return collect(attempts_of_step_sql, rows::read_attempt, [&] {
    return fmt::format("reading the attempts of step '{}' in run '{}'", step_id, run_id);
  });
}

Expected<std::vector<EventRecord>> SqliteStore::events(const std::string& run_id, std::int64_t after_seq,
                                                       int limit) {
  Statement& events_of_run_sql = *ORCH_TRY(prepared(sql_.events_of_run, rows::kEventsOfRun));
  events_of_run_sql.bind_text(1, run_id);
  events_of_run_sql.bind_int(2, after_seq);
  events_of_run_sql.bind_int(3, limit < 0 ? -1 : limit);  // LIMIT -1: no limit
  return collect(events_of_run_sql, rows::read_event,
                 [&] { return fmt::format("reading the events of run '{}'", run_id); });
}

Expected<std::vector<EventRecord>> SqliteStore::events_of_kind(const std::string& run_id,
                                                               const std::string& kind) {
  Statement& events_of_kind_sql = *ORCH_TRY(prepared(sql_.events_of_kind, rows::kEventsOfKind));
  events_of_kind_sql.bind_text(1, run_id);
  events_of_kind_sql.bind_text(2, kind);
  return collect(events_of_kind_sql, rows::read_event,
                 [&] { return fmt::format("reading the {} events of run '{}'", kind, run_id); });
}

Expected<bool> SqliteStore::cancel_requested(const std::string& run_id) {
  Statement& cancel_requested_sql = *ORCH_TRY(prepared(sql_.cancel_requested, rows::kCancelRequested));
  cancel_requested_sql.bind_text(1, run_id);
  auto flag = ORCH_TRY(first_row(
      cancel_requested_sql, [](const Statement& row) { return row.column_bool(0); },
      [&] { return fmt::format("reading the cancel flag of run '{}'", run_id); }));
  if (!flag) return std::unexpected(not_found(fmt::format("run '{}' not found", run_id)));
  return *flag;
}

Expected<AttemptTotals> SqliteStore::attempt_totals(const std::string& run_id) {
  Statement& attempt_totals_sql = *ORCH_TRY(prepared(sql_.attempt_totals, rows::kAttemptTotals));
  attempt_totals_sql.bind_text(1, run_id);
  auto totals = ORCH_TRY(first_row(
      attempt_totals_sql,
      [](const Statement& row) {
        return AttemptTotals{row.column_int(0), row.column_real(1), row.column_int(2), row.column_int(3)};
      },
      [&] { return fmt::format("summing the attempts of run '{}'", run_id); }));
  return totals.value_or(AttemptTotals{});
}

// ---- traces -----------------------------------------------------------------------

Expected<void> SqliteStore::insert_trace(const TraceRecord& trace) {
  Statement& insert_trace_sql = *ORCH_TRY(prepared(sql_.insert_trace, rows::kInsertTrace));
  rows::bind_trace(insert_trace_sql, trace);
  return insert_trace_sql.run([&] { return fmt::format("inserting trace '{}'", trace.id); });
}

Expected<void> SqliteStore::update_trace(const TraceRecord& trace) {
  Statement& update_trace_sql = *ORCH_TRY(prepared(sql_.update_trace, rows::kUpdateTrace));
  rows::bind_trace(update_trace_sql, trace);
  ORCH_TRY(update_trace_sql.run([&] { return fmt::format("updating trace '{}'", trace.id); }));
  if (db_.changes() == 0) return std::unexpected(not_found(fmt::format("trace '{}' not found", trace.id)));
  return {};
}

Expected<std::optional<TraceRecord>> SqliteStore::find_trace(const std::string& id) {
  Statement& find_trace_sql = *ORCH_TRY(prepared(sql_.find_trace, rows::kFindTrace));
  find_trace_sql.bind_text(1, id);
  return first_row(find_trace_sql, rows::read_trace, [&] { return fmt::format("reading trace '{}'", id); });
}

Expected<std::vector<TraceRecord>> SqliteStore::list_traces() {
  Statement& list_traces_sql = *ORCH_TRY(prepared(sql_.list_traces, rows::kListTraces));
  return collect(list_traces_sql, rows::read_trace, [] { return "listing traces"; });
}

Expected<std::int64_t> SqliteStore::append_trace_event(const TraceEventRecord& event) {
  Statement& insert_trace_event_sql = *ORCH_TRY(prepared(sql_.insert_trace_event, rows::kInsertTraceEvent));
  rows::bind_trace_event(insert_trace_event_sql, event);
  ORCH_TRY(insert_trace_event_sql.run(
      [&] { return fmt::format("appending event '{}' to trace '{}'", event.kind, event.trace_id); }));
  return sqlite3_last_insert_rowid(db_.handle());
}

Expected<std::vector<TraceEventRecord>> SqliteStore::trace_events(const std::string& trace_id) {
  Statement& trace_events_sql = *ORCH_TRY(prepared(sql_.trace_events, rows::kTraceEvents));
  trace_events_sql.bind_text(1, trace_id);
  return collect(trace_events_sql, rows::read_trace_event,
                 [&] { return fmt::format("reading the events of trace '{}'", trace_id); });
}

// ---- reviews ----------------------------------------------------------------------

Expected<void> SqliteStore::insert_review(const ReviewRecord& review) {
  Statement& insert_review_sql = *ORCH_TRY(prepared(sql_.insert_review, rows::kInsertReview));
  rows::bind_review(insert_review_sql, review);
  return insert_review_sql.run([&] { return fmt::format("inserting review '{}'", review.id); });
}

Expected<void> SqliteStore::update_review(const ReviewRecord& review) {
  Statement& update_review_sql = *ORCH_TRY(prepared(sql_.update_review, rows::kUpdateReview));
  rows::bind_review(update_review_sql, review);
  ORCH_TRY(update_review_sql.run([&] { return fmt::format("updating review '{}'", review.id); }));
  if (db_.changes() == 0) return std::unexpected(not_found(fmt::format("review '{}' not found", review.id)));
  return {};
}

Expected<std::optional<ReviewRecord>> SqliteStore::find_review(const std::string& id) {
  Statement& find_review_sql = *ORCH_TRY(prepared(sql_.find_review, rows::kFindReview));
  find_review_sql.bind_text(1, id);
  return first_row(find_review_sql, rows::read_review,
                   [&] { return fmt::format("reading review '{}'", id); });
}

Expected<std::vector<ReviewRecord>> SqliteStore::list_reviews() {
  Statement& list_reviews_sql = *ORCH_TRY(prepared(sql_.list_reviews, rows::kListReviews));
  return collect(list_reviews_sql, rows::read_review, [] { return "listing reviews"; });
}

}  // namespace orch
