// sqlite/connection_settings.h — how orch configures a connection to one of its SQLite files.
//
// The ledger (.orch/orch.db) and the memory (.orch/memory/memory.db) both open
// their files this way; the reasons below are the ledger's, which needs them most.
//
//   journal_mode=WAL      readers (orch status, orch runs) never block the writer and
//                         the writer never blocks them
//   synchronous=NORMAL    a commit survives a crash or kill -9 of the process, which is
//                         what orch promises; after a power loss or OS crash the last
//                         few transactions may be lost (the ledger stays consistent).
//                         ORCH_SYNC=full selects synchronous=FULL: every commit is
//                         fsynced, surviving power loss too, at a cost per commit.
//   foreign_keys=ON       rows always belong to an existing run (and step)
//   busy_timeout=10000    two orch processes writing different runs of one ledger
//                         wait for each other's short transactions instead of failing
//   persistent WAL, no    the WAL file is kept when the last connection closes and
//   checkpoint on close   checkpoints are left to the writers (ledger/wal_checkpointer.h), so
//                         a short-lived orch process pays no fsync to open or close
//                         ... unless the WAL has grown past kWalShrinkBytes: then
//                         the closing connection checkpoints it and truncates it
//                         (shrink_wal_if_large), because the first process to open
//                         a ledger reads and checksums the whole WAL to rebuild its
//                         index, which made a 2 MB WAL most of `orch task log`'s CPU
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "orch/error.h"
#include "sqlite/sqlite_db.h"

namespace orch {

enum class SyncMode { Normal, Full };

// The mode ORCH_SYNC asks for: unset, "" or "normal" -> Normal, "full" -> Full
// (case-insensitive); anything else is an InvalidInput error naming the value.
Expected<SyncMode> sync_mode_from_env(const char* value);

inline constexpr int kBusyTimeoutMs = 10000;

// Sets the busy timeout. Done first, before the file is read at all.
void set_busy_timeout(SqliteDb& db);

// Makes closing the connection leave the files as they are: no checkpoint, and
// the WAL kept. Done right after opening, before the file is read: a file orch
// then refuses (not a ledger, damaged) must not be rewritten by the close, which
// by default would checkpoint whatever WAL lies next to it into it and delete it.
Expected<void> leave_files_on_close(SqliteDb& db);

inline constexpr std::uintmax_t kWalShrinkBytes = 256 * 1024;

// When the ledger's -wal file is larger than kWalShrinkBytes and no transaction
// is open, checkpoints the WAL into the database and truncates it, without
// waiting: if another connection is reading or writing, nothing is done (that
// connection keeps the WAL index alive, so no one pays to rebuild it). For a
// connection about to close.
void shrink_wal_if_large(SqliteDb& db);

// Switches to WAL (persistent in the file; skipped when already on, so opening a
// second connection never needs an exclusive lock) and sets the per-connection
// pragmas above.
Expected<void> apply_connection_settings(SqliteDb& db, SyncMode sync);

}  // namespace orch
