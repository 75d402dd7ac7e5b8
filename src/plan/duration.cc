// Durations ("250ms", "1h30m", a bare number of seconds) and sizes ("16MiB").
//
// Integer arithmetic with overflow checks throughout: a duration or size that
// does not fit in int64 is an error, never a silent wrap. Fractions ("1.5s",
// "0.5GiB") keep six digits and round down to whole milliseconds / bytes.
#include "plan/duration.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "orch/plan_loader.h"
#include "util/strings.h"
#include "util/yaml_json.h"

namespace orch {

namespace {

constexpr int kFractionDigits = 6;
constexpr std::uint64_t kFractionScale = 1'000'000;

// A non-negative decimal number "12" or "12.5" as integer and fractional parts
// (the fraction scaled to kFractionScale).
struct Decimal {
  std::uint64_t whole = 0;
  std::uint64_t fraction = 0;
};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Reads a decimal at text[pos...]; advances pos. Fails on no digits or overflow.
Expected<Decimal> read_decimal(std::string_view text, std::size_t& pos) {
  Decimal d;
  std::size_t start = pos;
  while (pos < text.size() && is_digit(text[pos])) {
    if (__builtin_mul_overflow(d.whole, 10u, &d.whole) ||
        __builtin_add_overflow(d.whole, static_cast<std::uint64_t>(text[pos] - '0'), &d.whole))
      return fail(ErrorCode::InvalidInput, "too large");
    ++pos;
  }
  bool any_digits = pos > start;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    std::uint64_t scale = kFractionScale;
    while (pos < text.size() && is_digit(text[pos])) {
      any_digits = true;
      scale /= 10;  // digits beyond kFractionDigits fall away (scale reaches 0)
      d.fraction += static_cast<std::uint64_t>(text[pos] - '0') * scale;
      ++pos;
    }
  }
  if (!any_digits) return fail(ErrorCode::InvalidInput, "expected a number");
  return d;
}

// whole * unit + fraction * unit / scale, or nullopt on overflow of int64.
std::optional<std::int64_t> scale_decimal(const Decimal& d, std::uint64_t unit) {
  std::uint64_t total = 0;
  if (__builtin_mul_overflow(d.whole, unit, &total)) return std::nullopt;
  // fraction < 1e6 and unit <= 2^40 keep this product under 2^64.
  std::uint64_t part = d.fraction * unit / kFractionScale;
  if (__builtin_add_overflow(total, part, &total)) return std::nullopt;
  if (total > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<std::int64_t>(total);
}

std::optional<std::uint64_t> duration_unit_ms(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  return std::nullopt;
}

std::optional<std::uint64_t> size_unit_bytes(std::string unit) {
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  constexpr std::array<std::pair<std::string_view, std::uint64_t>, 10> kUnits{{
      {"", 1},
      {"b", 1},
      {"kb", 1000},
      {"mb", 1000 * 1000},
      {"gb", 1000 * 1000 * 1000},
      {"tb", 1000ull * 1000 * 1000 * 1000},
      {"kib", 1024},
      {"mib", 1024 * 1024},
      {"gib", 1024 * 1024 * 1024},
      {"tib", 1024ull * 1024 * 1024 * 1024},
  }};
  for (const auto& [name, bytes] : kUnits)
    if (unit == name) return bytes;
  return std::nullopt;
}

// A number in a notation of YAML 1.2 or JSON other than plain decimals (+5, 1e3,
// 0x10, 0o17, -0), as a count of `unit`s rounded down; nullopt if `text` is not
// one, or is negative and not zero. Plain decimals are read exactly, above.
std::optional<Expected<std::int64_t>> other_number_notation(std::string_view text, double unit,
                                                            std::int64_t max) {
  const nlohmann::json number = plain_yaml_scalar(std::string(text));
  if (!number.is_number()) return std::nullopt;
  const double value = number.get<double>();
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  const double scaled = std::floor(value * unit);
  if (scaled >= 0x1p63 || scaled > static_cast<double>(max))
    return Expected<std::int64_t>(fail(ErrorCode::InvalidInput, ""));
  return Expected<std::int64_t>(static_cast<std::int64_t>(scaled));
}

Expected<Millis> exact_duration(std::string_view text) {
  if (text.empty()) return fail(ErrorCode::InvalidInput, "empty duration (write e.g. 30s, 5m, 1h30m)");
  if (text[0] == '-') return fail(ErrorCode::InvalidInput, "a duration cannot be negative");
  std::size_t pos = 0;
  std::int64_t total = 0;
  while (pos < text.size()) {
    std::size_t number_start = pos;
    auto number = read_decimal(text, pos);
    if (!number && pos > number_start) return std::unexpected(number.error());  // digits, but too many
    if (!number)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("expected a number at '{}' (write e.g. 250ms, 30s, 5m, 1h30m)",
                              quote_for_message(text.substr(number_start), 20)));
    std::size_t unit_start = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    std::uint64_t unit_ms = 1000;  // a bare number is seconds
    if (unit.empty()) {
      if (pos != text.size() || number_start != 0)
        return fail(ErrorCode::InvalidInput,
                    pos != text.size() ? fmt::format("unexpected '{}' (write e.g. 250ms, 30s, 5m, 1h30m)",
                                                     quote_for_message(text.substr(pos), 20))
                                       : std::string("a number without a unit must be the whole duration"));
    } else {
      auto known = duration_unit_ms(unit);
      if (!known)
        return fail(ErrorCode::InvalidInput,
                    fmt::format("unknown unit '{}' (use ms, s, m or h)", quote_for_message(unit, 20)));
      unit_ms = *known;
    }
    auto part = scale_decimal(*number, unit_ms);
    if (!part || __builtin_add_overflow(total, *part, &total) || total > detail::kMaxDurationMs)
      return fail(ErrorCode::InvalidInput, "too large (at most 87600h, ten years)");
  }
  return Millis(total);
}

Expected<std::int64_t> exact_size(std::string_view text) {
  if (text.empty()) return fail(ErrorCode::InvalidInput, "empty size (write e.g. 512, 64KiB, 16MiB)");
  if (text[0] == '-') return fail(ErrorCode::InvalidInput, "a size cannot be negative");
  std::size_t pos = 0;
  auto number = read_decimal(text, pos);
  if (!number && pos > 0) return std::unexpected(number.error());
  if (!number)
    return fail(ErrorCode::InvalidInput, "expected a number of bytes (write e.g. 512, 64KiB, 16MiB)");
  std::string_view unit = trim(text.substr(pos));
  auto bytes = size_unit_bytes(std::string(unit));
  if (!bytes)
    return fail(ErrorCode::InvalidInput, fmt::format("unknown unit '{}' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)",
                                                     quote_for_message(unit, 20)));
  auto total = scale_decimal(*number, *bytes);
  if (!total) return fail(ErrorCode::InvalidInput, "too large");
  return *total;
}

}  // namespace

