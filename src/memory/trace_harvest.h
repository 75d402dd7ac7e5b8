// memory/trace_harvest.h — `orch memory harvest`: the learning loop over every closed trace.
//
// harvest_traces reads .orch/traces/*.json and, for each closed trace that has no
// lesson yet, runs the first two steps of the learning loop — harvest_lesson,
// then record_faults — then regenerates FAULT_LEDGER.md (when a fault changed or
// the file is missing) and runs the third step, reindex. Open traces are counted
// and left alone; a file that cannot be read or parsed is skipped and reported as
// "file: why". It is how traces closed while the memory was unavailable (or
// before it existed) are learnt from, and is safe to run any number of times.
//
// Not thread-safe; several processes may run it at once (SQLite locking).
#pragma once

#include <string>
#include <vector>

#include "memory/memory_index.h"
#include "memory/memory_paths.h"
#include "orch/error.h"

namespace orch::memory {

struct HarvestAllStats {
  int harvested = 0;                 // traces that got their lesson now
  int already = 0;                   // closed traces that had one
  int open = 0;                      // traces not closed yet
  std::vector<std::string> skipped;  // "file: why"
  MemoryIndex::ReindexStats reindex;
};

Expected<HarvestAllStats> harvest_traces(const MemoryPaths& paths);

}  // namespace orch::memory
