// route/words.h — a request cut into whole words, and keywords matched against them.
//
// Every table of the route layer (intents, complexity words, request types,
// domains) matches a request the same way: the text is lower-cased (ASCII) and cut
// at every character that is not a letter or a digit, and a keyword matches whole
// words only. So "circuit" is never the keyword "ci", "capital" never "api",
// "normal" never "mal", "improve" never "pr" and "latest" never "test". Bytes of
// UTF-8 sequences count as letters ("réparer" is one word), except the general
// punctuation block (U+2000–U+207F: curly quotes, dashes, …) and the no-break space,
// which separate words like ASCII punctuation does.
//
// A keyword is a word (with the other forms it stands for), a stem with the forms
// it stands for, or a phrase of words that must follow one another. Nothing here
// guesses forms: "fixing" matches only a keyword that declares it.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::route {

// The words of `text`, lower-cased, in order.
std::vector<std::string> words_of(std::string_view text);

// Unicode code points of UTF-8 text (the bytes that do not continue a sequence).
std::int64_t count_code_points(std::string_view text);

struct Keyword {
  std::string text;                 // as the table writes it: "fix", "hacker news", "optimi" for a stem
  std::vector<std::string> phrase;  // the word, or the words of a phrase; empty for a stem entry
  std::string stem;                 // a stem entry: only `forms` match, each starts with the stem
  std::vector<std::string> forms;   // other single words that count as this keyword
  double weight = 1.0;
  int line = 0;  // where the table declares it
};

// The first place `keyword` occurs in `words`, as the request wrote it ("fixing",
// "hacker news"); nullopt when it does not occur.
std::optional<std::string> find_keyword(const std::vector<std::string>& words, const Keyword& keyword);

// One keyword that occurs in the request.
struct KeywordHit {
  const Keyword* keyword = nullptr;
  std::string matched;  // the request's word(s)
};

// Each keyword of `keywords` found in `words`, once, in the table's order.
std::vector<KeywordHit> find_keywords(const std::vector<std::string>& words,
                                      const std::vector<Keyword>& keywords);

// The hits of several keyword lists competing for the same request (the intents),
// one list of hits per list, each in its table's order. A word of the request
// counts for one keyword only: the phrases that occur claim their words first —
// longer phrases before shorter, then in list and table order — and a keyword
// scores only on words no phrase claimed. So "memory leak" claims both words, and
// a single-word keyword `leak` (of any list) does not score on them; a `leak`
// elsewhere in the request still does.
std::vector<std::vector<KeywordHit>> find_keywords_claiming(
    const std::vector<std::string>& words, const std::vector<const std::vector<Keyword>*>& lists);

}  // namespace orch::route
