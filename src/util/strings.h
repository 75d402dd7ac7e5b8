// util/strings.h — small string helpers with no orch concepts in them.
//
// edit_distance and closest_match power the "did you mean ...?" hints of plan
// diagnostics; the rest are the character-class tests and trims that several
// parsers share. All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orch {

// Optimal-string-alignment distance: insertions, deletions, substitutions and
// transpositions of adjacent characters each cost 1 ("dpes" -> "deps" is 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if it is close enough to be a plausible typo:
// distance <= max(1, len/3) (so "dep" -> "deps", "fnd" -> "find", but not "x" -> "deps").
// A candidate equal to `word` is never returned. Ties go to the earliest candidate.
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for the closest_match X, or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// [A-Za-z_][A-Za-z0-9_]* — a C identifier, also a portable environment variable name.
bool is_identifier(std::string_view s);

std::string_view trim(std::string_view s);

// `s` with control characters escaped (\n, \t, \xNN) and cut to `max_len` bytes
// ("..." appended), for quoting user text inside one-line messages.
std::string quote_for_message(std::string_view s, std::size_t max_len = 60);

// `s` safe to print to a terminal: C0 controls and DEL escaped as in
// quote_for_message, and the C1 controls (U+0080-U+009F, which some terminals
// obey as escapes) as \u00NN. For text a plan or a process wrote that orch shows
// in its tables and lines: a run's name, a reason, a path.
std::string terminal_text(std::string_view s);
// terminal_text of `s` in a table column `width` characters wide: padded with
// spaces, or cut to fit with "..." at the end, never inside an escape or a UTF-8
// character.
std::string terminal_column(std::string_view s, std::size_t width);
// terminal_text of each line of `s`, the line breaks kept.
std::string terminal_lines(std::string_view s);

// `s` as one word for /bin/sh, for showing a command a human may copy: left bare
// when it holds only safe characters, else in single quotes (' written as '\'').
std::string shell_quote(std::string_view s);

std::string join(const std::vector<std::string>& parts, std::string_view separator);

// At most `max` bytes of `s`, cut back to a UTF-8 character boundary.
std::string utf8_prefix(const std::string& s, std::size_t max);

// `s` with each NUL byte written as the two characters \0: for text that goes
// into a process's arguments or environment, which end at a NUL.
std::string nul_escaped(std::string s);

// A sum of US dollars as orch prints it: "$1.2500", four decimals, or as many more
// (up to 15) as a small sum needs for two significant digits ("$0.000030"), so
// that a sum spent is never shown as "$0.0000" next to a limit of $0.
std::string dollars(double usd);

// `s` with ASCII letters in lower case (other bytes as they are).
std::string ascii_lower(std::string_view s);

// A name as part of an id: letters and digits in lower case, every other run of
// bytes one '-', none at either end, at most 40 bytes; `fallback` when nothing
// is left ("My Review!" -> "my-review"). For the ids of reviews and cycle runs.
std::string name_slug(std::string_view name, std::string_view fallback);

}  // namespace orch
