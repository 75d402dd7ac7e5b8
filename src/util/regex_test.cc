#include "util/regex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace orch {
namespace {

TEST(Regex, MatchesAnywhereInSubject) {
  auto re = Regex::compile("PASS(ED)?");
  ASSERT_TRUE(re) << re.error().message;
  EXPECT_EQ(re->pattern(), "PASS(ED)?");
  EXPECT_TRUE(re->search("tests: 12 PASSED").value());
  EXPECT_TRUE(re->search("PASS").value());
  EXPECT_FALSE(re->search("FAIL").value());
  EXPECT_FALSE(re->search("").value());
}

TEST(Regex, EmptyPatternMatchesEverything) {
  auto re = Regex::compile("");
  ASSERT_TRUE(re);
  EXPECT_TRUE(re->search("").value());
  EXPECT_TRUE(re->search(std::string_view{}).value());
}

TEST(Regex, AnchorsAndMultilineFlags) {
  auto re = Regex::compile("^ok$");
  ASSERT_TRUE(re);
  EXPECT_TRUE(re->search("ok").value());
  EXPECT_FALSE(re->search("a\nok\nb").value());
  auto multi = Regex::compile("(?m)^ok$");
  ASSERT_TRUE(multi);
  EXPECT_TRUE(multi->search("a\nok\nb").value());
}

TEST(Regex, CompileErrorNamesPatternMessageAndOffset) {
  auto re = Regex::compile("(");
  ASSERT_FALSE(re);
  EXPECT_EQ(re.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(re.error().message, "bad regex '(': missing closing parenthesis at offset 1");
  auto bad = Regex::compile("a{2,1}");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad regex 'a{2,1}'"), std::string::npos) << bad.error().message;
}

TEST(Regex, BytesNotUtf8) {
  // Invalid UTF-8 in the subject must not be an error: step output is arbitrary bytes.
  std::string subject = "head \xff\xfe tail";
  auto re = Regex::compile("\xff\xfe");
  ASSERT_TRUE(re);
  EXPECT_TRUE(re->search(subject).value());
  auto dot = Regex::compile("head ..  ?tail");
  ASSERT_TRUE(dot);
  EXPECT_TRUE(dot->search(subject).value());
  // UTF mode cannot be switched on from inside the pattern.
  EXPECT_FALSE(Regex::compile("(*UTF)x"));
}

TEST(Regex, NulBytesInSubjectAndPattern) {
  std::string subject("a\0b", 3);
  auto re = Regex::compile(std::string_view("a\0b", 3));
  ASSERT_TRUE(re);
  EXPECT_TRUE(re->search(subject).value());
}

TEST(Regex, BigSubject) {
  std::string big(10 * 1024 * 1024, 'x');
  big += "needle 42";
  auto re = Regex::compile(R"(needle \d+)");
  ASSERT_TRUE(re);
  EXPECT_TRUE(re->search(big).value());
  auto miss = Regex::compile(R"(needle \d{3})");
  ASSERT_TRUE(miss);
  EXPECT_FALSE(miss->search(big).value());
}

TEST(Regex, RepetitionOverBigSubjectDoesNotHitLimits) {
  // A group repeated once per line over a big output is an ordinary pattern;
  // it must not fail for lack of stack.
  std::string big;
  for (int i = 0; i < 100000; ++i) big += "line ok\n";
  big += "done";
  auto re = Regex::compile(R"(^(?:line (?:ok|bad)\n)*done$)");
  ASSERT_TRUE(re);
  auto r = re->search(big);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(*r);
}

TEST(Regex, CatastrophicBacktrackingIsAnErrorNotAHang) {
  std::string subject(100000, 'a');
  subject += 'b';
  auto re = Regex::compile("(a+)+$");
  ASSERT_TRUE(re);
  auto start = std::chrono::steady_clock::now();
  auto r = re->search(subject);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(r.error().message.find("regex '(a+)+$' gave up on 100001 bytes"), std::string::npos)
      << r.error().message;
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(Regex, CopiesShareCodeAndSearchFromThreads) {
  auto re = Regex::compile(R"(\bid=(\d+)\b)");
  ASSERT_TRUE(re);
  Regex copy = *re;
  std::vector<std::thread> threads;
  std::vector<int> hits(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        if (copy.search("x id=" + std::to_string(i) + " y").value_or(false)) ++hits[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int h : hits) EXPECT_EQ(h, 1000);
}

TEST(Regex, MovedRegexKeepsWorking) {
  auto re = Regex::compile("a");
  ASSERT_TRUE(re);
  Regex moved = std::move(*re);
  EXPECT_EQ(moved.pattern(), "a");
  EXPECT_TRUE(moved.search("a").value());
}

}  // namespace
}  // namespace orch
