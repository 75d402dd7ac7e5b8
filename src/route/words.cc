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

std::vector<std::vector<KeywordHit>> find_keywords_claiming(
    const std::vector<std::string>& words, const std::vector<const std::vector<Keyword>*>& lists) {
  std::vector<std::vector<KeywordHit>> hits(lists.size());
  std::vector<bool> claimed(words.size(), false);
  // The phrases, longest first; a stable sort keeps list and table order.
  struct Phrase {
    std::size_t list;
    const Keyword* keyword;
  };
  std::vector<Phrase> phrases;
  for (std::size_t l = 0; l < lists.size(); ++l)
    for (const Keyword& k : *lists[l])
      if (k.phrase.size() > 1) phrases.push_back({l, &k});
  std::stable_sort(phrases.begin(), phrases.end(), [](const Phrase& a, const Phrase& b) {
    return a.keyword->phrase.size() > b.keyword->phrase.size();
  });
  // found[list][i]: whether the list's i-th keyword matched.
  std::vector<std::vector<bool>> found(lists.size());
  for (std::size_t l = 0; l < lists.size(); ++l) found[l].assign(lists[l]->size(), false);
  for (const Phrase& p : phrases) {
    const auto& ph = p.keyword->phrase;
    for (std::size_t at = 0; at + ph.size() <= words.size(); ++at) {
      bool fits = true;
      for (std::size_t k = 0; k < ph.size() && fits; ++k) fits = !claimed[at + k] && words[at + k] == ph[k];
      if (!fits) continue;
      for (std::size_t k = 0; k < ph.size(); ++k) claimed[at + k] = true;
      found[p.list][static_cast<std::size_t>(p.keyword - lists[p.list]->data())] = true;
      break;
    }
  }
  std::vector<std::string> unclaimed;
  for (std::size_t i = 0; i < words.size(); ++i)
    if (!claimed[i]) unclaimed.push_back(words[i]);
  for (std::size_t l = 0; l < lists.size(); ++l) {
    const std::vector<Keyword>& keywords = *lists[l];
    for (std::size_t i = 0; i < keywords.size(); ++i) {
      const Keyword& k = keywords[i];
      if (k.phrase.size() > 1) {
        if (found[l][i]) hits[l].push_back({&k, k.text});
      } else if (auto matched = find_keyword(unclaimed, k)) {
        hits[l].push_back({&k, std::move(*matched)});
      }
    }
  }
  return hits;
}

}  // namespace orch::route
