// memory/term_analyzer.h — the words and stems of a text, as the full-text index sees them.
//
// Uses the very tokenizers of the FTS5 table (`porter unicode61`), taken from
// the connection through the fts5_api, so that a query, a similarity score and
// the index always agree on what a word is: unicode61 splits on anything that is
// not a letter or digit, folds case (also outside ASCII) and removes diacritics;
// porter reduces a word to its Porter (1980) stem ("crashes", "crashed",
// "crashing" -> "crash"; "dates" -> "date").
//
// Stop words (a fixed English list of 130 function words: "the", "in", "when",
// ...) are dropped where relevance is computed, unless a text has nothing else.
//
// An analyzer borrows the connection's tokenizers: the SqliteDb must outlive it.
// Not thread-safe (one per connection, like the connection itself).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"
#include "sqlite/sqlite_db.h"

namespace orch::memory {

class TermAnalyzer {
 public:
  static Expected<std::unique_ptr<TermAnalyzer>> create(SqliteDb& db);
  ~TermAnalyzer();
  TermAnalyzer(const TermAnalyzer&) = delete;
  TermAnalyzer& operator=(const TermAnalyzer&) = delete;

  // The words (unicode61 tokens), in order, repeats kept. Only the first 1 MiB
  // of `text` is read.
  std::vector<std::string> words(std::string_view text) const;

  // The set of Porter stems of the words that are not stop words; when all are
  // stop words, of all the words. What similarity compares.
  std::set<std::string> stems(std::string_view text) const;

  // An FTS5 MATCH expression for `text`: its distinct words (stop words dropped,
  // unless nothing else is left; at most 64) each as a quoted string, joined
  // with OR — "fix" OR "date" OR "crash". User text never reaches FTS5's query
  // syntax: quotes, parentheses, `*`, `:`, `^`, NEAR, AND/NOT are separators or
  // plain words here. "" when the text has no word at all.
  std::string match_expression(std::string_view text) const;

  static bool is_stop_word(std::string_view word);

 private:
  struct Tokenizer;
  TermAnalyzer() = default;
  std::unique_ptr<Tokenizer> words_;  // unicode61
  std::unique_ptr<Tokenizer> stems_;  // porter over unicode61
};

}  // namespace orch::memory
