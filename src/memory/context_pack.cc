#include "memory/context_pack.h"

namespace orch::memory {

namespace {
constexpr int kPackCandidates = 50;
}  // namespace

Expected<ContextPack> pack_context(MemoryIndex& index, std::string_view request, std::int64_t token_budget) {
  ContextPack pack;
  pack.budget = token_budget;
  if (token_budget <= 0) return pack;
  RecallOptions options;
  options.limit = kPackCandidates;
  options.kinds = {"note", "lesson"};
  options.with_content = true;
  for (auto& hit : ORCH_TRY(index.recall(request, options))) {
    if (hit.tokens > token_budget - pack.tokens) continue;
    pack.tokens += hit.tokens;
    pack.items.push_back(std::move(hit));
  }
  return pack;
}

}  // namespace orch::memory
