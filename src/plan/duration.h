// plan/duration.h — the reasons behind parse_duration/parse_size failures.
//
// The public parse_duration()/parse_size() (plan_loader.h) put the offending text
// into the message ("bad duration '5x': unknown unit 'x' (use ms, s, m or h)").
// The loader wants to name the field as well ("bad duration '5x' for 'timeout':
// ..."), so these variants return only the reason as the error message.
#pragma once

#include <cstdint>
#include <string_view>

#include "orch/error.h"
#include "orch/plan.h"

namespace orch::detail {

// The longest duration orch accepts: ten years. Timers and budgets add durations
// to clock readings; a longer one (up to 2^63 ms) would overflow there and fire at
// once, the opposite of what was asked.
inline constexpr std::int64_t kMaxDurationMs = 87600LL * 3600 * 1000;

Expected<Millis> duration_or_reason(std::string_view text);
Expected<std::int64_t> size_or_reason(std::string_view text);

}  // namespace orch::detail
