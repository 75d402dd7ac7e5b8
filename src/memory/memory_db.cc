// memory/memory_db.cc — THE MEMORY SCHEMA (.orch/memory/memory.db). Keep docs/memory.md
// and docs/store.md in step.
//
// A SQLite database in WAL mode, PRAGMA application_id = 0x6F72636D ("orcm"),
// PRAGMA user_version = the schema version. Times are INTEGER milliseconds since
// the Unix epoch (UTC). Text is stored as given.
//
// lessons          one row per harvested trace (the durable lessons store)
//   trace_id         the trace's id, primary key: harvesting a trace again
//                    replaces its row, so a trace has at most one lesson
//   request          the request, verbatim
//   intent           the classified intent (bug_fix, feature, ...; '' if none)
//   result           pass | fail | escalated | abandoned
//   verify_failures  JSON array of strings: the VERIFY checklist items that failed
//   fix              what fixed it (the note of the EXECUTE retry that passed), or ''
//   summary          the trace's summary, or ''
//   note_path        the lesson's markdown note, relative to the workspace
//   closed_at        when the trace was closed
//   created_at       when the lesson was first harvested
//   updated_at       when it was last written
//
// faults           the fault ledger: one row per recurring failure pattern
//   pattern          the normalised key, primary key: a VERIFY item lower-cased,
//                    numbers replaced by '#', non-word characters dropped
//                    ("tests pass (3 failed)" -> "tests pass # failed"), or
//                    "result:<result> intent:<intent>" for a failure with no item
//   description      the failure's text as first seen
//   count            the number of distinct traces it was seen in
//   first_seen, last_seen   the closing times of the first and latest such traces
//   last_trace_id    the latest trace it was seen in
//   example          that trace's request
//
// fault_sightings  which trace saw which pattern: makes the fault ledger idempotent
//   pattern, trace_id  primary key (a trace counts once per pattern)
//   seen_at          the trace's closing time
//
// meta             key/value facts about the index
//   index_signature  hash of the sources the FTS table was built from (files'
//                    paths, sizes, mtimes and inodes, the lessons generation and
//                    the index format); reindex() is a no-op while it matches
//   index_stats      JSON {notes, lessons, traces, skipped: ["file: why"]} of that build
//   lessons_generation  bumped by every write to lessons
//
// documents        FTS5 table (tokenize = 'porter unicode61'), rebuilt by reindex()
//   kind             note | lesson | trace                         (UNINDEXED)
//   id               note: its path under notes/ without ".md"; lesson, trace:
//                    the trace id                                   (UNINDEXED)
//   title            the note's title; the request for lessons and traces
//   body             the text searched: the note's markdown without front matter;
//                    the lesson's text; the trace's request, intent, verify items,
//                    transition notes and summary
//   tags             space-separated tags (front matter; intent and result)
//   path             the source file, relative to the workspace      (UNINDEXED)
//   subject          what similarity compares a request with: the note's title;
//                    the request for lessons and traces             (UNINDEXED)
#include "memory/memory_db.h"

#include <fmt/format.h>

#include <array>
#include <fstream>

#include "sqlite/connection_settings.h"
#include "sqlite/sqlite_statement.h"

namespace orch::memory {

namespace fs = std::filesystem;

namespace {

struct MemoryMigration {
  int version;
  const char* sql;
};

// A migration that has shipped is never edited; a change is a new entry.
constexpr std::array kMigrations{
    MemoryMigration{1, R"sql(
CREATE TABLE lessons (
  trace_id        TEXT PRIMARY KEY,
  request         TEXT NOT NULL,
  intent          TEXT NOT NULL,
  result          TEXT NOT NULL CHECK (result IN ('pass', 'fail', 'escalated', 'abandoned')),
  verify_failures TEXT NOT NULL DEFAULT '[]',
  fix             TEXT NOT NULL DEFAULT '',
  summary         TEXT NOT NULL DEFAULT '',
  note_path       TEXT NOT NULL,
  closed_at       INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
);
CREATE TABLE faults (
  pattern         TEXT PRIMARY KEY,
  description     TEXT NOT NULL,
  count           INTEGER NOT NULL CHECK (count >= 1),
  first_seen      INTEGER NOT NULL,
  last_seen       INTEGER NOT NULL,
  last_trace_id   TEXT NOT NULL,
  example         TEXT NOT NULL
);
CREATE TABLE fault_sightings (
  pattern         TEXT NOT NULL,
  trace_id        TEXT NOT NULL,
  seen_at         INTEGER NOT NULL,
  PRIMARY KEY (pattern, trace_id)
) WITHOUT ROWID;
CREATE TABLE meta (
  key             TEXT PRIMARY KEY,
  value           TEXT NOT NULL
) WITHOUT ROWID;
CREATE VIRTUAL TABLE documents USING fts5(
  kind UNINDEXED, id UNINDEXED, title, body, tags, path UNINDEXED, subject UNINDEXED,
  tokenize = 'porter unicode61'
);
)sql"},
};

// A file that exists and has bytes must start with SQLite's header; anything else
// is refused before SQLite (which would say only "file is not a database") opens it.
Expected<void> check_header(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::file_size(path, ec) == 0 || ec) return {};
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof header);
  if (in.gcount() != 16 || std::string_view(header, 16) != std::string_view("SQLite format 3\0", 16))
    return fail(ErrorCode::Store,
                fmt::format("{}: not a SQLite database, so not orch's memory; refusing to use it "
                            "(move it away and run `orch memory harvest` to rebuild from the traces)",
                            path.string()));
  return {};
}

