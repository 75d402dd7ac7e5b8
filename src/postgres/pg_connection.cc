#include "postgres/pg_connection.h"

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "postgres/pq_api.h"

namespace orch::detail {

// ---- parameters -------------------------------------------------------------------

PgParams& PgParams::add(std::string value, bool binary, bool is_null) {
  values_.push_back(std::move(value));
  binary_.push_back(binary ? 1 : 0);
  null_.push_back(is_null);
  return *this;
}

PgParams& PgParams::text(std::string_view value) {
  return add(std::string(value), true, false);
}

PgParams& PgParams::bytes(std::string_view value) {
  return add(std::string(value), true, false);  // BYTEA's binary format is the bytes themselves
}

PgParams& PgParams::integer(std::int64_t value) {
  return add(std::to_string(value), false, false);
}

PgParams& PgParams::real(double value) {
  // fmt's shortest representation that reads back as the same double.
  return add(fmt::format("{}", value), false, false);
}

PgParams& PgParams::boolean(bool value) {
  return add(value ? "t" : "f", false, false);
}

PgParams& PgParams::null() {
  return add("", false, true);
}

// ---- results ----------------------------------------------------------------------

std::string PgResult::text(int row, int col) const {
  return std::string(pq().getvalue(result_.get(), row, col),
                     static_cast<std::size_t>(pq().getlength(result_.get(), row, col)));
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0;
}

}  // namespace

