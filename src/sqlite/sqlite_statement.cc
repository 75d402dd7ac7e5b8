#include "sqlite/sqlite_statement.h"

#include <fmt/format.h>

namespace orch {

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_rc_ = std::exchange(other.bind_rc_, SQLITE_OK);
  }
  return *this;
}

Expected<Statement> Statement::prepare(SqliteDb& db, std::string_view sql) {
  Statement statement;
  statement.db_ = &db;
  const int rc = sqlite3_prepare_v3(db.handle(), sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &statement.stmt_, nullptr);
  if (rc != SQLITE_OK) {
    // Only orch's own fixed SQL is prepared here, so the text itself is the best context.
    return std::unexpected(db.error(fmt::format("preparing \"{}\"", sql.substr(0, 60)), rc));
  }
  return statement;
}

void Statement::bind_text(int index, std::string_view value) {
  // A non-null pointer even for "" so an empty string is stored as '' and not NULL.
  static constexpr char kEmpty[] = "";
  const char* data = value.empty() ? kEmpty : value.data();
  const int rc = sqlite3_bind_text64(stmt_, index, data, value.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Statement::bind_int(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

void Statement::bind_real(int index, double value) {
  const int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

int Statement::step_rc() {
  // A failed bind (e.g. SQLITE_TOOBIG) is reported here, where the caller checks.
  if (bind_rc_ != SQLITE_OK) return std::exchange(bind_rc_, SQLITE_OK);
  return sqlite3_step(stmt_);
}

std::string Statement::column_text(int index) const {
  // Read as a blob: no UTF-8 conversion, and the length includes any embedded NUL.
  const void* data = sqlite3_column_blob(stmt_, index);
  const int size = sqlite3_column_bytes(stmt_, index);
  if (data == nullptr || size <= 0) return {};
  return std::string(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

void Statement::reset() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

}  // namespace orch
