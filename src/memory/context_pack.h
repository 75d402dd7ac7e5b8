// memory/context_pack.h — the knowledge that fits a model's token budget.
//
// pack_context recalls the 50 best notes and lessons for the request (BM25, as
// MemoryIndex::recall; traces are left out: their lessons carry what they
// taught) and takes them greedily in rank order, whole: an item whose estimated
// tokens (ceil(bytes / 4) of its indexed text) do not fit what is left of the
// budget is passed over and the next one tried, so a smaller, lower-ranked item
// may still fill the rest. Items are never cut. Nothing fits a budget <= 0.
//
// Not thread-safe (uses the index's connection).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "memory/memory_index.h"
#include "orch/error.h"

namespace orch::memory {

struct ContextPack {
  std::vector<Hit> items;   // with content and tokens
  std::int64_t tokens = 0;  // their sum, <= budget
  std::int64_t budget = 0;
};

Expected<ContextPack> pack_context(MemoryIndex& index, std::string_view request, std::int64_t token_budget);

}  // namespace orch::memory