std::string PgResult::bytes(int row, int col) const {
  // bytea_output = hex (set by PgConnection::open): "\x" then two digits a byte.
  const char* v = pq().getvalue(result_.get(), row, col);
  const std::size_t n = static_cast<std::size_t>(pq().getlength(result_.get(), row, col));
  if (n < 2 || v[0] != '\\' || v[1] != 'x') return std::string(v, n);
  std::string out((n - 2) / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<char>(hex_digit(v[2 + 2 * i]) * 16 + hex_digit(v[3 + 2 * i]));
  return out;
}

std::int64_t PgResult::integer(int row, int col) const {
  return std::strtoll(pq().getvalue(result_.get(), row, col), nullptr, 10);
}

double PgResult::real(int row, int col) const {
  return std::strtod(pq().getvalue(result_.get(), row, col), nullptr);
}

bool PgResult::boolean(int row, int col) const {
  return pq().getvalue(result_.get(), row, col)[0] == 't';
}

std::int64_t PgResult::affected() const {
  return std::strtoll(pq().cmd_tuples(result_.get()), nullptr, 10);
}

void PgResult::clear(PGresult* result) {
  if (result) pq().clear(result);
}

int PgResult::rows() const {
  return pq().ntuples(result_.get());
}

bool PgResult::is_null(int row, int col) const {
  return pq().getisnull(result_.get(), row, col) != 0;
}

// ---- the connection ---------------------------------------------------------------

Expected<PgConnection> PgConnection::open(const std::string& conninfo) {
  // expand_dbname: `dbname` may be a whole URL; the keywords after it override
  // its own (so no `options` here: the URL's carry the search_path). Text is
  // UTF-8 whatever the client's locale says.
  const char* keys[] = {"dbname", "client_encoding", "fallback_application_name", nullptr};
  const char* values[] = {conninfo.c_str(), "UTF8", "orch", nullptr};
  ORCH_TRY(load_pq());
  PgConnection conn(pq().connectdb_params(keys, values, 1));
  if (!conn.conn_) return fail(ErrorCode::Store, "postgres: out of memory connecting");
  if (pq().status(conn.conn_.get()) != CONNECTION_OK) {
    std::string message = pq().error_message(conn.conn_.get());
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
    return fail(ErrorCode::Store, fmt::format("postgres: cannot connect to {}: {}", conn.where(), message));
  }
  // The server's notices (NOTICE, WARNING) are not orch's to print; its errors come as results.
  pq().set_notice_processor(
      conn.conn_.get(), [](void*, const char*) {}, nullptr);
  // PgResult::bytes reads BYTEA in hex, whatever the server's default.
  ORCH_TRY(conn.exec("setting bytea_output", "SET bytea_output = hex"));
  conn.conninfo_ = conninfo;
  return conn;
}

void PgConnection::finish(PGconn* conn) {
  if (conn) pq().finish(conn);
}

int PgConnection::backend_pid() const {
  return pq().backend_pid(conn_.get());
}

std::string PgConnection::where() const {
  const char* host = pq().host(conn_.get());
  const char* port = pq().port(conn_.get());
  const char* db = pq().db(conn_.get());
  return fmt::format("postgresql://{}:{}/{}", host ? host : "", port ? port : "", db ? db : "");
}

Error PgConnection::error(std::string_view what, const PGresult* result) const {
  // The server's own message when it sent one; libpq's (a lost connection) otherwise.
  const char* primary = result ? pq().result_error_field(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string message = primary ? primary : pq().error_message(conn_.get());
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  const char* state = result ? pq().result_error_field(result, PG_DIAG_SQLSTATE) : nullptr;
  const char* detail = result ? pq().result_error_field(result, PG_DIAG_MESSAGE_DETAIL) : nullptr;
  std::string text = fmt::format("{}: {}: {}", where(), what, message);
  if (detail) text += fmt::format(" ({})", detail);
  if (state) text += fmt::format(" [SQLSTATE {}]", state);
  return Error{ErrorCode::Store, std::move(text)};
}

Error PgConnection::lost_transaction(std::string_view what) const {
  return Error{
      ErrorCode::Disconnected,
      fmt::format("{}: {}: the connection to the server was lost in this transaction ({}), which the "
                  "server rolled back",
                  where(), what, lost_why_)};
}

Expected<PgResult> PgConnection::checked(std::string_view what, PgResult result) {
  const ExecStatusType status = pq().result_status(result.get());
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
  Error e = error(what, result.get());
  const char* state = result.get() ? pq().result_error_field(result.get(), PG_DIAG_SQLSTATE) : nullptr;
  const std::string_view code = state ? state : "";
  // The server went away: libpq saw the socket close, or the server said it is
  // shutting down, crashing or starting (pg_reconnect.h).
  if (pq().status(conn_.get()) == CONNECTION_BAD || code.starts_with("08") || code == "57P01" ||
      code == "57P02" || code == "57P03") {
    lost_ = true;
    // Its first line: the server's farewell ("terminating connection due to
    // administrator command"), else libpq's ("server closed the connection unexpectedly").
    const char* primary =
        result.get() ? pq().result_error_field(result.get(), PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    lost_why_ = primary ? primary : pq().error_message(conn_.get());
    lost_why_ = lost_why_.substr(0, lost_why_.find('\n'));
    if (lost_why_.starts_with("FATAL:  ")) lost_why_.erase(0, 8);
    // In a transaction: the server rolled it back, and none of it may be sent
    // again on its own (the caller writes it again from its start, or not).
    if (in_tx_) e = lost_transaction(what);
  }
  return std::unexpected(std::move(e));
}

Expected<PgResult> PgConnection::exec(std::string_view what, const char* sql, const PgParams& params) {
  std::vector<const char*> values(params.values_.size());
  std::vector<int> lengths(params.values_.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = params.null_[i] ? nullptr : params.values_[i].c_str();
    lengths[i] = static_cast<int>(params.values_[i].size());
  }
  const auto send = [&]() -> Expected<PgResult> {
    // The transaction went with the connection: nothing more of it is sent.
    if (lost_ && in_tx_) return std::unexpected(lost_transaction(what));
    if (params.size() > 0) {
      const std::string* name = ORCH_TRY(prepared(what, sql, params.size()));
      if (name != nullptr)
        return checked(what,
                       PgResult(pq().exec_prepared(conn_.get(), name->c_str(), params.size(), values.data(),
                                                   lengths.data(), params.binary_.data(), 0)));
    }
    return checked(what, PgResult(pq().exec_params(conn_.get(), sql, params.size(), nullptr, values.data(),
                                                   lengths.data(), params.binary_.data(), 0)));
  };
  ORCH_TRY(drain());                                   // the writes sent before it are answered first
  if (may_resend()) ORCH_TRY(reconnect(*reconnect_));  // lost by an earlier statement
  auto result = send();
  if (!result && may_resend()) {
    ORCH_TRY(reconnect(*reconnect_));
    result = send();
  }
  keep_notifications();
  return result;
}

Expected<const std::string*> PgConnection::prepared(std::string_view what, const char* sql, int n_params) {
  if (auto it = prepared_.find(sql); it != prepared_.end()) return &it->second;
  if (prepared_.size() >= kMaxPrepared) return nullptr;
  std::string name = fmt::format("orch_{}", ++prepared_seq_);
  // The parameters' types come from where they are used, as PQexecParams's do.
  ORCH_TRY(checked(what, PgResult(pq().prepare(conn_.get(), name.c_str(), sql, n_params, nullptr))));
  return &prepared_.emplace(sql, std::move(name)).first->second;
}

Expected<void> PgConnection::exec_script(std::string_view what, const char* sql) {
  ORCH_TRY(drain());
  auto done = checked(what, PgResult(pq().exec(conn_.get(), sql)));
  keep_notifications();
  ORCH_TRY(std::move(done));
  return {};
}

bool PgConnection::in_transaction() const {
  return in_tx_;
}

Expected<void> PgConnection::begin() {
  (void)drain();   // nothing is waiting outside a transaction; should anything be, it is over
  in_tx_ = false;  // one the connection was lost in is over
  // Sent in the pipeline, answered with what follows (pg_pipeline.cc).
  if (!may_resend() && begin_later()) return {};
  // The transaction's id comes with BEGIN, in the same round trip (PQexec
  // answers with the last statement's result): a COMMIT whose answer is lost
  // with the connection is settled by asking the server about it (pg_reconnect.cc).
  const auto send = [&] {
    return checked("starting a transaction",
                   PgResult(pq().exec(conn_.get(), "BEGIN; SELECT txid_current()")));
  };
  if (may_resend()) ORCH_TRY(reconnect(*reconnect_));
  auto started = send();
  if (!started && may_resend()) {
    ORCH_TRY(reconnect(*reconnect_));
    started = send();
  }
  keep_notifications();
  if (!started) {
    if (!lost_ && pq().transaction_status(conn_.get()) != PQTRANS_IDLE)
      (void)exec("rolling back", "ROLLBACK");
    return std::unexpected(started.error());
  }
  xid_ = started->text(0, 0);
  in_tx_ = true;
  return {};
}

Expected<void> PgConnection::commit() {
  // Behind the writes, in the pipeline (pg_pipeline.cc).
  if (auto done = commit_later()) return std::move(*done);
  // The transaction's writes answered first: one that failed rolls it back.
  if (auto written = drain(); !written) {
    if (lost_) {
      in_tx_ = false;
      return written;
    }
    (void)rollback();
    return written;
  }
  if (in_tx_ && lost_) {  // nothing to commit: the server rolled it back when the connection went
    in_tx_ = false;
    return std::unexpected(lost_transaction("committing"));
  }
  if (pq().transaction_status(conn_.get()) == PQTRANS_INERROR) {
    (void)rollback();
    return fail(ErrorCode::Store, fmt::format("{}: committing: a statement of the transaction failed, so "
                                              "it was rolled back",
                                              where()));
  }
  const bool open = in_tx_;
  auto committed = exec("committing", "COMMIT");
  in_tx_ = false;
  if (committed) return {};
  // Lost while the COMMIT was on its way: it may have landed.
  if (open && lost_) return settle_lost_commit(committed.error());
  if (pq().transaction_status(conn_.get()) != PQTRANS_IDLE) (void)exec("rolling back", "ROLLBACK");
  return std::unexpected(committed.error());
}

Expected<void> PgConnection::rollback() {
  (void)drain();  // answers of writes that are rolled back anyway
  const bool open = in_tx_;
  in_tx_ = false;
  // Lost: the server rolled it back when the connection went.
  if (!open || lost_) return {};
  ORCH_TRY(exec("rolling back", "ROLLBACK"));
  return {};
}

int PgConnection::socket() const {
  return pq().socket(conn_.get());
}

void PgConnection::keep_notifications() {
  if (!conn_) return;
  while (PGnotify* n = pq().notifies(conn_.get())) {
    notified_.push_back({n->relname, n->extra != nullptr ? n->extra : ""});
    pq().freemem(n);
  }
}

Expected<std::vector<PgNotification>> PgConnection::notifications() {
  ORCH_TRY(drain());
  std::vector<PgNotification> channels = std::exchange(notified_, {});
  if (pq().consume_input(conn_.get()) == 0 || pq().status(conn_.get()) != CONNECTION_OK)
    return std::unexpected(error("waiting for notifications", nullptr));
  keep_notifications();
  channels.insert(channels.end(), notified_.begin(), notified_.end());
  notified_.clear();
  return channels;
}

}  // namespace orch::detail
