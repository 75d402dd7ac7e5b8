#include "postgres/pg_store.h"

#include <fmt/format.h>

#include <chrono>
#include <system_error>

#include "orch/postgres_store.h"
#include "postgres/pg_rows.h"
#include "postgres/pg_schema.h"

namespace orch {

namespace fs = std::filesystem;
namespace rows = detail::pg_rows;
using detail::PgParams;
using detail::PgResult;

namespace {

std::int64_t pg_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Every row of `result`, read by `read`.
template <class Read>
auto all_rows(const PgResult& result, Read read) {
  std::vector<decltype(read(result, 0))> out;
  out.reserve(static_cast<std::size_t>(result.rows()));
  for (int i = 0; i < result.rows(); ++i) out.push_back(read(result, i));
  return out;
}

}  // namespace

Expected<std::unique_ptr<Store>> open_postgres_store(const std::string& url, const fs::path& folder) {
  auto store = ORCH_TRY(PgStore::open(url, folder));
  return std::unique_ptr<Store>(std::move(store));
}

PgStore::PgStore(std::string url, std::unique_ptr<detail::PgConnection> conn, fs::path folder,
                 std::string schema, detail::PgReconnectPolicy reconnect)
    : url_(std::move(url)),
      reconnect_(reconnect),
      conn_(std::move(conn)),
      folder_(std::move(folder)),
      schema_(std::move(schema)) {
  location_ = fmt::format("{} (schema {})", conn_->where(), schema_);
  conn_->keep_reconnecting(reconnect_);
}

Expected<std::unique_ptr<PgStore>> PgStore::open(const std::string& url, fs::path folder) {
  if (folder.empty()) return fail(ErrorCode::Io, "the PostgreSQL store needs a local folder for its logs");
  const auto reconnect = ORCH_TRY(detail::PgReconnectPolicy::from_environment());
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec)
    return fail(ErrorCode::Io,
                fmt::format("{}: creating the store's folder: {}", folder.string(), ec.message()));
  auto conn = std::make_unique<detail::PgConnection>(ORCH_TRY(detail::PgConnection::open(url)));
  ORCH_TRY(detail::ensure_pg_schema(*conn, pg_now_ms()));
  auto schema = ORCH_TRY(conn->exec("finding the ledger's schema", "SELECT current_schema()"));
  std::string name = schema.text(0, 0);
  return std::unique_ptr<PgStore>(
      new PgStore(url, std::move(conn), std::move(folder), std::move(name), reconnect));
}

Error PgStore::not_found(const std::string& what) const {
  return Error{ErrorCode::NotFound, fmt::format("{}: {}", location_.string(), what)};
}

// ---- transactions -----------------------------------------------------------------

Expected<void> PgStore::begin() {
  // The locks this store holds first (a run's): one that went with a restart of
  // the server is taken again, and a holder that lost one to another process
  // writes nothing more.
  ORCH_TRY(keep_locks());
  return conn_->begin();
}

Expected<void> PgStore::commit() {
  // And again before the commit, should a lock's connection alone have gone
  // meanwhile (pg_terminate_backend).
  if (auto kept = keep_locks(); !kept) {
    (void)conn_->rollback();
    return kept;
  }
  return conn_->commit();
}

Expected<void> PgStore::rollback() {
  return conn_->rollback();
}

// ---- writes -----------------------------------------------------------------------

Expected<void> PgStore::insert_run(const RunRecord& run) {
  ORCH_TRY(conn_->exec(fmt::format("inserting run '{}'", run.id), rows::kInsertRun, rows::run_params(run)));
  return {};
}

// The writes of a transaction are sent with exec_later: answered together at
// its next read or its commit (postgres/pg_pipeline.cc), checked then.
Expected<void> PgStore::update_run(const RunRecord& run) {
  return conn_->exec_later(fmt::format("updating run '{}'", run.id), rows::kUpdateRun, rows::run_params(run),
                           [this, id = run.id](std::int64_t affected) -> std::optional<Error> {
                             if (affected > 0) return std::nullopt;
                             return not_found(fmt::format("updating run '{}': no such run", id));
                           });
}

Expected<void> PgStore::insert_plan_version(const PlanVersion& plan) {
  ORCH_TRY(conn_->exec(fmt::format("inserting version {} of the plan of run '{}'", plan.version, plan.run_id),
                       rows::kInsertPlan, rows::plan_params(plan)));
  return {};
}

