// verify/check_text.h — how check reasons quote values (verify-internal).
//
// A reason is one line a person reads in a report, so values quoted in it are
// cut to a readable length and have control bytes escaped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace orch::detail {

// Longest quoted value in a reason, in bytes (before "...").
inline constexpr std::size_t kQuoteLimit = 80;

// `text` on one line and valid UTF-8: control bytes as \n, \t, \xNN, invalid UTF-8
// bytes as \xNN; cut to about `limit` bytes, with "..." when cut.
std::string one_line(std::string_view text, std::size_t limit = kQuoteLimit);

// one_line(text) in single quotes: 'PASS'.
std::string in_quotes(std::string_view text);

// "212 bytes", "1 byte", "10.0 MiB (10485760 bytes)".
std::string byte_count(std::size_t n);

}  // namespace orch::detail
