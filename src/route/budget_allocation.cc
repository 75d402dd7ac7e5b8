#include "route/budget_allocation.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace orch::route {

Expected<BudgetAllocation> allocate_budget(const RouteTables& tables, std::string_view request_type,
                                           std::string_view input) {
  const AllocationRules& rules = tables.budgets.allocation;
  auto it = rules.by_request_type.find(std::string(request_type));
  if (it == rules.by_request_type.end()) {
    const std::vector<std::string> known = tables.request_type_names();
    return fail(ErrorCode::InvalidInput,
                fmt::format("unknown request type '{}'{} (request types: {})", request_type,
                            did_you_mean(request_type, known), join(known, ", ")));
  }
  BudgetAllocation a;
  a.request_type = std::string(request_type);
  a.allocated = rules.base + it->second;
  a.safety_buffer = a.allocated * rules.safety_buffer_percent / 100;
  a.effective_budget = a.allocated - a.safety_buffer;
  a.input_chars = count_code_points(input);
  a.input_estimated = std::max<std::int64_t>(1, a.input_chars / rules.chars_per_token);
  return a;
}

}  // namespace orch::route
