#include "ledger/sqlite_store.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <system_error>

#include "ledger/connection_settings.h"
#include "ledger/migrate.h"
#include "ledger/record_rows.h"
#include "ledger/schema.h"

namespace orch {

namespace fs = std::filesystem;

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Steps `statement` to the end, reading each row with `read`; resets it whatever happens.
// `expected`: how many rows there will be, if known (saves re-allocating a
// 100,000-row vector as it grows).
template <class Read, class Describe>
auto collect(Statement& statement, const Read& read, const Describe& describe, std::size_t expected = 0)
    -> Expected<std::vector<decltype(read(statement))>> {
  ResetOnExit reset(statement);
  std::vector<decltype(read(statement))> rows;
  rows.reserve(expected);
  for (;;) {
    const bool row = ORCH_TRY(statement.step(describe));
    if (!row) return rows;
    rows.push_back(read(statement));
  }
}

// Steps once: the first row read with `read`, or nullopt. Resets the statement.
template <class Read, class Describe>
auto first_row(Statement& statement, const Read& read, const Describe& describe)
    -> Expected<std::optional<decltype(read(statement))>> {
  ResetOnExit reset(statement);
  const bool row = ORCH_TRY(statement.step(describe));
  if (!row) return std::nullopt;
  return read(statement);
}

}  // namespace

int store_schema_version() {
  return schema_migrations().back().version;
}

Expected<std::unique_ptr<Store>> open_sqlite_store(const fs::path& db_path) {
  auto store = ORCH_TRY(SqliteStore::open(db_path));
  return std::unique_ptr<Store>(std::move(store));
}

Expected<std::unique_ptr<SqliteStore>> SqliteStore::open(const fs::path& db_path) {
  // Read the environment first: a typo in ORCH_SYNC must not leave a new file behind.
  const SyncMode sync = ORCH_TRY(sync_mode_from_env(std::getenv("ORCH_SYNC")));
  std::error_code ec;
  const fs::path path = fs::absolute(db_path, ec).lexically_normal();
  if (ec || db_path.empty()) {
    return fail(ErrorCode::Io, fmt::format("'{}': not a usable ledger path: {}", db_path.string(),
                                           ec ? ec.message() : "empty path"));
  }
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return fail(ErrorCode::Io,
                fmt::format("{}: creating the ledger folder: {}", path.parent_path().string(), ec.message()));
  }
  auto db = ORCH_TRY(SqliteDb::open(path));
  set_busy_timeout(db);
  // Decide what the file is before changing anything in it (even the journal mode).
  const int version = ORCH_TRY(ledger_schema_version(db));
  ORCH_TRY(apply_connection_settings(db, sync));
  if (version < store_schema_version()) ORCH_TRY(migrate_to_current(db, now_ms()));

  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(db), path.parent_path()));
  ORCH_TRY(store->prepare_statements());
  return store;
}

