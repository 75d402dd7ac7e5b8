// memory/memory_store.h — the memory's durable records, behind interfaces: the
// lessons (what each closed trace taught) and the fault ledger (recurring
// failure patterns).
//
// The learning loop (lessons.h, fault_ledger.h, trace_harvest.h) and the flows
// reach the records only through LessonStore and FaultLedger, and get both from
// open_memory_store: today one SQLite file, .orch/memory/memory.db
// (sqlite_memory_store.h), tomorrow possibly a shared database. The full-text
// index (memory_index.h) is not a record: it is a local cache rebuilt from these
// records and the workspace's files, kept in SQLite FTS5 whatever holds them.
//
// Several processes may use one workspace's store at once. One object is used
// from one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memory/fault_ledger.h"
#include "memory/lessons.h"
#include "memory/memory_paths.h"
#include "orch/error.h"

namespace orch::memory {

// The lessons: at most one per trace.
class LessonStore {
 public:
  virtual ~LessonStore() = default;

  // Records the lesson of `lesson.trace_id`, replacing the one it had; its note
  // is `note_path` (relative to the workspace) and `now_ms` the time of writing.
  // The lesson is valid (check_lesson) and its closed_at_ms set. All or nothing.
  virtual Expected<void> put_lesson(const LessonInput& lesson, std::string_view note_path,
                                    std::int64_t now_ms) = 0;
  virtual Expected<bool> has_lesson(std::string_view trace_id) = 0;
  // Every lesson, oldest first (by first harvest, then trace id).
  virtual Expected<std::vector<StoredLesson>> read_lessons() = 0;
  // A value that changes with every put_lesson ("" before the first): part of
  // the index's signature, so that the next reindex sees a lesson written.
  virtual Expected<std::string> generation() = 0;
};

// One closed trace's failures, as the fault ledger counts them.
struct FaultReport {
  std::string trace_id;
  std::string request;
  std::int64_t seen_at_ms = 0;           // when the trace was closed
  std::vector<FaultSighting> sightings;  // each pattern once (fault_sightings)
};

// The recurring failure patterns, each counted once per trace.
class FaultLedger {
 public:
  virtual ~FaultLedger() = default;

  // Counts the report's trace once for every pattern it was not counted for
  // yet: a new pattern keeps this description; first and last seen widen to
  // seen_at_ms, and the last trace and its request are those of the latest
  // sighting. True when a count changed. All or nothing.
  virtual Expected<bool> record(const FaultReport& report) = 0;
  // Every pattern, most frequent first (ties: the latest first, then by pattern).
  virtual Expected<std::vector<Fault>> read_faults() = 0;
};

// A workspace's lessons and fault ledger.
class MemoryStore {
 public:
  virtual ~MemoryStore() = default;
  virtual LessonStore& lessons() = 0;
  virtual FaultLedger& faults() = 0;
};

// The workspace's store (created when missing). The workspace folder itself
// must exist (NotFound otherwise); a file that is not orch's memory is refused
// (ErrorCode::Store) and left untouched.
Expected<std::unique_ptr<MemoryStore>> open_memory_store(const MemoryPaths& paths);

}  // namespace orch::memory
