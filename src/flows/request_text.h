// flows/request_text.h — a request in natural language, cut into words and boundaries.
//
// What TriggerJob and template matching read: lower-cased words (ASCII letters,
// digits, '_', apostrophes, and '-', '.', '/' between two word characters, so
// "for-each", "v1.2.3", "src/main.cc" and "don't" are one word each; bytes of
// UTF-8 sequences count as letters) and the punctuation that separates clauses.
// Code is never read as words: a ``` fenced block and an `inline code` span each
// become one Opaque token, and so does a "double-quoted" (or “curly-quoted”) span
// when `opaque_quotes` is set. Matching is always on whole words: "rewrite" is
// not "write", "circuit" is not "ci". Pure functions, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace orch::flows {

struct RequestToken {
  enum class Kind {
    Word,       // text: the word, lower-cased
    Comma,      // ,
    Semicolon,  // ;
    Colon,      // :
    Stop,       // . ! ? at the end of a sentence
    Newline,
    Opaque,     // code, or a quoted span: never a word, never a verb
  };
  Kind kind = Kind::Word;
  std::string text;
};

std::vector<RequestToken> tokenize_request(std::string_view text, bool opaque_quotes);

// The words, in order. With `keep_boundaries`, each punctuation or code token in
// between is kept as an empty string, so that a phrase never matches across a
// comma or a sentence end ("say, hello" does not contain "say hello").
std::vector<std::string> request_words(std::string_view text, bool keep_boundaries = false);

// True when `phrase` (words separated by spaces, lower case) occurs as
// consecutive whole words in `words`.
bool contains_phrase(const std::vector<std::string>& words, std::string_view phrase);

// `text` with every ``` fenced block removed (its lines kept empty, so line
// numbers still count). For reading list markers at line starts.
std::string without_fenced_code(std::string_view text);

}  // namespace orch::flows
