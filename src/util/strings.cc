#include "util/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace orch {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rolling rows of the classic DP table; the extra row is for transpositions.
  std::vector<std::size_t> two_back(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], two_back[j - 2] + 1);
    }
    std::swap(two_back, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    if (candidate == word) continue;
    // Lengths alone bound the distance from below; skip the DP when it cannot win.
    std::size_t length_gap =
        candidate.size() > word.size() ? candidate.size() - word.size() : word.size() - candidate.size();
    if (length_gap >= best_distance) continue;
    std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto match = closest_match(word, candidates);
  if (!match) return "";
  return fmt::format(" (did you mean '{}'?)", *match);
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!alpha(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(), [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  auto begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  auto end = s.find_last_not_of(kSpace);
  return s.substr(begin, end - begin + 1);
}

std::string quote_for_message(std::string_view s, std::size_t max_len) {
  const bool cut = s.size() > max_len;
  std::string out = terminal_text(cut ? utf8_prefix(std::string(s), max_len) : s);
  if (cut) out += "...";
  return out;
}

std::string terminal_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else if (u == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[++i]));
    } else {
      out += c;
    }
  }
  return out;
}

std::string terminal_column(std::string_view s, std::size_t width) {
  // Each character of `s` as terminal_text shows it, with the columns it takes:
  // an escape its length, a UTF-8 character one (wide characters are not told apart).
  std::vector<std::pair<std::string, std::size_t>> pieces;
  std::size_t total = 0;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0xc0) {
      while (i + len < s.size() && len < 4 && (static_cast<unsigned char>(s[i + len]) & 0xc0) == 0x80) ++len;
    }
    std::string shown = terminal_text(s.substr(i, len));
    const std::size_t cols = shown.size() > len ? shown.size() : 1;  // escaped: as long as it is written
    total += cols;
    pieces.emplace_back(std::move(shown), cols);
    i += len;
  }
  std::string out;
  std::size_t used = 0;
  if (total <= width) {
    for (const auto& [text, cols] : pieces) out += text;
    used = total;
  } else {
    const std::size_t room = width > 3 ? width - 3 : 0;
    for (const auto& [text, cols] : pieces) {
      if (used + cols > room) break;
      out += text;
      used += cols;
    }
    out += std::string_view("...").substr(0, std::min<std::size_t>(3, width));
    used += std::min<std::size_t>(3, width);
  }
  out.append(width > used ? width - used : 0, ' ');
  return out;
}

std::string terminal_lines(std::string_view s) {
  std::string out;
  for (std::size_t start = 0; start <= s.size();) {
    const std::size_t end = std::min(s.find('\n', start), s.size());
    out += terminal_text(s.substr(start, end - start));
    if (end == s.size()) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

std::string utf8_prefix(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end);
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string shell_quote(std::string_view s) {
  auto safe = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  };
  if (!s.empty() && std::all_of(s.begin(), s.end(), safe)) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string nul_escaped(std::string s) {
  for (std::size_t at = s.find('\0'); at != std::string::npos; at = s.find('\0', at + 2))
    s.replace(at, 1, "\\0");
  return s;
}

std::string dollars(double usd) {
  int decimals = 4;
  for (double scaled = std::fabs(usd) * 1e4; scaled > 0 && scaled < 10 && decimals < 15; scaled *= 10)
    ++decimals;
  return fmt::format("${:.{}f}", usd, decimals);
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string name_slug(std::string_view name, std::string_view fallback) {
  std::string out;
  for (char ch : name) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (std::isalnum(u))
      out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-')
      out += '-';
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? std::string(fallback) : out;
}

}  // namespace orch
