// Token counts reported by what an attempt ran: a provider's `usage`, a worker's
// output, a step's ORCH_USAGE_FILE. One rule for all three, so a figure charged
// from one is not refused from another.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "orch/error.h"

namespace orch {

// `v` as a token count: a whole number from 0 to 2^63 - 1, however JSON writes it
// (5, 5.0 and 5e0 are the same count, as JSON Schema has it). Otherwise the reason,
// worded to follow the figure ("not a non-negative integer", "too large to be a
// token count (more than ...)").
Expected<std::int64_t> token_count(const nlohmann::json& v);

}  // namespace orch
