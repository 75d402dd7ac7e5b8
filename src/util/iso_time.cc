#include "util/iso_time.h"

#include <fmt/format.h>

#include <cctype>
#include <ctime>

namespace orch {

std::string iso8601_utc(std::int64_t ms, TimePrecision precision) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  if (precision == TimePrecision::Seconds)
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                       tm.tm_hour, tm.tm_min, tm.tm_sec);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
}

namespace {

// Reads exactly `digits` decimal digits at `pos`.
bool read_number(std::string_view text, std::size_t& pos, int digits, int& value) {
  if (pos + static_cast<std::size_t>(digits) > text.size()) return false;
  value = 0;
  for (int i = 0; i < digits; ++i, ++pos) {
    const char c = text[pos];
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

bool expect(std::string_view text, std::size_t& pos, char c) {
  if (pos >= text.size() || text[pos] != c) return false;
  ++pos;
  return true;
}

}  // namespace

std::optional<std::int64_t> parse_iso8601_ms(std::string_view text) {
  std::size_t pos = 0;
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!read_number(text, pos, 4, year) || !expect(text, pos, '-') || !read_number(text, pos, 2, month) ||
      !expect(text, pos, '-') || !read_number(text, pos, 2, day))
    return std::nullopt;
  if (pos >= text.size() || (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ')) return std::nullopt;
  ++pos;
  if (!read_number(text, pos, 2, hour) || !expect(text, pos, ':') || !read_number(text, pos, 2, minute) ||
      !expect(text, pos, ':') || !read_number(text, pos, 2, second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return std::nullopt;
  std::int64_t millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int scale = 100;
    if (pos >= text.size() || std::isdigit(static_cast<unsigned char>(text[pos])) == 0) return std::nullopt;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {
      millis += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
  }
  std::int64_t offset_minutes = 0;
  if (pos < text.size()) {
    const char sign = text[pos];
    if (sign == 'Z' || sign == 'z') {
      ++pos;
    } else if (sign == '+' || sign == '-') {
      ++pos;
      int oh = 0, om = 0;
      if (!read_number(text, pos, 2, oh)) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (!read_number(text, pos, 2, om)) return std::nullopt;
      offset_minutes = (sign == '+' ? 1 : -1) * (oh * 60 + om);
    } else {
      return std::nullopt;
    }
  }
  if (pos != text.size()) return std::nullopt;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t seconds = timegm(&tm);
  return (static_cast<std::int64_t>(seconds) - offset_minutes * 60) * 1000 + millis;
}

}  // namespace orch
