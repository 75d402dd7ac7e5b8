#include "sqlite/connection_settings.h"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace orch {

Expected<SyncMode> sync_mode_from_env(const char* value) {
  if (value == nullptr || *value == '\0' || strcasecmp(value, "normal") == 0) return SyncMode::Normal;
  if (strcasecmp(value, "full") == 0) return SyncMode::Full;
  return fail(ErrorCode::InvalidInput,
              fmt::format("ORCH_SYNC={}: expected 'normal' (the default: durable against a crash of orch) "
                          "or 'full' (also durable against power loss)",
                          value));
}

void set_busy_timeout(SqliteDb& db) {
  sqlite3_busy_timeout(db.handle(), kBusyTimeoutMs);
}

namespace {

// Tries `PRAGMA journal_mode = WAL` once: SQLITE_OK with the resulting mode, or the error code.
int try_switch_to_wal(SqliteDb& db, std::string& mode) {
  sqlite3_stmt* statement = nullptr;
  int rc = sqlite3_prepare_v2(db.handle(), "PRAGMA journal_mode = WAL", -1, &statement, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(statement);
    if (rc == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(statement, 0);
      mode = text != nullptr ? reinterpret_cast<const char*>(text) : "";
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(statement);
  return rc;
}

Expected<void> switch_to_wal(SqliteDb& db) {
  // Switching needs an exclusive lock, and SQLite does not call the busy handler
  // for it: when several processes create a ledger at once the others get
  // SQLITE_BUSY at once. Retry (the winner switches the file for everyone) for as
  // long as the busy timeout would have waited.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (auto pause = std::chrono::milliseconds(1);;
       pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
    auto mode = ORCH_TRY(db.query_text("PRAGMA journal_mode", "reading the journal mode"));
    if (strcasecmp(mode.c_str(), "wal") == 0) return {};
    const int rc = try_switch_to_wal(db, mode);
    if (rc == SQLITE_OK) {
      if (strcasecmp(mode.c_str(), "wal") == 0) return {};
      return fail(ErrorCode::Store,
                  fmt::format("{}: could not switch to WAL mode (journal_mode is '{}'); orch needs a local "
                              "filesystem with shared-memory support for its ledger",
                              db.path().string(), mode));
    }
    const bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (!busy || std::chrono::steady_clock::now() >= deadline) {
      return std::unexpected(db.error("switching to WAL mode", rc));
    }
    std::this_thread::sleep_for(pause);
  }
}

}  // namespace

void shrink_wal_if_large(SqliteDb& db) {
  if (db.in_transaction()) return;
  std::error_code ec;
  const auto size = std::filesystem::file_size(db.path().string() + "-wal", ec);
  if (ec || size <= kWalShrinkBytes) return;
  sqlite3_busy_timeout(db.handle(), 0);  // never wait for another process here
  (void)sqlite3_wal_checkpoint_v2(db.handle(), "main", SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  sqlite3_busy_timeout(db.handle(), kBusyTimeoutMs);
}

Expected<void> apply_connection_settings(SqliteDb& db, SyncMode sync) {
  ORCH_TRY(switch_to_wal(db));
  ORCH_TRY(db.exec(sync == SyncMode::Full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
                   "setting synchronous"));
  ORCH_TRY(db.exec("PRAGMA foreign_keys = ON", "enabling foreign keys"));
  // A short-lived orch (`orch status`, `orch task log`) must not pay for the
  // WAL's life cycle: by default the last connection to close checkpoints the
  // WAL into the database and deletes it (two fsyncs), and the next opener
  // creates it again (two more). Keeping the WAL file and leaving checkpoints to
  // the writers (ledger/wal_checkpointer.h) costs nothing in safety: the
  // WAL is part of the database, and a reader opens it like any other.
  return leave_files_on_close(db);
}

Expected<void> leave_files_on_close(SqliteDb& db) {
  int persist = 1;
  int rc = sqlite3_file_control(db.handle(), "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  if (rc != SQLITE_OK) return std::unexpected(db.error("keeping the WAL file", rc));
  rc = sqlite3_db_config(db.handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  if (rc != SQLITE_OK) return std::unexpected(db.error("leaving checkpoints to the writers", rc));
  return {};
}

}  // namespace orch
