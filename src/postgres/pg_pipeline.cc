// A transaction's writes sent behind each other: PgConnection::exec_later and
// what answers them (libpq's pipeline mode). See pg_connection.h.
//
// A scheduler turn writes an attempt's end, a few events, the next attempt and
// the steps that changed, and needs none of their answers until it commits:
// sent one by one, each write waits a round trip to the server (~0.1–0.2 ms
// here, docs/benchmarks.md, session 43); sent in a pipeline, all of them and
// their answers share one. The answers are read — and each write's check run —
// before anything else is asked of the connection: its next exec() (a read
// in the transaction, COMMIT) or rollback().
#include <fmt/format.h>

#include <utility>

#include "postgres/pg_connection.h"
#include "postgres/pq_api.h"

namespace orch::detail {

Error PgConnection::skipped(std::string_view what) const {
  return Error{
      ErrorCode::Store,
      fmt::format("{}: {}: not done: an earlier statement of the transaction failed", where(), what)};
}

Expected<void> PgConnection::exec_later(std::string_view what, const char* sql, const PgParams& params,
                                        AffectedCheck check) {
  const auto at_once = [&]() -> Expected<void> {
    PgResult r = ORCH_TRY(exec(what, sql, params));
    if (check)
      if (auto e = check(r.affected())) return std::unexpected(std::move(*e));
    return {};
  };
  if (!in_tx_ || pq().enter_pipeline_mode == nullptr) return at_once();
  // The transaction went with the connection: nothing more of it is sent.
  if (lost_) return std::unexpected(lost_transaction(what));
  if (later_.size() >= kMaxLater) ORCH_TRY(drain());
  // Prepared before the pipeline starts (a synchronous call), or in it.
  const std::string* name = nullptr;
  if (!pipelined_) {
    if (params.size() > 0) name = ORCH_TRY(prepared(what, sql, params.size()));
    if (pq().enter_pipeline_mode(conn_.get()) != 1) return at_once();
    pipelined_ = true;
  } else if (auto it = prepared_.find(sql); it != prepared_.end()) {
    name = &it->second;
  } else if (params.size() > 0 && prepared_.size() < kMaxPrepared) {
    std::string fresh = fmt::format("orch_{}", ++prepared_seq_);
    if (pq().send_prepare(conn_.get(), fresh.c_str(), sql, params.size(), nullptr) == 1) {
      later_.push_back({std::string(what), nullptr, sql});
      name = &prepared_.emplace(sql, std::move(fresh)).first->second;
    }
  }
  std::vector<const char*> values(params.values_.size());
  std::vector<int> lengths(params.values_.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = params.null_[i] ? nullptr : params.values_[i].c_str();
    lengths[i] = static_cast<int>(params.values_[i].size());
  }
  const int sent = name != nullptr
                       ? pq().send_query_prepared(conn_.get(), name->c_str(), params.size(), values.data(),
                                                  lengths.data(), params.binary_.data(), 0)
                       : pq().send_query_params(conn_.get(), sql, params.size(), nullptr, values.data(),
                                                lengths.data(), params.binary_.data(), 0);
  if (sent != 1) {
    // Not sent (the connection is gone): the answers of what was sent before say why.
    Error e = error(what, nullptr);
    ORCH_TRY(drain());
    return std::unexpected(std::move(e));
  }
  later_.push_back({std::string(what), std::move(check), {}});
  return {};
}

Expected<void> PgConnection::drain() {
  if (!pipelined_) return {};
  pipelined_ = false;
  std::vector<Later> later = std::exchange(later_, {});
  std::optional<Error> first;
  const auto keep = [&first](Error e) {
    if (!first) first = std::move(e);
  };
  const bool synced = pq().pipeline_sync(conn_.get()) == 1;
  for (Later& w : later) {
    PGresult* raw = synced ? pq().get_result(conn_.get()) : nullptr;
    if (raw == nullptr) {
      // No answer: the connection went (checked() says so, and marks it lost).
      keep(checked(w.what, PgResult(nullptr)).error());
      if (!w.prepares.empty()) prepared_.erase(w.prepares);
      continue;
    }
    PgResult result(raw);
    const bool aborted = pq().result_status(raw) == PGRES_PIPELINE_ABORTED;
    auto answered =
        aborted ? Expected<PgResult>(std::unexpected(skipped(w.what))) : checked(w.what, std::move(result));
    // A statement the server did not prepare has no name on this session.
    if (!answered && !w.prepares.empty()) prepared_.erase(w.prepares);
    if (!answered) {
      keep(answered.error());
    } else if (w.check) {
      if (auto e = w.check(answered->affected())) keep(std::move(*e));
    }
    // The end of this write's answer.
    while (PGresult* extra = pq().get_result(conn_.get())) pq().clear(extra);
  }
  if (synced)
    if (PGresult* sync = pq().get_result(conn_.get())) pq().clear(sync);  // PGRES_PIPELINE_SYNC
  if (!lost_ && pq().exit_pipeline_mode(conn_.get()) != 1 && !first)
    keep(error("leaving pipeline mode", nullptr));
  keep_notifications();
  // A lost connection is the error to report whatever failed first: the
  // transaction is gone, and is written again (engine/turn_writer.cc).
  if (lost_ && in_tx_)
    return std::unexpected(lost_transaction(later.empty() ? "writing" : later.front().what));
  if (first) return std::unexpected(std::move(*first));
  return {};
}

}  // namespace orch::detail
