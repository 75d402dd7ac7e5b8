#include "util/strings.h"

#include <gtest/gtest.h>

namespace orch {
namespace {

TEST(EditDistance, CountsEditsAndTranspositions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("deps", "deps"), 0u);
  EXPECT_EQ(edit_distance("dep", "deps"), 1u);
  EXPECT_EQ(edit_distance("dpes", "deps"), 1u);  // one transposition
  EXPECT_EQ(edit_distance("fnd", "find"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("shel", "shell"), 1u);
}

TEST(ClosestMatch, SuggestsOnlyPlausibleTypos) {
  std::vector<std::string> keys{"id", "goal", "deps", "executor", "run", "sh", "timeout", "attempts"};
  EXPECT_EQ(closest_match("dep", keys), "deps");
  EXPECT_EQ(closest_match("atempts", keys), "attempts");
  EXPECT_EQ(closest_match("timout", keys), "timeout");
  EXPECT_EQ(closest_match("exector", keys), "executor");
  EXPECT_FALSE(closest_match("zzzzzz", keys));
  EXPECT_FALSE(closest_match("deps", keys)) << "an exact match is not a suggestion";
  EXPECT_FALSE(closest_match("x", std::vector<std::string>{"deps"}));
  EXPECT_FALSE(closest_match("a", std::vector<std::string>{}));
}

TEST(ClosestMatch, TiesGoToTheFirstCandidate) {
  EXPECT_EQ(closest_match("ab", {"abc", "abd"}), "abc");
}

TEST(DidYouMean, FormatsTheHint) {
  EXPECT_EQ(did_you_mean("fnd", {"find", "fix"}), " (did you mean 'find'?)");
  EXPECT_EQ(did_you_mean("qqqqq", {"find"}), "");
}

TEST(IsIdentifier, CIdentifiers) {
  EXPECT_TRUE(is_identifier("a"));
  EXPECT_TRUE(is_identifier("_x9"));
  EXPECT_TRUE(is_identifier("PATH"));
  EXPECT_FALSE(is_identifier(""));
  EXPECT_FALSE(is_identifier("9a"));
  EXPECT_FALSE(is_identifier("a-b"));
  EXPECT_FALSE(is_identifier("a.b"));
  EXPECT_FALSE(is_identifier("a b"));
}

TEST(Trim, Whitespace) {
  EXPECT_EQ(trim("  a b \n"), "a b");
  EXPECT_EQ(trim(" \t\n"), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("x"), "x");
}

TEST(QuoteForMessage, EscapesAndCuts) {
  EXPECT_EQ(quote_for_message("a\nb\tc"), "a\\nb\\tc");
  EXPECT_EQ(quote_for_message(std::string("\x01", 1)), "\\x01");
  EXPECT_EQ(quote_for_message("abcdef", 3), "abc...");
  EXPECT_EQ(quote_for_message("\x1b[31mred\xc2\x9b", 60), "\\x1b[31mred\\u009b");
}

TEST(Strings, TerminalTextEscapesEveryControlAndKeepsTheRest) {
  EXPECT_EQ(terminal_text("evil\x1b[2J\x07\x7f"), "evil\\x1b[2J\\x07\\x7f");
  EXPECT_EQ(terminal_text("a\nb\tc\rd"), "a\\nb\\tc\\x0dd");
  // C1 controls (CSI as U+009B), which some terminals obey, are escaped; other
  // UTF-8 (é, U+00A0, emoji) passes as is.
  EXPECT_EQ(terminal_text("x\xc2\x9b"
                          "2Jy"),
            "x\\u009b2Jy");
  EXPECT_EQ(terminal_text("caf\xc3\xa9 \xc2\xa0 \xf0\x9f\x99\x82"), "caf\xc3\xa9 \xc2\xa0 \xf0\x9f\x99\x82");
  EXPECT_EQ(terminal_text(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(terminal_text("\xc2"), "\xc2") << "a lone lead byte at the end is left as it is";
}

TEST(Join, Separator) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "b", "c"}, " -> "), "a -> b -> c");
}

TEST(ShellQuote, LeavesSafeWordsBareAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("make"), "make");
  EXPECT_EQ(shell_quote("--out=a/b.txt"), "--out=a/b.txt");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("two words"), "'two words'");
  EXPECT_EQ(shell_quote("it's $HOME"), "'it'\\''s $HOME'");
}

TEST(TerminalColumn, PadsOrCutsWholeCharactersAndEscapes) {
  EXPECT_EQ(terminal_column("abc", 6), "abc   ");
  EXPECT_EQ(terminal_column("abcdefgh", 6), "abc...");
  EXPECT_EQ(terminal_column("abcdef", 6), "abcdef");
  EXPECT_EQ(terminal_column("h\xc3\xa9llo w\xc3\xb6rld", 8), "h\xc3\xa9llo...");  // é is one column
  EXPECT_EQ(terminal_column("\xc3\xa9\xc3\xa9", 4), "\xc3\xa9\xc3\xa9  ");
  EXPECT_EQ(terminal_column("ab\x1b[31mred", 9), "ab\\x1b...");
  EXPECT_EQ(terminal_column("ab\x1b[31mred", 8), "ab...   ");  // the escape whole, or not at all
  EXPECT_EQ(terminal_column("a\x1b"
                            "bcdefgh",
                            6),
            "a...  ");
  EXPECT_EQ(terminal_column("", 3), "   ");
}

TEST(QuoteForMessage, CutsAtACharacterBoundary) {
  EXPECT_EQ(quote_for_message("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9...");
}

TEST(Dollars, FourDecimalsOrTwoSignificantDigits) {
  EXPECT_EQ(dollars(0), "$0.0000");
  EXPECT_EQ(dollars(1.25), "$1.2500");
  EXPECT_EQ(dollars(0.0123), "$0.0123");
  EXPECT_EQ(dollars(0.001), "$0.0010");
  EXPECT_EQ(dollars(0.00003), "$0.000030");
  EXPECT_EQ(dollars(0.0000012345), "$0.0000012");
  EXPECT_EQ(dollars(1e-300), "$0.000000000000000");
}

TEST(NulEscaped, WritesEachNulAsBackslashZero) {
  EXPECT_EQ(nul_escaped(std::string("a\0b\0\0", 5)), "a\\0b\\0\\0");
  EXPECT_EQ(nul_escaped("plain"), "plain");
  EXPECT_EQ(nul_escaped(""), "");
}

}  // namespace
}  // namespace orch

namespace orch {
namespace {

TEST(NameSlug, KeepsLettersAndDigitsAndFoldsTheRestIntoOneDash) {
  EXPECT_EQ(name_slug("My Review!", "x"), "my-review");
  EXPECT_EQ(name_slug("--a__b--", "x"), "a-b");
  EXPECT_EQ(name_slug("", "cycle"), "cycle");
  EXPECT_EQ(name_slug("***", "cycle"), "cycle");
  EXPECT_EQ(name_slug(std::string(100, 'a'), "x"), std::string(40, 'a'));
}

}  // namespace
}  // namespace orch
