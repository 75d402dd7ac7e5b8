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

Expected<Millis> duration_or_reason(std::string_view text);
Expected<std::int64_t> size_or_reason(std::string_view text);

}  // namespace orch::detail
