#include "sqlite/sqlite_db.h"

#include <fmt/format.h>

#include <mutex>

namespace orch {

namespace {

// Process-wide settings, before SQLite initialises itself. Memory statistics
// (which orch never reads) take a global mutex on every allocation. It is only
// a cost: if something initialised SQLite earlier, the call fails and changes nothing.
void configure_sqlite_once() {
  static std::once_flag once;
  std::call_once(once, [] { (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
}

}  // namespace

Expected<SqliteDb> SqliteDb::open(const std::filesystem::path& path, std::string_view what_it_holds) {
  configure_sqlite_once();
  sqlite3* raw = nullptr;
  // NOMUTEX: a connection belongs to one Store, used from one thread at a time.
  // EXRESCODE: every call returns extended result codes (SQLITE_CONSTRAINT_TRIGGER,
  // ...), the same ones sqlite3_extended_errcode() reports, which error() relies on.
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  SqliteDb db(raw, path,
              what_it_holds);  // owns the handle even on failure (sqlite3_open_v2 may allocate one)
  if (rc != SQLITE_OK) {
    if (raw == nullptr)
      return fail(ErrorCode::Store, fmt::format("{}: opening: {}", path.string(), sqlite3_errstr(rc)));
    return std::unexpected(db.error("opening", rc));
  }
  return db;
}

Expected<void> SqliteDb::exec(const char* sql, std::string_view what) {
  const int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(error(what, rc));
  return {};
}

template <class Read>
Expected<void> SqliteDb::query_one(const char* sql, std::string_view what, const Read& read) {
  sqlite3_stmt* statement = nullptr;
  int rc = sqlite3_prepare_v2(db_.get(), sql, -1, &statement, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(statement);
    if (rc == SQLITE_ROW) read(statement);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  sqlite3_finalize(statement);
  if (rc != SQLITE_OK) return std::unexpected(error(what, rc));
  return {};
}

Expected<std::string> SqliteDb::query_text(const char* sql, std::string_view what) {
  std::string value;
  ORCH_TRY(query_one(sql, what, [&](sqlite3_stmt* row) {
    const unsigned char* text = sqlite3_column_text(row, 0);
    if (text != nullptr) value = reinterpret_cast<const char*>(text);
  }));
  return value;
}

Expected<std::int64_t> SqliteDb::query_int(const char* sql, std::string_view what) {
  std::int64_t value = 0;
  ORCH_TRY(query_one(sql, what, [&](sqlite3_stmt* row) { value = sqlite3_column_int64(row, 0); }));
  return value;
}

Error SqliteDb::error(std::string_view what, int rc) const {
  if ((rc & 0xff) == SQLITE_NOTADB) {
    return Error{ErrorCode::Store, fmt::format("{}: not a SQLite database, so not {}; refusing to use it",
                                               path_.string(), what_it_holds_)};
  }
  // sqlite3_errmsg is the most specific text ("UNIQUE constraint failed: runs.id",
  // a trigger's RAISE message) but describes only the connection's latest failure.
  const char* message =
      sqlite3_extended_errcode(db_.get()) == rc ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
  return Error{ErrorCode::Store, fmt::format("{}: {}: {}", path_.string(), what, message)};
}

}  // namespace orch
