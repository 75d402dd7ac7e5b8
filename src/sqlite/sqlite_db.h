// sqlite/sqlite_db.h — one owned SQLite connection, and the one place SQLite
// failures become orch Errors.
//
// The sqlite layer is what the ledger and the memory share of SQLite: this
// connection, prepared statements (sqlite_statement.h) and the connection
// settings (connection_settings.h). It knows no orch table.
//
// Every error that leaves a SQLite file of orch's reads "<db path>: <what was
// being done>: <sqlite message>" with ErrorCode::Store, so a user can tell which
// file and which operation failed. A SqliteDb is used from one thread at a time
// (the connection is opened with SQLITE_OPEN_NOMUTEX).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "orch/error.h"

namespace orch {

class SqliteDb {
 public:
  // Opens (creating if absent) the database file read-write. Opening does not
  // read the file: a file that is not a database fails at the first statement,
  // with a message saying it is not `what_it_holds` ("an orch ledger").
  static Expected<SqliteDb> open(const std::filesystem::path& path, std::string_view what_it_holds);

  sqlite3* handle() const { return db_.get(); }
  const std::filesystem::path& path() const { return path_; }

  // Runs SQL that returns no rows we need (schema text, BEGIN, pragmas that set).
  Expected<void> exec(const char* sql, std::string_view what);
  // The first column of the first row of a one-off query ("" / 0 when no row).
  // Prepared on the spot: for queries run once per open, never on the hot path.
  Expected<std::string> query_text(const char* sql, std::string_view what);
  Expected<std::int64_t> query_int(const char* sql, std::string_view what);

  // Error{Store, "<path>: <what>: <sqlite message>"} for the failure `rc` (the
  // message is the connection's own when rc is its latest error). A file that is
  // not a database at all gets a message saying so instead.
  Error error(std::string_view what, int rc) const;

  // True while an explicit transaction (BEGIN ... COMMIT) is open.
  bool in_transaction() const { return sqlite3_get_autocommit(db_.get()) == 0; }
  // Rows changed by the last INSERT/UPDATE/DELETE.
  int changes() const { return sqlite3_changes(db_.get()); }

 private:
  struct Close {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  SqliteDb(sqlite3* db, std::filesystem::path path, std::string_view what_it_holds)
      : db_(db), path_(std::move(path)), what_it_holds_(what_it_holds) {}
  template <class Read>
  Expected<void> query_one(const char* sql, std::string_view what, const Read& read);

  std::unique_ptr<sqlite3, Close> db_;
  std::filesystem::path path_;
  std::string what_it_holds_;
};

}  // namespace orch
