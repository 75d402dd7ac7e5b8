#include "exec/usage_figures.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace orch {

Expected<std::int64_t> token_count(const nlohmann::json& v) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  // Past 2^64 a JSON reader gives a floating-point number (1e+20): too large, not "not an integer".
  if ((v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMax)) ||
      (v.is_number_float() && v.get<double>() >= 0x1p63))
    return fail(ErrorCode::InvalidInput, fmt::format("too large to be a token count (more than {})", kMax));
  if (v.is_number_unsigned()) return static_cast<std::int64_t>(v.get<std::uint64_t>());
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= 0 && std::trunc(d) == d) return static_cast<std::int64_t>(d);
  }
  return fail(ErrorCode::InvalidInput, "not a non-negative integer");
}

}  // namespace orch
