// memory/fault_ledger.h — recurring failure patterns, counted over closed traces.
//
// The second step of the learning loop (docs/memory.md). Each failure of a
// closed trace becomes a pattern key (fault_pattern): every VERIFY checklist item
// that failed, or, for a trace that did not pass and has no failed item,
// "result:<result> intent:<intent>". memory.db's `faults` table keeps one row per
// pattern with the number of distinct traces it was seen in, first and last seen,
// the last trace and its request; `fault_sightings` remembers which trace saw which
// pattern, so updating twice for one trace counts it once. A clean pass (result
// pass, no failed item) changes nothing.
//
// After every change .orch/memory/FAULT_LEDGER.md is regenerated from the table
// (atomically): a table for people, most frequent pattern first.
//
// Not thread-safe on one SqliteDb; several processes may update one memory.db.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memory/lessons.h"
#include "memory/memory_paths.h"
#include "orch/error.h"
#include "sqlite/sqlite_db.h"

namespace orch::memory {

struct Fault {
  std::string pattern;
  std::string description;
  std::int64_t count = 0;
  std::int64_t first_seen_ms = 0;
  std::int64_t last_seen_ms = 0;
  std::string last_trace_id;
  std::string example;
};

// The pattern key of a failure text: ASCII letters lower-cased, each run of
// digits replaced by '#', every other character that is not a letter (or a byte
// of a UTF-8 sequence) a word break, words joined by one space, at most 200 bytes.
// "Tests pass (3 failed)" -> "tests pass # failed". "" when nothing is left.
std::string fault_pattern(std::string_view failure);

Expected<void> update_fault_ledger(const MemoryPaths& paths, const LessonInput& lesson);
// The table part alone, on an open memory.db: true when a row changed.
Expected<bool> record_faults(SqliteDb& db, const LessonInput& lesson);

// Every pattern, most frequent first (ties: the latest first).
Expected<std::vector<Fault>> read_faults(SqliteDb& db);
Expected<std::vector<Fault>> list_faults(const MemoryPaths& paths);

std::string fault_ledger_markdown(const std::vector<Fault>& faults);
// Regenerates FAULT_LEDGER.md from the table.
Expected<void> export_fault_ledger(SqliteDb& db, const MemoryPaths& paths);

}  // namespace orch::memory
