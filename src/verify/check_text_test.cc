#include "verify/check_text.h"

#include <gtest/gtest.h>

namespace orch::detail {
namespace {

TEST(CheckText, OneLineEscapesControlBytes) {
  EXPECT_EQ(one_line("a\nb\tc\r\x01"), "a\\nb\\tc\\r\\x01");
  EXPECT_EQ(one_line("plain"), "plain");
}

TEST(CheckText, OneLineKeepsValidUtf8AndEscapesInvalid) {
  EXPECT_EQ(one_line("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(one_line("\xe2\x9c\x93 ok"), "\xe2\x9c\x93 ok");
  EXPECT_EQ(one_line("\xff\xc3"), "\\xff\\xc3");
  EXPECT_EQ(one_line("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate is not UTF-8
  EXPECT_EQ(one_line("\xc0\xaf"), "\\xc0\\xaf");           // overlong
}

TEST(CheckText, OneLineCuts) {
  EXPECT_EQ(one_line(std::string(100, 'a')), std::string(80, 'a') + "...");
  EXPECT_EQ(one_line(std::string(80, 'a')), std::string(80, 'a'));
  EXPECT_EQ(one_line("abcdef", 3), "abc...");
}

TEST(CheckText, InQuotesAndByteCount) {
  EXPECT_EQ(in_quotes("PASS"), "'PASS'");
  EXPECT_EQ(byte_count(0), "0 bytes");
  EXPECT_EQ(byte_count(1), "1 byte");
  EXPECT_EQ(byte_count(212), "212 bytes");
  EXPECT_EQ(byte_count(10 * 1024 * 1024), "10.0 MiB (10485760 bytes)");
}

}  // namespace
}  // namespace orch::detail
