// memory/memory.h — the memory layer in one include (docs/memory.md).
//
//   memory_paths.h    where a workspace keeps its memory
//   memory_index.h    MemoryIndex: reindex, recall (BM25), similar (fuzzy)
//   similarity.h      the similarity formula and the 0.6 threshold
//   context_pack.h    pack_context: notes and lessons that fit a token budget
//   skills.h          discover_skills
//   memory_store.h    LessonStore, FaultLedger: the durable records, open_memory_store
//   lessons.h         LessonInput, harvest_lesson (learning loop, step 1)
//   fault_ledger.h    update_fault_ledger (step 2), FAULT_LEDGER.md
//   trace_facts.h     lesson_from_trace: a trace document read as a lesson
//   trace_harvest.h   harvest_traces (`orch memory harvest`)
// Step 3 of the learning loop is MemoryIndex::reindex.
#pragma once

#include "memory/context_pack.h"
#include "memory/fault_ledger.h"
#include "memory/lessons.h"
#include "memory/memory_index.h"
#include "memory/memory_paths.h"
#include "memory/memory_store.h"
#include "memory/similarity.h"
#include "memory/skills.h"
#include "memory/trace_facts.h"
#include "memory/trace_harvest.h"
