// postgres/pg_connection.h — one libpq connection, its results and parameters.
//
// Everything the PostgreSQL store says to the server goes through here, so that
// errors read the same everywhere: an orch::Error (ErrorCode::Store) naming what
// orch was doing, the server's message and its SQLSTATE. Statements are sent with
// PQexecParams: values travel as parameters, never spliced into the SQL text.
// Strings are sent in binary format (their bytes with a length): a text-format
// parameter is a C string, and would be cut silently at a NUL byte, which the
// server refuses clearly instead. Results are read in text format. libpq itself
// is loaded on the first connection (postgres/pq_api.h), not linked.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch::detail {

// The parameters $1, $2, ... of one statement, in order.
class PgParams {
 public:
  PgParams& text(std::string_view value);   // TEXT
  PgParams& bytes(std::string_view value);  // BYTEA (any bytes)
  PgParams& integer(std::int64_t value);
  PgParams& real(double value);  // written so that it reads back exactly
  PgParams& boolean(bool value);
  PgParams& null();
  int size() const { return static_cast<int>(values_.size()); }

 private:
  friend class PgConnection;
  PgParams& add(std::string value, bool binary, bool is_null);
  std::vector<std::string> values_;
  std::vector<int> binary_;
  std::vector<bool> null_;
};

// The rows a statement returned (owns its PGresult).
class PgResult {
 public:
  explicit PgResult(PGresult* result) : result_(result, &clear) {}
  PGresult* get() const { return result_.get(); }
  int rows() const;
  bool is_null(int row, int col) const;
  std::string text(int row, int col) const;
  std::string bytes(int row, int col) const;  // a BYTEA column (hex output), decoded
  std::int64_t integer(int row, int col) const;
  double real(int row, int col) const;
  bool boolean(int row, int col) const;
  // Rows an INSERT, UPDATE or DELETE touched.
  std::int64_t affected() const;

 private:
  static void clear(PGresult* result);
  std::unique_ptr<PGresult, void (*)(PGresult*)> result_;
};

class PgConnection {
 public:
  // Connects to `conninfo` (a postgresql:// URL or key=value pairs). A server
  // that cannot be reached is a Store error naming it (never the password).
  static Expected<PgConnection> open(const std::string& conninfo);

  // One statement with parameters. `what` says what orch was doing, for the error.
  Expected<PgResult> exec(std::string_view what, const char* sql, const PgParams& params = {});
  // Several statements without parameters (the schema's DDL).
  Expected<void> exec_script(std::string_view what, const char* sql);

  Expected<void> begin();
  // A transaction that a failed statement aborted is rolled back, and the
  // commit fails (the server would answer COMMIT with ROLLBACK, silently).
  Expected<void> commit();
  Expected<void> rollback();  // outside a transaction: nothing to do
  bool in_transaction() const;

  // The server process serving this connection (pg_backend_pid()).
  int backend_pid() const;
  // "HOST:PORT/DATABASE", for messages (no user, no password).
  std::string where() const;

  // LISTEN/NOTIFY: the socket to wait on for notifications (poll for POLLIN),
  // and the channels of those that arrived, read off it without blocking (a
  // connection used for nothing else; a Store error when the connection is lost).
  int socket() const;
  Expected<std::vector<std::string>> notifications();

 private:
  explicit PgConnection(PGconn* conn) : conn_(conn, &finish) {}
  static void finish(PGconn* conn);
  Error error(std::string_view what, const PGresult* result) const;
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn_;
};

}  // namespace orch::detail