Expected<void> SqliteStore::prepare_statements() {
  auto prepare = [this](Statement& target, const char* sql) -> Expected<void> {
    target = ORCH_TRY(Statement::prepare(db_, sql));
    return {};
  };
  ORCH_TRY(prepare(sql_.begin, "BEGIN IMMEDIATE"));
  ORCH_TRY(prepare(sql_.commit, "COMMIT"));
  ORCH_TRY(prepare(sql_.rollback, "ROLLBACK"));
  ORCH_TRY(prepare(sql_.insert_run, rows::kInsertRun));
  ORCH_TRY(prepare(sql_.update_run, rows::kUpdateRun));
  ORCH_TRY(prepare(sql_.find_run, rows::kFindRun));
  ORCH_TRY(prepare(sql_.list_runs, rows::kListRuns));
  ORCH_TRY(prepare(sql_.request_cancel, rows::kRequestCancel));
  ORCH_TRY(prepare(sql_.cancel_requested, rows::kCancelRequested));
  ORCH_TRY(prepare(sql_.attempt_totals, rows::kAttemptTotals));
  ORCH_TRY(prepare(sql_.insert_plan, rows::kInsertPlan));
  ORCH_TRY(prepare(sql_.latest_plan, rows::kLatestPlan));
  ORCH_TRY(prepare(sql_.upsert_step, rows::kUpsertStep));
  ORCH_TRY(prepare(sql_.steps_of_run, rows::kStepsOfRun));
  ORCH_TRY(prepare(sql_.count_steps_of_run, rows::kCountStepsOfRun));
  ORCH_TRY(prepare(sql_.insert_attempt, rows::kInsertAttempt));
  ORCH_TRY(prepare(sql_.finish_attempt, rows::kFinishAttempt));
  ORCH_TRY(prepare(sql_.attempts_of_run, rows::kAttemptsOfRun));
  ORCH_TRY(prepare(sql_.attempts_of_step, rows::kAttemptsOfStep));
  ORCH_TRY(prepare(sql_.insert_event, rows::kInsertEvent));
  ORCH_TRY(prepare(sql_.events_of_run, rows::kEventsOfRun));
  ORCH_TRY(prepare(sql_.events_of_kind, rows::kEventsOfKind));
  ORCH_TRY(prepare(sql_.insert_trace, rows::kInsertTrace));
  ORCH_TRY(prepare(sql_.update_trace, rows::kUpdateTrace));
  ORCH_TRY(prepare(sql_.find_trace, rows::kFindTrace));
  ORCH_TRY(prepare(sql_.list_traces, rows::kListTraces));
  ORCH_TRY(prepare(sql_.insert_trace_event, rows::kInsertTraceEvent));
  ORCH_TRY(prepare(sql_.trace_events, rows::kTraceEvents));
  ORCH_TRY(prepare(sql_.insert_review, rows::kInsertReview));
  ORCH_TRY(prepare(sql_.update_review, rows::kUpdateReview));
  ORCH_TRY(prepare(sql_.find_review, rows::kFindReview));
  ORCH_TRY(prepare(sql_.list_reviews, rows::kListReviews));
  return {};
}

Error SqliteStore::not_found(const std::string& what) const {
  return Error{ErrorCode::NotFound, fmt::format("{}: {}", db_.path().string(), what)};
}

// ---- transactions -----------------------------------------------------------------

Expected<void> SqliteStore::begin() {
  // IMMEDIATE takes the write lock now, waiting (busy timeout) for another writer;
  // a deferred BEGIN would fail with SQLITE_BUSY when it later tried to write.
  return sql_.begin.run([] { return "starting a transaction"; });
}

Expected<void> SqliteStore::commit() {
  auto committed = sql_.commit.run([] { return "committing"; });
  if (!committed && db_.in_transaction()) (void)rollback();
  return committed;
}

Expected<void> SqliteStore::rollback() {
  if (!db_.in_transaction()) return {};
  return sql_.rollback.run([] { return "rolling back"; });
}

// ---- writes -----------------------------------------------------------------------

Expected<void> SqliteStore::insert_run(const RunRecord& run) {
  rows::bind_run(sql_.insert_run, run);
  return sql_.insert_run.run([&] { return fmt::format("inserting run '{}'", run.id); });
}

Expected<void> SqliteStore::update_run(const RunRecord& run) {
  rows::bind_run(sql_.update_run, run);
  ORCH_TRY(sql_.update_run.run([&] { return fmt::format("updating run '{}'", run.id); }));
  if (db_.changes() == 0)
    return std::unexpected(not_found(fmt::format("updating run '{}': no such run", run.id)));
  return {};
}

Expected<void> SqliteStore::insert_plan_version(const PlanVersion& plan) {
  rows::bind_plan(sql_.insert_plan, plan);
  return sql_.insert_plan.run(
      [&] { return fmt::format("inserting version {} of the plan of run '{}'", plan.version, plan.run_id); });
}

Expected<void> SqliteStore::upsert_step(const StepRecord& step) {
  rows::bind_step(sql_.upsert_step, step);
  return sql_.upsert_step.run(
      [&] { return fmt::format("writing step '{}' of run '{}'", step.step_id, step.run_id); });
}

Expected<void> SqliteStore::insert_attempt(const AttemptRecord& attempt) {
  rows::bind_attempt(sql_.insert_attempt, attempt);
  return sql_.insert_attempt.run([&] {
    return fmt::format("inserting attempt {} of step '{}' in run '{}'", attempt.number, attempt.step_id,
                       attempt.run_id);
  });
}

