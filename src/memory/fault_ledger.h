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
// The counting is a FaultLedger's (memory_store.h); what a trace contributes
// (fault_sightings) and FAULT_LEDGER.md are decided here, whatever holds the
// counts. After every change .orch/memory/FAULT_LEDGER.md is regenerated from
// the ledger (atomically): a table for people, most frequent pattern first.
//
// Not thread-safe on one FaultLedger; several processes may update one workspace's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memory/lessons.h"
#include "memory/memory_paths.h"
#include "orch/error.h"

namespace orch::memory {

class FaultLedger;  // memory_store.h

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

// A pattern a closed trace failed on.
struct FaultSighting {
  std::string pattern;
  std::string description;  // the failure's text
};

// The patterns a closed trace contributes, each once: its failed VERIFY items,
// or for a trace that did not pass and has none, "result:<result> intent:<intent>".
// Empty for a clean pass.
std::vector<FaultSighting> fault_sightings(const LessonInput& lesson);

// Records the lesson's sightings, then regenerates FAULT_LEDGER.md when a count
// changed or the file is missing. A clean pass (result pass, no failed item)
// changes nothing: the first, which opens the workspace's store, does not even
// open it then.
Expected<void> update_fault_ledger(const MemoryPaths& paths, const LessonInput& lesson);
Expected<void> update_fault_ledger(FaultLedger& ledger, const MemoryPaths& paths, const LessonInput& lesson);
// The counting alone, without FAULT_LEDGER.md: true when a count changed.
Expected<bool> record_faults(FaultLedger& ledger, const LessonInput& lesson);

// Every pattern of the workspace's fault ledger, most frequent first.
Expected<std::vector<Fault>> list_faults(const MemoryPaths& paths);

std::string fault_ledger_markdown(const std::vector<Fault>& faults);
// Regenerates FAULT_LEDGER.md from the ledger.
Expected<void> export_fault_ledger(FaultLedger& ledger, const MemoryPaths& paths);

}  // namespace orch::memory
