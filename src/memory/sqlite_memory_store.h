// memory/sqlite_memory_store.h — the memory's records in .orch/memory/memory.db.
//
// SqliteLessonStore is the `lessons` table (and the `lessons_generation`
// counter in `meta`), SqliteFaultLedger the `faults` and `fault_sightings`
// tables; memory_db.cc documents them column by column. Both borrow one
// connection, which SqliteMemoryStore owns and MemoryIndex shares for its FTS5
// table. Each write is one BEGIN IMMEDIATE transaction.
//
// Not thread-safe (one connection); several processes may share the file.
#pragma once

#include <memory>

#include "memory/memory_paths.h"
#include "memory/memory_store.h"
#include "orch/error.h"
#include "sqlite/sqlite_db.h"

namespace orch::memory {

class SqliteLessonStore final : public LessonStore {
 public:
  explicit SqliteLessonStore(SqliteDb& db) : db_(db) {}

  Expected<void> put_lesson(const LessonInput& lesson, std::string_view note_path,
                            std::int64_t now_ms) override;
  Expected<bool> has_lesson(std::string_view trace_id) override;
  Expected<std::vector<StoredLesson>> read_lessons() override;
  Expected<std::string> generation() override;

 private:
  SqliteDb& db_;
};

class SqliteFaultLedger final : public FaultLedger {
 public:
  explicit SqliteFaultLedger(SqliteDb& db) : db_(db) {}

  Expected<bool> record(const FaultReport& report) override;
  Expected<std::vector<Fault>> read_faults() override;

 private:
  SqliteDb& db_;
};

class SqliteMemoryStore final : public MemoryStore {
 public:
  // Opens the workspace's memory.db (open_memory_db: created and migrated when needed).
  static Expected<std::unique_ptr<SqliteMemoryStore>> open(const MemoryPaths& paths);

  explicit SqliteMemoryStore(SqliteDb db) : db_(std::move(db)) {}
  SqliteMemoryStore(const SqliteMemoryStore&) = delete;
  SqliteMemoryStore& operator=(const SqliteMemoryStore&) = delete;

  LessonStore& lessons() override { return lessons_; }
  FaultLedger& faults() override { return faults_; }
  // The connection, for the full-text index kept in the same file.
  SqliteDb& db() { return db_; }

 private:
  SqliteDb db_;
  SqliteLessonStore lessons_{db_};  // borrow db_: declared after it
  SqliteFaultLedger faults_{db_};
};

}  // namespace orch::memory
