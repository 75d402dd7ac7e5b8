// ledger/migrate.h — recognising an orch ledger and bringing its schema up to date.
//
// Before orch writes anything to a file it decides what the file is:
//   * an empty database (new file)                        -> version 0, to be created
//   * an orch ledger (application_id "orch")              -> its schema version
//   * not a SQLite database, a foreign SQLite database, or a ledger from a newer
//     orch                                                -> an error naming the file,
//     and the file is left untouched.
#pragma once

#include <cstdint>
#include <filesystem>

#include "orch/error.h"
#include "sqlite/sqlite_db.h"

namespace orch {

// The schema version of the ledger in `db` (0 for an empty database), or an
// error if the file is not one this orch can use. Reads only; takes no write lock,
// so it never waits for a writer.
Expected<int> ledger_schema_version(SqliteDb& db);

// Creates a new ledger at `path` (which must not exist) atomically: the schema is
// built in a temporary file next to it (`<path>.new-<pid>-<n>`) with no journal
// on disk and no fsync, the file is switched to WAL mode, synced once, and then
// renamed into place without replacing anything, and the folder is synced. So a
// ledger file either does not exist or holds the whole current schema, and a new
// ledger costs two fsyncs instead of the six of creating it in place (the
// rollback journal of the switch to WAL, then the WAL's first commit).
// Temporary files of earlier creations whose process died before the rename
// (their pid no longer exists) are removed first.
//   Created:     the file at `path` is this process's new ledger;
//   Exists:      another process created `path` first (this one's file is gone);
//   Unsupported: the filesystem cannot rename without replacing; nothing was
//                left behind, and the caller creates the ledger in place.
enum class LedgerCreation { Created, Exists, Unsupported };
Expected<LedgerCreation> create_ledger_file(const std::filesystem::path& path, std::int64_t now_ms);

// Applies every migration newer than the file's version, in order, in one
// BEGIN IMMEDIATE transaction, and records each in schema_version. Safe when
// several processes open a new ledger at once: the version is read again under
// the write lock, so the schema is created exactly once. `now_ms` stamps
// schema_version.applied_at.
Expected<void> migrate_to_current(SqliteDb& db, std::int64_t now_ms);

}  // namespace orch
