// postgres/pg_store_traces.cc — PgStore's TraceStore and ReviewStore: the
// traces of `orch task` and the reviews of `orch review` (tables `traces`,
// `trace_events` and `reviews`; the statements in pg_runtime_rows.cc).
#include <fmt/format.h>

#include "postgres/pg_runtime_rows.h"
#include "postgres/pg_store.h"

namespace orch {

namespace trace_rows = detail::pg_rows;

// ---- traces -----------------------------------------------------------------------

Expected<void> PgStore::insert_trace(const TraceRecord& trace) {
  ORCH_TRY(conn_->exec(fmt::format("inserting trace '{}'", trace.id), trace_rows::kInsertTrace,
                       trace_rows::trace_params(trace)));
  return {};
}

Expected<void> PgStore::update_trace(const TraceRecord& trace) {
  auto updated = ORCH_TRY(conn_->exec(fmt::format("updating trace '{}'", trace.id), trace_rows::kUpdateTrace,
                                      trace_rows::trace_params(trace)));
  if (updated.affected() == 0)
    return std::unexpected(not_found(fmt::format("trace '{}' not found", trace.id)));
  return {};
}

Expected<std::optional<TraceRecord>> PgStore::find_trace(const std::string& id) {
  auto found = ORCH_TRY(conn_->exec(fmt::format("reading trace '{}'", id), trace_rows::kFindTrace,
                                    detail::PgParams().text(id)));
  if (found.rows() == 0) return std::nullopt;
  return trace_rows::read_trace(found, 0);
}

Expected<std::vector<TraceRecord>> PgStore::list_traces() {
  return trace_rows::read_all_rows(ORCH_TRY(conn_->exec("listing traces", trace_rows::kListTraces)),
                                   trace_rows::read_trace);
}

Expected<std::int64_t> PgStore::append_trace_event(const TraceEventRecord& event) {
  auto seq =
      ORCH_TRY(conn_->exec(fmt::format("appending event '{}' to trace '{}'", event.kind, event.trace_id),
                           trace_rows::kInsertTraceEvent, trace_rows::trace_event_params(event)));
  return seq.integer(0, 0);
}

Expected<std::vector<TraceEventRecord>> PgStore::trace_events(const std::string& trace_id) {
  auto events = ORCH_TRY(conn_->exec(fmt::format("reading the events of trace '{}'", trace_id),
                                     trace_rows::kTraceEvents, detail::PgParams().text(trace_id)));
  return trace_rows::read_all_rows(events, trace_rows::read_trace_event);
}

// ---- reviews ----------------------------------------------------------------------

Expected<void> PgStore::insert_review(const ReviewRecord& review) {
  ORCH_TRY(conn_->exec(fmt::format("inserting review '{}'", review.id), trace_rows::kInsertReview,
                       trace_rows::review_params(review)));
  return {};
}

Expected<void> PgStore::update_review(const ReviewRecord& review) {
  auto updated = ORCH_TRY(conn_->exec(fmt::format("updating review '{}'", review.id),
                                      trace_rows::kUpdateReview, trace_rows::review_params(review)));
  if (updated.affected() == 0)
    return std::unexpected(not_found(fmt::format("review '{}' not found", review.id)));
  return {};
}

Expected<std::optional<ReviewRecord>> PgStore::find_review(const std::string& id) {
  auto found = ORCH_TRY(conn_->exec(fmt::format("reading review '{}'", id), trace_rows::kFindReview,
                                    detail::PgParams().text(id)));
  if (found.rows() == 0) return std::nullopt;
  return trace_rows::read_review(found, 0);
}

Expected<std::vector<ReviewRecord>> PgStore::list_reviews() {
  return trace_rows::read_all_rows(ORCH_TRY(conn_->exec("listing reviews", trace_rows::kListReviews)),
                                   trace_rows::read_review);
}

}  // namespace orch
