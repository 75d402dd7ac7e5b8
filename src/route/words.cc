#include "route/words.h"

#include <algorithm>

namespace orch::route {

namespace {

bool is_ascii_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Bytes of a UTF-8 sequence that separates words, at text[i]: 0 when none.
std::size_t separator_length(std::string_view text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  const auto next = [&](std::size_t k) {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
  };
  if (c == 0xC2 && next(1) == 0xA0) return 2;                       // U+00A0 no-break space
  if (c == 0xE2 && (next(1) == 0x80 || next(1) == 0x81)) return 3;  // U+2000–U+207F punctuation
  return 0;
}

}  // namespace

std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      if (std::size_t n = separator_length(text, i); n > 0) {
        flush();
        i += n;
        continue;
      }
      word += static_cast<char>(c);
    } else if (is_ascii_alnum(c)) {
      word += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    } else {
      flush();
    }
    ++i;
  }
  flush();
  return words;
}

std::int64_t count_code_points(std::string_view text) {
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

std::optional<std::string> find_keyword(const std::vector<std::string>& words, const Keyword& keyword) {
  if (keyword.phrase.size() > 1) {
    const auto& p = keyword.phrase;
    auto it = std::search(words.begin(), words.end(), p.begin(), p.end());
    if (it == words.end()) return std::nullopt;
    return keyword.text;
  }
  for (const std::string& w : words) {
    if (!keyword.phrase.empty() && w == keyword.phrase.front()) return w;
    if (std::find(keyword.forms.begin(), keyword.forms.end(), w) != keyword.forms.end()) return w;
  }
  return std::nullopt;
}

std::vector<KeywordHit> find_keywords(const std::vector<std::string>& words,
                                      const std::vector<Keyword>& keywords) {
  std::vector<KeywordHit> hits;
  for (const Keyword& k : keywords)
    if (auto matched = find_keyword(words, k)) hits.push_back({&k, std::move(*matched)});
  return hits;
}

}  // namespace orch::route
