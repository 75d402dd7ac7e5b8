#include "cli/number_option.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

namespace orch::cli {

namespace {

// The text without one leading '+' (from_chars takes no sign but '-').
std::string_view unsigned_text(std::string_view text) {
  if (text.starts_with('+') && text.size() > 1 && text[1] != '-') text.remove_prefix(1);
  return text;
}

// A finite number written out in full ("12", "0.5", "1e3"), whatever its size.
bool is_decimal(std::string_view text) {
  text = unsigned_text(text);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return end == text.data() + text.size() && !text.empty() &&
         (ec == std::errc::result_out_of_range || (ec == std::errc() && std::isfinite(value)));
}

std::string not_a_number(std::string_view wanted, std::string_view text) {
  return fmt::format("must be {}; '{}' is not a number", wanted, text);
}

// The check of a decimal option: `fits` says whether a finite value is in range.
CLI::Validator decimal_check(std::string wanted, std::string description, bool (*fits)(double, double),
                             double bound) {
  return CLI::Validator(
      [wanted, fits, bound](std::string& input) -> std::string {
        std::string_view text = unsigned_text(input);
        double value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || end != text.data() + text.size() ||
            (ec != std::errc() && ec != std::errc::result_out_of_range))
          return not_a_number(wanted, input);
        if (ec == std::errc::result_out_of_range || !std::isfinite(value) || !fits(value, bound))
          return fmt::format("must be {}, not '{}'", wanted, input);
        input = fmt::format("{}", value);
        return "";
      },
      std::move(description), "NUMBER");
}

}  // namespace

CLI::Validator whole_number(std::int64_t least, std::int64_t most) {
  const std::string wanted = fmt::format("a whole number of at least {}", least);
  return CLI::Validator(
      [least, most, wanted](std::string& input) -> std::string {
        std::string_view text = unsigned_text(input);
        std::int64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool whole = !text.empty() && end == text.data() + text.size();
        if (whole && ec == std::errc::result_out_of_range) {
          if (text.starts_with('-')) return fmt::format("must be {}, not '{}'", wanted, input);
          return fmt::format("must be a whole number of at most {}, not '{}'", most, input);
        }
        if (!whole || ec != std::errc()) {
          if (is_decimal(input)) return fmt::format("must be {}, not '{}'", wanted, input);  // "1.5"
          return not_a_number(wanted, input);
        }
        if (value < least) return fmt::format("must be {}, not '{}'", wanted, input);
        if (value > most) return fmt::format("must be a whole number of at most {}, not '{}'", most, input);
        input = std::to_string(value);
        return "";
      },
      fmt::format(">={}", least), "WHOLE_NUMBER");
}

CLI::Validator number_at_least(double least) {
  return decimal_check(
      fmt::format("a finite number of at least {}", least), fmt::format(">={}", least),
      [](double value, double bound) { return value >= bound; }, least);
}

CLI::Validator number_above(double bound) {
  return decimal_check(
      fmt::format("a finite number greater than {}", bound), fmt::format(">{}", bound),
      [](double value, double limit) { return value > limit; }, bound);
}

CLI::Validator not_empty(std::string wanted) {
  return CLI::Validator(
      [wanted](std::string& input) -> std::string {
        return input.empty() ? fmt::format("is empty: give {}", wanted) : "";
      },
      "", "NOT_EMPTY");
}

}  // namespace orch::cli
