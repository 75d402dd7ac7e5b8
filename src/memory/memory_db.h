// memory/memory_db.h — opening .orch/memory/memory.db, the memory layer's SQLite file.
//
// The schema (lessons, faults, fault_sightings, meta and the FTS5 table
// `documents`) is documented column by column at the top of memory_db.cc and in
// docs/memory.md. Its version is PRAGMA user_version; PRAGMA application_id
// marks the file as orch's memory so that a foreign database is never written to.
//
// Opening creates the folder and the file when missing, switches to WAL with the
// ledger's connection settings (sqlite/connection_settings.h: busy timeout, so
// several orch processes may share the file) and applies missing migrations in
// one BEGIN IMMEDIATE transaction. A file that is not SQLite, a foreign SQLite
// database, or one from a newer orch is an ErrorCode::Store error naming the file,
// and the file is left untouched.
//
// A SqliteDb is used from one thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "memory/memory_paths.h"
#include "orch/error.h"
#include "sqlite/sqlite_db.h"

namespace orch::memory {

// "orcm": PRAGMA application_id of a memory database.
inline constexpr std::int32_t kMemoryApplicationId = 0x6F72636D;

// The schema version this orch writes (PRAGMA user_version).
int memory_schema_version();

Expected<SqliteDb> open_memory_db(const std::filesystem::path& db_path);
// The workspace's memory.db; the workspace folder itself must exist (NotFound otherwise).
Expected<SqliteDb> open_memory_db(const MemoryPaths& paths);

// The value of `key` in the meta table ("" when it has none).
Expected<std::string> read_meta(SqliteDb& db, std::string_view key);

// Runs `body` (returning Expected<T>) inside BEGIN IMMEDIATE ... COMMIT; rolls back
// when it fails. `what` names the work in error messages.
template <class Body>
auto in_write_transaction(SqliteDb& db, std::string_view what, Body&& body) -> decltype(body()) {
  if (auto begun = db.exec("BEGIN IMMEDIATE", what); !begun) return std::unexpected(std::move(begun).error());
  auto result = body();
  if (!result) {
    (void)db.exec("ROLLBACK", what);
    return result;
  }
  if (auto committed = db.exec("COMMIT", what); !committed) {
    (void)db.exec("ROLLBACK", what);
    return std::unexpected(std::move(committed).error());
  }
  return result;
}

}  // namespace orch::memory