// The file's schema version: 0 for an empty database; an error for a foreign or newer one.
Expected<int> read_version(SqliteDb& db) {
  const auto app = ORCH_TRY(db.query_int("PRAGMA application_id", "reading the application id"));
  const auto version = ORCH_TRY(db.query_int("PRAGMA user_version", "reading the schema version"));
  if (app != kMemoryApplicationId) {
    const auto objects = ORCH_TRY(db.query_int("SELECT count(*) FROM sqlite_master", "listing the tables"));
    if (app == 0 && objects == 0) return 0;
    return fail(
        ErrorCode::Store,
        fmt::format("{}: a SQLite database but not orch's memory (no orch marker); refusing to use it",
                    db.path().string()));
  }
  if (version > memory_schema_version())
    return fail(ErrorCode::Store,
                fmt::format("{}: memory schema version {} is newer than this orch understands ({})",
                            db.path().string(), version, memory_schema_version()));
  return static_cast<int>(version);
}

Expected<void> migrate(SqliteDb& db) {
  return in_write_transaction(db, "migrating the memory schema", [&]() -> Expected<void> {
    // Read again under the write lock: another process may have migrated meanwhile.
    const int version = ORCH_TRY(read_version(db));
    for (const MemoryMigration& m : kMigrations) {
      if (m.version <= version) continue;
      ORCH_TRY(db.exec(m.sql, fmt::format("creating memory schema version {}", m.version)));
      ORCH_TRY(
          db.exec(fmt::format("PRAGMA user_version = {}", m.version).c_str(), "setting the schema version"));
    }
    // Marked in the same transaction as the tables: a crash leaves an empty file or a whole one.
    return db.exec(fmt::format("PRAGMA application_id = {}", kMemoryApplicationId).c_str(),
                   "marking the file as orch's memory");
  });
}

}  // namespace

int memory_schema_version() {
  return kMigrations.back().version;
}

Expected<SqliteDb> open_memory_db(const fs::path& db_path) {
  std::error_code ec;
  if (db_path.has_parent_path()) fs::create_directories(db_path.parent_path(), ec);
  if (ec)
    return fail(ErrorCode::Io, fmt::format("{}: cannot create the folder: {}", db_path.parent_path().string(),
                                           ec.message()));
  ORCH_TRY(check_header(db_path));
  auto db = ORCH_TRY(SqliteDb::open(db_path, "orch's memory"));
  set_busy_timeout(db);
  // Recognised before anything is written (WAL mode is written into the file).
  const int version = ORCH_TRY(read_version(db));
  ORCH_TRY(apply_connection_settings(db, SyncMode::Normal));
  // The common case (an up-to-date file) takes no write lock.
  if (version != memory_schema_version()) ORCH_TRY(migrate(db));
  return db;
}

Expected<std::string> read_meta(SqliteDb& db, std::string_view key) {
  auto query = ORCH_TRY(Statement::prepare(db, "SELECT value FROM meta WHERE key = ?1"));
  ResetOnExit reset(query);
  query.bind_text(1, key);
  if (!ORCH_TRY(query.step([&] { return fmt::format("reading '{}' from meta", key); }))) return std::string();
  return query.column_text(0);
}

Expected<SqliteDb> open_memory_db(const MemoryPaths& paths) {
  std::error_code ec;
  if (!fs::is_directory(paths.workspace, ec))
    return fail(ErrorCode::NotFound, fmt::format("workspace {} is not a folder", paths.workspace.string()));
  return open_memory_db(paths.db);
}

}  // namespace orch::memory
