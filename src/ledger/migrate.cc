#include "ledger/migrate.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <system_error>

#include "ledger/schema.h"
#include "orch/store.h"
#include "sqlite/sqlite_statement.h"

namespace orch {

namespace {

Expected<int> read_schema_version(SqliteDb& db) {
  const std::string path = db.path().string();
  const auto application_id = ORCH_TRY(db.query_int("PRAGMA application_id", "reading the application id"));
  const auto objects = ORCH_TRY(db.query_int("SELECT count(*) FROM sqlite_master", "listing the tables"));
  if (application_id != kOrchApplicationId) {
    if (application_id == 0 && objects == 0) return 0;  // empty: a new ledger
    return fail(
        ErrorCode::Store,
        fmt::format("{}: a SQLite database but not an orch ledger (it has {} tables, indexes or views "
                    "and no orch marker); refusing to use it",
                    path, objects));
  }
  const auto has_versions = ORCH_TRY(
      db.query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
                   "looking for the schema_version table"));
  if (has_versions == 0) {
    return fail(
        ErrorCode::Store,
        fmt::format("{}: marked as an orch ledger but has no schema_version table; the file is damaged",
                    path));
  }
  const auto version = ORCH_TRY(
      db.query_int("SELECT coalesce(max(version), 0) FROM schema_version", "reading the schema version"));
  if (version > store_schema_version()) {
    return fail(ErrorCode::Store,
                fmt::format("{}: the ledger has schema version {}, newer than this orch ({}) understands "
                            "(version {}); use a newer orch or another store",
                            path, version, ORCH_VERSION, store_schema_version()));
  }
  return static_cast<int>(version);
}

// After a migration rewrote CREATE statements in sqlite_schema: bump the schema
// cookie (so every connection, this one included, re-reads the schema), then
// check that the new text parses, that every row satisfies it, and that the
// rewrite took effect.
Expected<void> reload_edited_schema(SqliteDb& db, const Migration& m) {
  const std::string where = fmt::format("schema version {}", m.version);
  const auto cookie =
      ORCH_TRY(db.query_int("PRAGMA schema_version", "reading the schema cookie for " + where));
  ORCH_TRY(db.exec(fmt::format("PRAGMA schema_version = {}", cookie + 1).c_str(),
                   "bumping the schema cookie for " + where));
  auto check = ORCH_TRY(Statement::prepare(db, "PRAGMA integrity_check"));
  std::string problems;
  while (ORCH_TRY(check.step([&] { return "checking the ledger after " + where; }))) {
    std::string line = check.column_text(0);
    if (line != "ok") problems += (problems.empty() ? "" : "; ") + line;
  }
  if (problems.empty() && m.verify && ORCH_TRY(db.query_int(m.verify, "verifying " + where)) != 1)
    problems = "the table definitions were not rewritten as expected";
  if (!problems.empty())
    return fail(ErrorCode::Store,
                fmt::format("{}: migrating to {}: {}", db.path().string(), where, problems));
  return {};
}

}  // namespace

Expected<int> ledger_schema_version(SqliteDb& db) {
  if (db.in_transaction()) return read_schema_version(db);
  // The marker and the tables must be read from one snapshot: between two
  // separate reads another process may create the ledger, and a file with tables
  // but (as first read) no marker would be refused as foreign.
  ORCH_TRY(db.exec("BEGIN", "starting to read the ledger header"));
  auto version = read_schema_version(db);
  (void)db.exec("COMMIT", "ending the read of the ledger header");
  return version;
}

Expected<void> migrate_to_current(SqliteDb& db, std::int64_t now_ms) {
  ORCH_TRY(db.exec("BEGIN IMMEDIATE", "starting the schema migration"));
  auto migrated = [&]() -> Expected<void> {
    // Read again under the write lock: another process may have migrated meanwhile.
    const int version = ORCH_TRY(ledger_schema_version(db));
    if (version == store_schema_version()) return {};
    for (const Migration& migration : schema_migrations()) {
      if (migration.version <= version) continue;
      ORCH_TRY(db.exec(migration.sql, fmt::format("migrating the schema to version {}", migration.version)));
      if (migration.edits_schema_text) ORCH_TRY(reload_edited_schema(db, migration));
      // Prepared after the migration: version 1 creates the schema_version table.
      auto record = ORCH_TRY(Statement::prepare(
          db, "INSERT INTO schema_version (version, applied_at, description) VALUES (?1, ?2, ?3)"));
      record.bind_int(1, migration.version);
      record.bind_int(2, now_ms);
      record.bind_text(3, migration.description);
      ORCH_TRY(record.run([&] { return fmt::format("recording schema version {}", migration.version); }));
    }
    // The marker is written in the same transaction as the tables: a crash leaves
    // either an empty file or a complete ledger, never a half-made one.
    return db.exec(fmt::format("PRAGMA application_id = {}", kOrchApplicationId).c_str(),
                   "marking the file as an orch ledger");
  }();
  if (!migrated) {
    (void)db.exec("ROLLBACK", "rolling back the schema migration");
    return migrated;
  }
  return db.exec("COMMIT", "committing the schema migration");
}