Expected<void> PgStore::upsert_step(const StepRecord& step) {
  // One statement whose answer nothing waits for (the UPDATE-then-INSERT of
  // SqliteStore would need the UPDATE's).
  return insert_step(step);
}

Expected<void> PgStore::insert_step(const StepRecord& step) {
  return conn_->exec_later(fmt::format("writing step '{}' of run '{}'", step.step_id, step.run_id),
                           rows::kUpsertStep, rows::step_params(step));
}

Expected<void> PgStore::insert_attempt(const AttemptRecord& attempt) {
  ORCH_TRY(conn_->exec_later(fmt::format("inserting attempt {} of step '{}' in run '{}'", attempt.number,
                                         attempt.step_id, attempt.run_id),
                             rows::kInsertAttempt, rows::attempt_params(attempt)));
  // A row that starts and ends in one turn is written once, final.
  if (attempt.status != AttemptStatus::Running) return keep_outputs(attempt);
  return {};
}

Expected<void> PgStore::finish_attempt(const AttemptRecord& attempt) {
  const std::string what = fmt::format("finishing attempt {} of step '{}' in run '{}'", attempt.number,
                                       attempt.step_id, attempt.run_id);
  if (attempt.status == AttemptStatus::Running)
    return fail(ErrorCode::Internal,
                fmt::format("{}: {}: 'running' is not a final status", location_.string(), what));
  ORCH_TRY(conn_->exec_later(
      what, rows::kFinishAttempt, rows::attempt_params(attempt),
      [location = location_.string(), what](std::int64_t affected) -> std::optional<Error> {
        if (affected > 0) return std::nullopt;
        return Error{ErrorCode::Store,
                     fmt::format("{}: {}: no running attempt with that number (it is already "
                                 "finished, and finished attempts never change, or it was "
                                 "never started)",
                                 location, what)};
      }));
  return keep_outputs(attempt);
}

Expected<std::int64_t> PgStore::append_event(const EventRecord& event) {
  auto seq = ORCH_TRY(conn_->exec(fmt::format("appending event '{}' to run '{}'", event.kind, event.run_id),
                                  rows::kInsertEvent, rows::event_params(event)));
  return seq.integer(0, 0);
}

Expected<void> PgStore::record_event(const EventRecord& event) {
  return conn_->exec_later(fmt::format("appending event '{}' to run '{}'", event.kind, event.run_id),
                           rows::kRecordEvent, rows::event_params(event));
}

Expected<void> PgStore::request_cancel(const std::string& run_id) {
  auto updated = ORCH_TRY(conn_->exec(fmt::format("requesting cancellation of run '{}'", run_id),
                                      rows::kRequestCancel, PgParams().text(run_id)));
  if (updated.affected() == 0)
    return std::unexpected(not_found(fmt::format("cancelling run '{}': no such run", run_id)));
  return {};
}

// ---- reads ------------------------------------------------------------------------

Expected<std::optional<RunRecord>> PgStore::find_run(const std::string& run_id) {
  auto found =
      ORCH_TRY(conn_->exec(fmt::format("reading run '{}'", run_id), rows::kFindRun, PgParams().text(run_id)));
  if (found.rows() == 0) return std::nullopt;
  return rows::read_run(found, 0);
}

Expected<std::vector<RunRecord>> PgStore::list_runs() {
  return all_rows(ORCH_TRY(conn_->exec("listing runs", rows::kListRuns)), rows::read_run);
}

Expected<std::vector<RunRecord>> PgStore::owned_runs(OwnerKind kind, const std::string& owner_id) {
  auto owned =
      ORCH_TRY(conn_->exec(fmt::format("listing the runs of {} '{}'", owner_kind_name(kind), owner_id),
                           rows::kOwnedRuns, PgParams().text(owner_kind_name(kind)).text(owner_id)));
  return all_rows(owned, rows::read_run);
}

Expected<PlanVersion> PgStore::latest_plan(const std::string& run_id) {
  auto plan = ORCH_TRY(conn_->exec(fmt::format("reading the plan of run '{}'", run_id), rows::kLatestPlan,
                                   PgParams().text(run_id)));
  if (plan.rows() == 0) return std::unexpected(not_found(fmt::format("run '{}' has no plan", run_id)));
  return rows::read_plan(plan, 0);
}

