#include "verify/check_text.h"

#include <fmt/format.h>

#include <algorithm>

namespace orch::detail {

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if there is none
// (reasons are stored as JSON, which must be valid UTF-8).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  std::size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    len = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    len = 3;
    if (lead == 0xe0) lo = 0xa0;
    if (lead == 0xed) hi = 0x9f;  // no UTF-16 surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    len = 4;
    if (lead == 0xf0) lo = 0x90;
    if (lead == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return len;
}

}  // namespace

std::string one_line(std::string_view text, std::size_t limit) {
  std::string out;
  out.reserve(std::min(text.size(), limit) + 8);
  std::size_t i = 0;
  while (i < text.size() && out.size() < limit) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      std::size_t len = utf8_length(text, i);
      if (len == 0) {
        out += fmt::format("\\x{:02x}", c);
        ++i;
      } else {
        out.append(text.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  if (i < text.size()) out += "...";
  return out;
}

std::string in_quotes(std::string_view text) { return "'" + one_line(text) + "'"; }

std::string byte_count(std::size_t n) {
  if (n == 1) return "1 byte";
  if (n < 1024 * 1024) return fmt::format("{} bytes", n);
  return fmt::format("{:.1f} MiB ({} bytes)", static_cast<double>(n) / (1024.0 * 1024.0), n);
}

}  // namespace orch::detail