namespace detail {

Expected<Millis> duration_or_reason(std::string_view text) {
  auto value = exact_duration(trim(text));
  if (value) return value;
  if (number_too_large(trim(text)))
    return fail(ErrorCode::InvalidInput, "too large (at most 87600h, ten years)");
  if (auto other = other_number_notation(trim(text), 1000.0, detail::kMaxDurationMs)) {
    if (!*other) return fail(ErrorCode::InvalidInput, "too large (at most 87600h, ten years)");
    return Millis(**other);
  }
  return value;
}

Expected<std::int64_t> size_or_reason(std::string_view text) {
  auto value = exact_size(trim(text));
  if (value) return value;
  if (number_too_large(trim(text))) return fail(ErrorCode::InvalidInput, "too large");
  if (auto other = other_number_notation(trim(text), 1.0, INT64_MAX)) {
    if (!*other) return fail(ErrorCode::InvalidInput, "too large");
    return **other;
  }
  return value;
}

}  // namespace detail

Expected<Millis> parse_duration(std::string_view text) {
  auto value = detail::duration_or_reason(text);
  if (!value)
    return fail(ErrorCode::InvalidInput,
                fmt::format("bad duration '{}': {}", quote_for_message(text), value.error().message));
  return *value;
}

Expected<std::int64_t> parse_size(std::string_view text) {
  auto value = detail::size_or_reason(text);
  if (!value)
    return fail(ErrorCode::InvalidInput,
                fmt::format("bad size '{}': {}", quote_for_message(text), value.error().message));
  return *value;
}

}  // namespace orch
