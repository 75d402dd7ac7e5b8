#include "flows/request_text.h"

#include <cctype>

namespace orch::flows {

namespace {

bool is_word_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) != 0 || c == '_' || c == '\'' || u >= 0x80;
}

// Characters that join two word characters into one word: "for-each", "v1.2", "a/b".
bool is_joiner(char c) { return c == '-' || c == '.' || c == '/'; }

bool starts_with(std::string_view text, std::size_t i, std::string_view what) {
  return text.compare(i, what.size(), what) == 0;
}

constexpr std::string_view kOpenCurly = "\xE2\x80\x9C";   // “
constexpr std::string_view kCloseCurly = "\xE2\x80\x9D";  // ”

}  // namespace

std::vector<RequestToken> tokenize_request(std::string_view text, bool opaque_quotes) {
  using Kind = RequestToken::Kind;
  std::vector<RequestToken> out;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto opaque_until = [&](std::size_t from, std::string_view close) {
    std::size_t end = text.find(close, from);
    out.push_back({Kind::Opaque, ""});
    return end == std::string_view::npos ? n : end + close.size();
  };
  while (i < n) {
    const char c = text[i];
    if (starts_with(text, i, "```")) {
      i = opaque_until(i + 3, "```");
    } else if (c == '`') {
      // An unmatched backtick is only a separator.
      if (text.find('`', i + 1) == std::string_view::npos) {
        ++i;
      } else {
        i = opaque_until(i + 1, "`");
      }
    } else if (opaque_quotes && c == '"' && text.find('"', i + 1) != std::string_view::npos) {
      i = opaque_until(i + 1, "\"");
    } else if (opaque_quotes && starts_with(text, i, kOpenCurly) &&
               text.find(kCloseCurly, i + kOpenCurly.size()) != std::string_view::npos) {
      i = opaque_until(i + kOpenCurly.size(), kCloseCurly);
    } else if (is_word_char(c) && c != '\'') {
      std::string word;
      while (i < n) {
        if (is_word_char(text[i])) {
          // A closing curly quote is three bytes >= 0x80: not part of the word.
          if (starts_with(text, i, kCloseCurly) || starts_with(text, i, kOpenCurly)) break;
          word += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
          ++i;
        } else if (is_joiner(text[i]) && i + 1 < n && is_word_char(text[i + 1]) && text[i + 1] != '\'') {
          word += text[i];
          ++i;
        } else {
          break;
        }
      }
      while (!word.empty() && word.back() == '\'') word.pop_back();  // "tests'" -> "tests"
      out.push_back({Kind::Word, std::move(word)});
    } else if (c == ',') {
      out.push_back({Kind::Comma, ","});
      ++i;
    } else if (c == ';') {
      out.push_back({Kind::Semicolon, ";"});
      ++i;
    } else if (c == ':') {
      out.push_back({Kind::Colon, ":"});
      ++i;
    } else if (c == '.' || c == '!' || c == '?') {
      out.push_back({Kind::Stop, std::string(1, c)});
      ++i;
    } else if (c == '\n') {
      out.push_back({Kind::Newline, "\n"});
      ++i;
    } else {
      ++i;  // spaces, brackets, other punctuation: separators
    }
  }
  return out;
}

std::vector<std::string> request_words(std::string_view text, bool keep_boundaries) {
  std::vector<std::string> words;
  for (auto& t : tokenize_request(text, false)) {
    if (t.kind == RequestToken::Kind::Word) {
      words.push_back(std::move(t.text));
    } else if (keep_boundaries && (words.empty() || !words.back().empty())) {
      words.emplace_back();
    }
  }
  return words;
}

bool contains_phrase(const std::vector<std::string>& words, std::string_view phrase) {
  std::vector<std::string> want = request_words(phrase);
  if (want.empty() || want.size() > words.size()) return false;
  for (std::size_t i = 0; i + want.size() <= words.size(); ++i) {
    bool all = true;
    for (std::size_t k = 0; k < want.size() && all; ++k) all = words[i + k] == want[k];
    if (all) return true;
  }
  return false;
}

std::string without_fenced_code(std::string_view text) {
  std::string out;
  bool in_fence = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    std::size_t first = line.find_first_not_of(" \t");
    const bool fence = first != std::string_view::npos && line.substr(first).starts_with("```");
    if (fence) {
      in_fence = !in_fence;
    } else if (!in_fence) {
      out += line;
    }
    if (end == std::string_view::npos) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

}  // namespace orch::flows
