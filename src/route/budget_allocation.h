// route/budget_allocation.h — seed 004's token allocation for a request (`orch budget-check`).
//
// From budgets.yaml's `allocation`:
//   allocated        = base + the request type's figure
//   safety_buffer    = allocated × safety_buffer_percent / 100, rounded down
//   effective_budget = allocated − safety_buffer
//   input_estimated  = max(1, characters / chars_per_token), rounded down
// Characters are Unicode code points of the UTF-8 text (not bytes), so "é" counts
// once. input_estimated is an ESTIMATE (about 4 characters per token for Latin
// text, fewer for other scripts), never a tokenizer's count; orch reports it as
// such and never charges it as tokens used.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "orch/error.h"
#include "route/tables.h"

namespace orch::route {

struct BudgetAllocation {
  std::string request_type;
  std::int64_t allocated = 0;
  std::int64_t safety_buffer = 0;
  std::int64_t effective_budget = 0;
  std::int64_t input_estimated = 0;
  std::int64_t input_chars = 0;  // code points
  // The input alone is estimated to need more than the effective budget.
  bool input_exceeds_budget() const { return input_estimated > effective_budget; }
};

// An unknown request type is InvalidInput naming the known ones (did-you-mean).
Expected<BudgetAllocation> allocate_budget(const RouteTables& tables, std::string_view request_type,
                                           std::string_view input);

}  // namespace orch::route