Expected<void> SqliteStore::finish_attempt(const AttemptRecord& attempt) {
  auto describe = [&] {
    return fmt::format("finishing attempt {} of step '{}' in run '{}'", attempt.number, attempt.step_id,
                       attempt.run_id);
  };
  if (attempt.status == AttemptStatus::Running) {
    return fail(ErrorCode::Internal,
                fmt::format("{}: {}: 'running' is not a final status", db_.path().string(), describe()));
  }
  rows::bind_attempt(sql_.finish_attempt, attempt);
  ORCH_TRY(sql_.finish_attempt.run(describe));
  if (db_.changes() == 0) {
    return fail(ErrorCode::Store, fmt::format("{}: {}: no running attempt with that number (it is already "
                                              "finished, and finished attempts never change, or it was never "
                                              "started)",
                                              db_.path().string(), describe()));
  }
  return {};
}

Expected<std::int64_t> SqliteStore::append_event(const EventRecord& event) {
  rows::bind_event(sql_.insert_event, event);
  ORCH_TRY(sql_.insert_event.run(
      [&] { return fmt::format("appending event '{}' to run '{}'", event.kind, event.run_id); }));
  return sqlite3_last_insert_rowid(db_.handle());
}

Expected<void> SqliteStore::request_cancel(const std::string& run_id) {
  sql_.request_cancel.bind_text(1, run_id);
  ORCH_TRY(
      sql_.request_cancel.run([&] { return fmt::format("requesting cancellation of run '{}'", run_id); }));
  if (db_.changes() == 0)
    return std::unexpected(not_found(fmt::format("cancelling run '{}': no such run", run_id)));
  return {};
}

// ---- reads ------------------------------------------------------------------------

Expected<std::optional<RunRecord>> SqliteStore::find_run(const std::string& run_id) {
  sql_.find_run.bind_text(1, run_id);
  return first_row(sql_.find_run, rows::read_run, [&] { return fmt::format("reading run '{}'", run_id); });
}

Expected<std::vector<RunRecord>> SqliteStore::list_runs() {
  return collect(sql_.list_runs, rows::read_run, [] { return "listing runs"; });
}

Expected<PlanVersion> SqliteStore::latest_plan(const std::string& run_id) {
  sql_.latest_plan.bind_text(1, run_id);
  auto plan = ORCH_TRY(first_row(sql_.latest_plan, rows::read_plan,
                                 [&] { return fmt::format("reading the plan of run '{}'", run_id); }));
  if (!plan) return std::unexpected(not_found(fmt::format("run '{}' has no plan", run_id)));
  return std::move(*plan);
}

Expected<std::vector<StepRecord>> SqliteStore::steps(const std::string& run_id) {
  auto describe = [&] { return fmt::format("reading the steps of run '{}'", run_id); };
  sql_.count_steps_of_run.bind_text(1, run_id);
  auto count = ORCH_TRY(first_row(
      sql_.count_steps_of_run, [](const Statement& row) { return row.column_int(0); }, describe));
  sql_.steps_of_run.bind_text(1, run_id);
  return collect(sql_.steps_of_run, rows::read_step, describe,
                 static_cast<std::size_t>(std::max<std::int64_t>(count.value_or(0), 0)));
}

Expected<std::vector<AttemptRecord>> SqliteStore::attempts(const std::string& run_id,
                                                           const std::string& step_id) {
  if (step_id.empty()) {
    sql_.attempts_of_run.bind_text(1, run_id);
    return collect(sql_.attempts_of_run, rows::read_attempt,
                   [&] { return fmt::format("reading the attempts of run '{}'", run_id); });
  }
  sql_.attempts_of_step.bind_text(1, run_id);
  sql_.attempts_of_step.bind_text(2, step_id);
  return collect(sql_.attempts_of_step, rows::read_attempt, [&] {
    return fmt::format("reading the attempts of step '{}' in run '{}'", step_id, run_id);
  });
}

Expected<std::vector<EventRecord>> SqliteStore::events(const std::string& run_id, std::int64_t after_seq,
                                                       int limit) {
  sql_.events_of_run.bind_text(1, run_id);
  sql_.events_of_run.bind_int(2, after_seq);
  sql_.events_of_run.bind_int(3, limit < 0 ? -1 : limit);  // LIMIT -1: no limit
  return collect(sql_.events_of_run, rows::read_event,
                 [&] { return fmt::format("reading the events of run '{}'", run_id); });
}

