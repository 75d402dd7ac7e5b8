// A transaction's writes sent behind each other: PgConnection::exec_later and
// what answers them (libpq's pipeline mode). See pg_connection.h.
//
// A scheduler turn writes an attempt's end, a few events, the next attempt and
// the steps that changed, and needs none of their answers until it commits:
// sent one by one, each write waits a round trip to the server (~0.1–0.2 ms
// here, docs/benchmarks.md, session 43); sent in a pipeline, all of them and
// their answers share one. The answers are read — and each write's check run —
// before anything else is asked of the connection: its next exec() (a read
// in the transaction) or rollback(). BEGIN goes first in the pipeline, with a
// flush request behind it, so that the transaction's id (which settles a COMMIT
// whose answer is lost, pg_reconnect.cc) is back while the writes are made;
// the COMMIT goes behind the writes: a turn that reads nothing is one round
// trip, BEGIN to COMMIT (session 44).
#include <fmt/format.h>

#include <utility>

#include "postgres/pg_connection.h"
#include "postgres/pq_api.h"

namespace orch::detail {

namespace {

// A write whose check needs the rows it touched, made to fail on the server
// when it touches none (SQLSTATE 22012, division by zero): a COMMIT behind it
// in the pipeline is then skipped by the server, as behind any statement that
// failed, instead of committing what the check refuses. It answers with the
// number of rows it touched; drain() turns its failure into the check's error.
// (The writes with a check are single UPDATEs: pg_store.cc.)
std::string guarded(const char* sql) {
  return fmt::format(
      "WITH orch_touched AS ({} RETURNING 1) SELECT count(*) + 0 * (1 / count(*)) FROM orch_touched", sql);
}

constexpr std::string_view kDivisionByZero = "22012";

}  // namespace

Error PgConnection::skipped(std::string_view what) const {
  return Error{
      ErrorCode::Store,
      fmt::format("{}: {}: not done: an earlier statement of the transaction failed", where(), what)};
}

bool PgConnection::pipeline() {
  if (pipelined_) return true;
  if (pq().enter_pipeline_mode == nullptr || pq().enter_pipeline_mode(conn_.get()) != 1) return false;
  pipelined_ = true;
  return true;
}

Expected<void> PgConnection::send_later(std::string_view what, const char* given, const PgParams& params,
                                        AffectedCheck check, Answer answer) {
  const bool guard = static_cast<bool>(check);
  const std::string guarded_sql = guard ? guarded(given) : std::string();
  const char* sql = guard ? guarded_sql.c_str() : given;
  const std::string* name = nullptr;
  if (auto it = prepared_.find(sql); it != prepared_.end()) {
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
  later_.push_back({std::string(what), std::move(check), {}, answer, guard});
  return {};
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
  if (!pipelined_) {
    // Prepared before the pipeline starts (a synchronous call), or in it.
    if (params.size() > 0) {
      const std::string sent = check ? guarded(sql) : std::string(sql);
      ORCH_TRY(prepared(what, sent.c_str(), params.size()));
    }
    if (!pipeline()) return at_once();
  }
  return send_later(what, sql, params, std::move(check), Answer::Write);
}

bool PgConnection::begin_later() {
  // Not on a connection the server said something on since its last answer
  // (its farewell, before a restart): BEGIN in a round trip of its own
  // connects again then, and is sent again.
  if (pq().enter_pipeline_mode == nullptr || pipelined_ || !nothing_came() || !pipeline()) return false;
  in_tx_ = true;
  xid_.clear();
  if (send_later("starting a transaction", "BEGIN", {}, {}, Answer::Write) &&
      send_later("starting a transaction", "SELECT txid_current()", {}, {}, Answer::TransactionId) &&
      pq().send_flush_request(conn_.get()) == 1 && pq().flush(conn_.get()) == 0)
    return true;
  in_tx_ = false;
  (void)drain();
  return false;
}

std::optional<Expected<void>> PgConnection::commit_later() {
  if (!pipelined_ || !in_tx_ || lost_) return std::nullopt;
  // The transaction's id first: begin_later() asked for it, and the server sent
  // it back at once (a flush request), so it is here or on its way.
  while (xid_.empty() && answered_ < later_.size() && !lost_ && !later_error_) {
    const bool id = later_[answered_].answer == Answer::TransactionId;
    answer_first();
    if (id) break;
  }
  // Without it a COMMIT whose answer is lost could not be settled: commit()
  // reads the writes' answers first, and then commits in a round trip.
  if (xid_.empty() || lost_ || later_error_) return std::nullopt;
  auto done = send_later("committing", "COMMIT", {}, {}, Answer::Commit);
  const bool sent = done.has_value();
  if (done) done = drain();
  if (done) {
    in_tx_ = false;
    return done;
  }
  if (lost_) {
    in_tx_ = false;
    // Lost while the COMMIT was on its way: it may have landed.
    if (sent) return settle_lost_commit(done.error());
    return done;
  }
  // A write failed (the server skipped the COMMIT behind it), or the COMMIT did.
  (void)rollback();
  return done;
}

void PgConnection::answer_first() {
  Later& w = later_[answered_++];
  PGresult* raw = pq().get_result(conn_.get());
  if (raw == nullptr) {
    // No answer: the connection went (checked() says so, and marks it lost).
    if (!later_error_) later_error_ = checked(w.what, PgResult(nullptr)).error();
    return;
  }
  PgResult result(raw);
  auto answered = checked(w.what, std::move(result));
  if (!answered) {
    if (!later_error_) later_error_ = answered.error();
  } else if (w.answer == Answer::TransactionId && answered->rows() == 1) {
    xid_ = answered->text(0, 0);
  }
  // The end of this statement's answer.
  while (PGresult* extra = pq().get_result(conn_.get())) pq().clear(extra);
  keep_notifications();
}

Expected<void> PgConnection::drain() {
  if (!pipelined_) return {};
  pipelined_ = false;
  std::vector<Later> later = std::exchange(later_, {});
  const std::size_t from = std::exchange(answered_, 0);
  std::optional<Error> first = std::exchange(later_error_, std::nullopt);
  const auto keep = [&first](Error e) {
    if (!first) first = std::move(e);
  };
  const bool synced = pq().pipeline_sync(conn_.get()) == 1;
  for (std::size_t i = from; i < later.size(); ++i) {
    Later& w = later[i];
    PGresult* raw = synced ? pq().get_result(conn_.get()) : nullptr;
    if (raw == nullptr) {
      // No answer: the connection went (checked() says so, and marks it lost).
      keep(checked(w.what, PgResult(nullptr)).error());
      if (!w.prepares.empty()) prepared_.erase(w.prepares);
      continue;
    }
    PgResult result(raw);
    const bool aborted = pq().result_status(raw) == PGRES_PIPELINE_ABORTED;
    const char* state = pq().result_error_field(raw, PG_DIAG_SQLSTATE);
    const bool touched_none = w.guarded && state != nullptr && state == kDivisionByZero;
    auto answered =
        aborted ? Expected<PgResult>(std::unexpected(skipped(w.what))) : checked(w.what, std::move(result));
    // A statement the server did not prepare has no name on this session.
    if (!answered && !w.prepares.empty()) prepared_.erase(w.prepares);
    if (!answered && touched_none && w.check) {
      // Its guard: the check's own error.
      if (auto e = w.check(0)) keep(std::move(*e));
      keep(answered.error());
    } else if (!answered) {
      keep(answered.error());
    } else if (w.answer == Answer::TransactionId && answered->rows() == 1) {
      xid_ = answered->text(0, 0);
    } else if (w.check) {
      const std::int64_t affected =
          w.guarded && answered->rows() == 1 ? answered->integer(0, 0) : answered->affected();
      if (auto e = w.check(affected)) keep(std::move(*e));
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