namespace {

Error io_error(const std::filesystem::path& path, const std::string& what, int err) {
  return Error{ErrorCode::Io, fmt::format("{}: {}: {}", path.string(), what, std::strerror(err))};
}

// fdatasync (or fsync, for a folder) of the file at `path`.
Expected<void> sync_path(const std::filesystem::path& path, bool folder) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (folder ? O_DIRECTORY : 0));
  if (fd < 0) return std::unexpected(io_error(path, "opening to sync", errno));
  const int rc = folder ? ::fsync(fd) : ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return std::unexpected(io_error(path, "syncing", err));
  return {};
}

// Builds the current schema into the new file `temp`: nothing in this file is
// anyone's until the rename, so it needs no journal on disk and no fsync of its
// own (create_ledger_file syncs it once, whole).
Expected<void> build_ledger(const std::filesystem::path& temp, std::int64_t now_ms) {
  auto db = ORCH_TRY(SqliteDb::open(temp, kLedgerFileKind));
  ORCH_TRY(db.exec("PRAGMA journal_mode = MEMORY", "building a new ledger"));
  ORCH_TRY(db.exec("PRAGMA synchronous = OFF", "building a new ledger"));
  ORCH_TRY(migrate_to_current(db, now_ms));
  // Marks the file as WAL in its header; the WAL itself is created by the first
  // writer of the renamed file.
  auto mode = ORCH_TRY(db.query_text("PRAGMA journal_mode = WAL", "switching a new ledger to WAL mode"));
  if (mode != "wal")
    return fail(ErrorCode::Store,
                fmt::format("{}: could not switch to WAL mode (journal_mode is '{}'); orch needs a local "
                            "filesystem with shared-memory support for its ledger",
                            temp.string(), mode));
  return {};
}

// Removes what earlier creations of `path` left behind when their process died
// before the rename (kill -9 mid-creation): `<path>.new-<pid>-<n>` files, and
// their -wal, -shm or -journal, whose <pid> no longer exists. A live process's
// files are left alone. Best effort: a file that cannot be removed stays.
void remove_dead_creations(const std::filesystem::path& path) {
  const std::string prefix = path.filename().string() + ".new-";
  std::error_code ec;
  std::filesystem::directory_iterator it(path.parent_path().empty() ? "." : path.parent_path(), ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    pid_t pid = 0;
    const auto [end, error] = std::from_chars(first, last, pid);
    if (error != std::errc{} || end == first || end == last || *end != '-' || pid <= 0) continue;
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    ::unlink(it->path().c_str());
  }
}

}  // namespace

Expected<LedgerCreation> create_ledger_file(const std::filesystem::path& path, std::int64_t now_ms) {
  static std::atomic<int> counter{0};
  const std::filesystem::path temp = fmt::format("{}.new-{}-{}", path.string(), getpid(), counter++);
  auto remove_temp = [&temp] {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((temp.string() + suffix).c_str());
  };
  remove_dead_creations(path);
  auto built = build_ledger(temp, now_ms);  // closes the file before it is synced and renamed
  if (built) built = sync_path(temp, false);
  if (!built) {
    remove_temp();
    return std::unexpected(built.error());
  }
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    remove_temp();
    if (err == EEXIST) return LedgerCreation::Exists;
    if (err == EINVAL || err == ENOSYS) return LedgerCreation::Unsupported;
    return std::unexpected(io_error(path, "moving the new ledger into place", err));
  }
  ORCH_TRY(sync_path(path.parent_path(), true));
  return LedgerCreation::Created;
}

}  // namespace orch
