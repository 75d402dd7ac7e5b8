#include "postgres/pg_connection.h"

#include <fmt/format.h>

#include <cstdlib>

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

Expected<PgResult> PgConnection::exec(std::string_view what, const char* sql, const PgParams& params) {
  std::vector<const char*> values(params.values_.size());
  std::vector<int> lengths(params.values_.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = params.null_[i] ? nullptr : params.values_[i].c_str();
    lengths[i] = static_cast<int>(params.values_[i].size());
  }
  PgResult result(pq().exec_params(conn_.get(), sql, params.size(), nullptr, values.data(), lengths.data(),
                                   params.binary_.data(), 0));
  const ExecStatusType status = pq().result_status(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    return std::unexpected(error(what, result.get()));
  return result;
}

Expected<void> PgConnection::exec_script(std::string_view what, const char* sql) {
  PgResult result(pq().exec(conn_.get(), sql));
  const ExecStatusType status = pq().result_status(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    return std::unexpected(error(what, result.get()));
  return {};
}

bool PgConnection::in_transaction() const {
  return pq().transaction_status(conn_.get()) != PQTRANS_IDLE;
}

Expected<void> PgConnection::begin() {
  ORCH_TRY(exec("starting a transaction", "BEGIN"));
  return {};
}

Expected<void> PgConnection::commit() {
  if (pq().transaction_status(conn_.get()) == PQTRANS_INERROR) {
    (void)rollback();
    return fail(ErrorCode::Store, fmt::format("{}: committing: a statement of the transaction failed, so "
                                              "it was rolled back",
                                              where()));
  }
  auto committed = exec("committing", "COMMIT");
  if (!committed && in_transaction()) (void)rollback();
  if (!committed) return std::unexpected(committed.error());
  return {};
}

Expected<void> PgConnection::rollback() {
  if (!in_transaction()) return {};
  ORCH_TRY(exec("rolling back", "ROLLBACK"));
  return {};
}

int PgConnection::socket() const {
  return pq().socket(conn_.get());
}

Expected<std::vector<std::string>> PgConnection::notifications() {
  if (pq().consume_input(conn_.get()) == 0 || pq().status(conn_.get()) != CONNECTION_OK)
    return std::unexpected(error("waiting for notifications", nullptr));
  std::vector<std::string> channels;
  while (PGnotify* n = pq().notifies(conn_.get())) {
    channels.emplace_back(n->relname);
    pq().freemem(n);
  }
  return channels;
}

}  // namespace orch::detail