Expected<std::vector<EventRecord>> SqliteStore::events_of_kind(const std::string& run_id,
                                                               const std::string& kind) {
  sql_.events_of_kind.bind_text(1, run_id);
  sql_.events_of_kind.bind_text(2, kind);
  return collect(sql_.events_of_kind, rows::read_event,
                 [&] { return fmt::format("reading the {} events of run '{}'", kind, run_id); });
}

Expected<bool> SqliteStore::cancel_requested(const std::string& run_id) {
  sql_.cancel_requested.bind_text(1, run_id);
  auto flag = ORCH_TRY(first_row(
      sql_.cancel_requested, [](const Statement& row) { return row.column_bool(0); },
      [&] { return fmt::format("reading the cancel flag of run '{}'", run_id); }));
  if (!flag) return std::unexpected(not_found(fmt::format("run '{}' not found", run_id)));
  return *flag;
}

Expected<AttemptTotals> SqliteStore::attempt_totals(const std::string& run_id) {
  sql_.attempt_totals.bind_text(1, run_id);
  auto totals = ORCH_TRY(first_row(
      sql_.attempt_totals,
      [](const Statement& row) {
        return AttemptTotals{row.column_int(0), row.column_real(1), row.column_int(2)};
      },
      [&] { return fmt::format("summing the attempts of run '{}'", run_id); }));
  return totals.value_or(AttemptTotals{});
}

// ---- traces -----------------------------------------------------------------------

Expected<void> SqliteStore::insert_trace(const TraceRecord& trace) {
  rows::bind_trace(sql_.insert_trace, trace);
  return sql_.insert_trace.run([&] { return fmt::format("inserting trace '{}'", trace.id); });
}

Expected<void> SqliteStore::update_trace(const TraceRecord& trace) {
  rows::bind_trace(sql_.update_trace, trace);
  ORCH_TRY(sql_.update_trace.run([&] { return fmt::format("updating trace '{}'", trace.id); }));
  if (db_.changes() == 0) return std::unexpected(not_found(fmt::format("trace '{}' not found", trace.id)));
  return {};
}

Expected<std::optional<TraceRecord>> SqliteStore::find_trace(const std::string& id) {
  sql_.find_trace.bind_text(1, id);
  return first_row(sql_.find_trace, rows::read_trace, [&] { return fmt::format("reading trace '{}'", id); });
}

Expected<std::vector<TraceRecord>> SqliteStore::list_traces() {
  return collect(sql_.list_traces, rows::read_trace, [] { return "listing traces"; });
}

Expected<std::int64_t> SqliteStore::append_trace_event(const TraceEventRecord& event) {
  rows::bind_trace_event(sql_.insert_trace_event, event);
  ORCH_TRY(sql_.insert_trace_event.run(
      [&] { return fmt::format("appending event '{}' to trace '{}'", event.kind, event.trace_id); }));
  return sqlite3_last_insert_rowid(db_.handle());
}

Expected<std::vector<TraceEventRecord>> SqliteStore::trace_events(const std::string& trace_id) {
  sql_.trace_events.bind_text(1, trace_id);
  return collect(sql_.trace_events, rows::read_trace_event,
                 [&] { return fmt::format("reading the events of trace '{}'", trace_id); });
}

// ---- reviews ----------------------------------------------------------------------

Expected<void> SqliteStore::insert_review(const ReviewRecord& review) {
  rows::bind_review(sql_.insert_review, review);
  return sql_.insert_review.run([&] { return fmt::format("inserting review '{}'", review.id); });
}

Expected<void> SqliteStore::update_review(const ReviewRecord& review) {
  rows::bind_review(sql_.update_review, review);
  ORCH_TRY(sql_.update_review.run([&] { return fmt::format("updating review '{}'", review.id); }));
  if (db_.changes() == 0) return std::unexpected(not_found(fmt::format("review '{}' not found", review.id)));
  return {};
}

Expected<std::optional<ReviewRecord>> SqliteStore::find_review(const std::string& id) {
  sql_.find_review.bind_text(1, id);
  return first_row(sql_.find_review, rows::read_review, [&] { return fmt::format("reading review '{}'", id); });
}

Expected<std::vector<ReviewRecord>> SqliteStore::list_reviews() {
  return collect(sql_.list_reviews, rows::read_review, [] { return "listing reviews"; });
}

}  // namespace orch
