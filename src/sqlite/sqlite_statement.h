// sqlite/sqlite_statement.h — a prepared statement, prepared once and reused.
//
// The engine writes a few rows per loop turn and thousands of turns per second,
// so statements are prepared when the store opens (SQLITE_PREPARE_PERSISTENT) and
// only re-bound and re-stepped afterwards: no SQL text is built or parsed on the
// hot path.
//
// Contract:
//   * Parameters are numbered (?1, ?2, ...) as in the SQL text. Strings are bound
//     by pointer (SQLITE_STATIC): the bound value must stay alive until the
//     statement is reset, which every caller does before returning.
//   * Text is bound and read with explicit lengths, so any bytes survive a round
//     trip: invalid UTF-8, embedded NULs, megabytes.
//   * After use a statement must be reset (ResetOnExit), or it keeps a read
//     transaction open and pins an old snapshot of the WAL.
//   * Describe callables (only called on failure) say what was being done, e.g.
//     "inserting attempt 2 of step 'b' in run 'r1'"; the error message becomes
//     "<db path>: <that>: <sqlite message>".
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "orch/error.h"
#include "sqlite/sqlite_db.h"

namespace orch {

class Statement {
 public:
  Statement() = default;  // empty: assign a prepared one before use
  Statement(Statement&& other) noexcept { *this = std::move(other); }
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  static Expected<Statement> prepare(SqliteDb& db, std::string_view sql);
  bool prepared() const { return stmt_ != nullptr; }

  void bind_text(int index, std::string_view value);
  void bind_int(int index, std::int64_t value);
  void bind_real(int index, double value);
  void bind_bool(int index, bool value) { bind_int(index, value ? 1 : 0); }

  // Steps once: true when a row is available, false when the statement is done.
  template <class Describe>
  Expected<bool> step(const Describe& describe);
  // Steps to the end (for INSERT/UPDATE) and resets.
  template <class Describe>
  Expected<void> run(const Describe& describe);

  std::string column_text(int index) const;
  std::int64_t column_int(int index) const { return sqlite3_column_int64(stmt_, index); }
  double column_real(int index) const { return sqlite3_column_double(stmt_, index); }
  bool column_bool(int index) const { return sqlite3_column_int64(stmt_, index) != 0; }

  // Ends the current execution and drops the bindings (they may point at dead strings).
  void reset();

 private:
  int step_rc();  // SQLITE_ROW, SQLITE_DONE, or the (extended) error code

  SqliteDb* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  int bind_rc_ = SQLITE_OK;  // first failed bind, reported by the next step()
};

// Resets a statement when the scope ends, whatever path leaves it.
class ResetOnExit {
 public:
  explicit ResetOnExit(Statement& statement) : statement_(statement) {}
  ~ResetOnExit() { statement_.reset(); }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  Statement& statement_;
};

template <class Describe>
Expected<bool> Statement::step(const Describe& describe) {
  const int rc = step_rc();
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return std::unexpected(db_->error(describe(), rc));
}

template <class Describe>
Expected<void> Statement::run(const Describe& describe) {
  ResetOnExit reset_at_end(*this);
  for (;;) {
    auto row = step(describe);
    if (!row) return std::unexpected(std::move(row).error());
    if (!*row) return {};
  }
}

}  // namespace orch