Expected<std::vector<PlanVersion>> PgStore::plan_versions(const std::string& run_id) {
  return all_rows(ORCH_TRY(conn_->exec(fmt::format("reading the plan versions of run '{}'", run_id),
                                       rows::kPlanVersions, PgParams().text(run_id))),
                  rows::read_plan);
}

Expected<std::vector<StepRecord>> PgStore::steps(const std::string& run_id) {
  auto steps = ORCH_TRY(conn_->exec(fmt::format("reading the steps of run '{}'", run_id), rows::kStepsOfRun,
                                    PgParams().text(run_id)));
  return all_rows(steps, rows::read_step);
}

Expected<std::optional<StepRecord>> PgStore::find_step(const std::string& run_id,
                                                       const std::string& step_id) {
  auto found = ORCH_TRY(conn_->exec(fmt::format("reading step '{}' of run '{}'", step_id, run_id),
                                    rows::kFindStep, PgParams().text(run_id).text(step_id)));
  if (found.rows() == 0) return std::nullopt;
  return rows::read_step(found, 0);
}

Expected<std::map<StepStatus, int>> PgStore::step_status_counts(const std::string& run_id) {
  auto counted = ORCH_TRY(conn_->exec(fmt::format("counting the steps of run '{}'", run_id),
                                      rows::kStepStatusCounts, PgParams().text(run_id)));
  std::map<StepStatus, int> counts;
  for (int i = 0; i < counted.rows(); ++i)
    if (auto status = parse_step_status(counted.text(i, 0)))  // the CHECK admits only known names
      counts[*status] = static_cast<int>(counted.integer(i, 1));
  return counts;
}

Expected<std::vector<AttemptRecord>> PgStore::attempts(const std::string& run_id,
                                                       const std::string& step_id) {
  if (step_id.empty()) {
    auto all = ORCH_TRY(conn_->exec(fmt::format("reading the attempts of run '{}'", run_id),
                                    rows::kAttemptsOfRun, PgParams().text(run_id)));
    return all_rows(all, rows::read_attempt);
  }
  auto of_step =
      ORCH_TRY(conn_->exec(fmt::format("reading the attempts of step '{}' in run '{}'", step_id, run_id),
                           rows::kAttemptsOfStep, PgParams().text(run_id).text(step_id)));
  return all_rows(of_step, rows::read_attempt);
}

Expected<std::vector<EventRecord>> PgStore::events(const std::string& run_id, std::int64_t after_seq,
                                                   int limit) {
  PgParams params;
  params.text(run_id).integer(after_seq);
  if (limit < 0)
    params.null();  // LIMIT NULL: no limit
  else
    params.integer(limit);
  auto events = ORCH_TRY(
      conn_->exec(fmt::format("reading the events of run '{}'", run_id), rows::kEventsOfRun, params));
  return all_rows(events, rows::read_event);
}

Expected<std::vector<EventRecord>> PgStore::events_of_kind(const std::string& run_id,
                                                           const std::string& kind) {
  auto events = ORCH_TRY(conn_->exec(fmt::format("reading the {} events of run '{}'", kind, run_id),
                                     rows::kEventsOfKind, PgParams().text(run_id).text(kind)));
  return all_rows(events, rows::read_event);
}

Expected<bool> PgStore::cancel_requested(const std::string& run_id) {
  // Inside a transaction the row stays locked until it ends, so a request_cancel
  // waits for the commit instead of landing between this read and the driver's
  // update_run, which writes the flag back (SQLite gets the same from BEGIN
  // IMMEDIATE's write lock). Outside one, a plain read never waits for a driver.
  auto flag =
      ORCH_TRY(conn_->exec(fmt::format("reading the cancel flag of run '{}'", run_id),
                           conn_->in_transaction() ? rows::kCancelRequestedForUpdate : rows::kCancelRequested,
                           PgParams().text(run_id)));
  if (flag.rows() == 0) return std::unexpected(not_found(fmt::format("run '{}' not found", run_id)));
  return flag.boolean(0, 0);
}

Expected<AttemptTotals> PgStore::attempt_totals(const std::string& run_id) {
  auto totals = ORCH_TRY(conn_->exec(fmt::format("summing the attempts of run '{}'", run_id),
                                     rows::kAttemptTotals, PgParams().text(run_id)));
  return AttemptTotals{totals.integer(0, 0), totals.real(0, 1), totals.integer(0, 2), totals.integer(0, 3)};
}

}  // namespace orch
