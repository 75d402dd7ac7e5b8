#include "orch/postcondition.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace orch {
namespace {

AttemptOutcome exited(int code, std::string result = "") {
  AttemptOutcome o;
  o.ending = AttemptEnding::Exited;
  o.exit_code = code;
  o.result = std::move(result);
  return o;
}

Postcondition post_of(PostKind kind) {
  Postcondition p;
  p.kind = kind;
  return p;
}

CheckResult check(const Postcondition& post, const AttemptOutcome& outcome) {
  CheckContext ctx;
  ctx.outcome = &outcome;
  return evaluate_post(post, ctx);
}

TEST(EvaluatePost, NoneAlwaysHolds) {
  CheckContext ctx;  // no outcome needed
  auto r = evaluate_post(post_of(PostKind::None), ctx);
  EXPECT_TRUE(r.held);
  EXPECT_EQ(r.kind, PostKind::None);
  EXPECT_EQ(r.reason, "none: always holds");
}

TEST(EvaluatePost, ShellZeroIsTheEnginesJob) {
  auto r = check(post_of(PostKind::ShellZero), exited(0));
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.kind, PostKind::ShellZero);
  EXPECT_EQ(r.reason, "shell_zero must be run by the engine");
}

TEST(ExitZero, HeldOnCleanExit) {
  auto r = check(post_of(PostKind::ExitZero), exited(0));
  EXPECT_TRUE(r.held);
  EXPECT_EQ(r.kind, PostKind::ExitZero);
  EXPECT_EQ(r.reason, "exit_zero: exited with code 0");
}

// Seed 004: never mask the error. A failed exit's reason ends with what the
// step printed last, on one line and bounded.
TEST(ExitZero, AFailedExitCarriesTheEndOfWhatTheStepPrinted) {
  auto post = post_of(PostKind::ExitZero);
  AttemptOutcome o = exited(1);
  o.output_tail = "Mock error\n";
  EXPECT_EQ(check(post, o).reason, "exit_zero: exited with code 1; output: Mock error");
  o.output_tail = "step 1\nTraceback (most recent call last):\nValueError: bad day\n\n";
  EXPECT_EQ(check(post, o).reason,
            "exit_zero: exited with code 1; output: step 1\\nTraceback (most recent call "
            "last):\\nValueError: bad day");
  o.output_tail = std::string(1000, 'x') + "\nthe last line";
  const std::string long_reason = check(post, o).reason;
  EXPECT_EQ(long_reason, "exit_zero: exited with code 1; output: the last line") << "cut at a line's start";
  o.output_tail = std::string(1000, 'y');
  EXPECT_LE(check(post, o).reason.size(), 400u);
  AttemptOutcome sig;
  sig.ending = AttemptEnding::Signaled;
  sig.signal = 6;
  sig.output_tail = "assertion failed: x > 0\n";
  EXPECT_EQ(check(post, sig).reason,
            "exit_zero: killed by signal 6 (SIGABRT); output: assertion failed: x > 0");
  AttemptOutcome broke = exited(1);
  broke.ending = AttemptEnding::Error;
  broke.message = "exited with code 1, and tool 'fail' run: it printed nothing; its contract wants JSON";
  broke.output_tail = "fail.sh: the target file is locked\n";
  EXPECT_EQ(
      check(post, broke).reason,
      "exit_zero: exited with code 1, and tool 'fail' run: it printed nothing; its contract wants JSON; "
      "output: fail.sh: the target file is locked");
}

TEST(ExitZero, FailsOnEveryOtherEnding) {
  auto post = post_of(PostKind::ExitZero);
  EXPECT_EQ(check(post, exited(3)).reason, "exit_zero: exited with code 3");

  AttemptOutcome sig;
  sig.ending = AttemptEnding::Signaled;
  sig.signal = 9;
  auto r = check(post, sig);
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason, "exit_zero: killed by signal 9 (SIGKILL)");

  AttemptOutcome timed;
  timed.ending = AttemptEnding::TimedOut;
  timed.message = "timed out after 2s";
  EXPECT_EQ(check(post, timed).reason, "exit_zero: timed out after 2s");
  timed.message.clear();
  EXPECT_EQ(check(post, timed).reason, "exit_zero: timed out");

  AttemptOutcome spawn;
  spawn.ending = AttemptEnding::SpawnFailed;
  spawn.message = "no-such-tool: No such file or directory";
  EXPECT_EQ(check(post, spawn).reason, "exit_zero: could not start: no-such-tool: No such file or directory");

  AttemptOutcome cancelled;
  cancelled.ending = AttemptEnding::Cancelled;
  cancelled.message = "interrupted";
  EXPECT_EQ(check(post, cancelled).reason, "exit_zero: cancelled: interrupted");

  AttemptOutcome error;
  error.ending = AttemptEnding::Error;
  error.exit_code = 0;
  error.message = "the step did not write its output file 'out.txt'";
  EXPECT_EQ(check(post, error).reason, "exit_zero: the step did not write its output file 'out.txt'");
}

TEST(ExitZero, MultiLineMessageBecomesOneLine) {
  AttemptOutcome spawn;
  spawn.ending = AttemptEnding::SpawnFailed;
  spawn.message = "line one\nline two";
  EXPECT_EQ(check(post_of(PostKind::ExitZero), spawn).reason, "exit_zero: could not start: line one\\nline two");
}

TEST(ExitZero, MissingOutcome) {
  CheckContext ctx;
  auto r = evaluate_post(post_of(PostKind::ExitZero), ctx);
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason, "exit_zero: no attempt outcome to check");
}

TEST(ResultNonempty, HeldAndFailed) {
  auto post = post_of(PostKind::ResultNonempty);
  auto r = check(post, exited(0, "  x\n"));
  EXPECT_TRUE(r.held);
  EXPECT_EQ(r.reason, "result_nonempty: 4 bytes");
  EXPECT_EQ(check(post, exited(0, "")).reason, "result_nonempty: the result is empty");
  auto ws = check(post, exited(0, " \n\t "));
  EXPECT_FALSE(ws.held);
  EXPECT_EQ(ws.reason, "result_nonempty: the result is only whitespace (4 bytes)");
}

TEST(ResultContains, HeldAndFailed) {
  Postcondition post = post_of(PostKind::ResultContains);
  post.text = "PASS";
  auto r = check(post, exited(0, "12 tests PASS"));
  EXPECT_TRUE(r.held);
  EXPECT_EQ(r.reason, "result_contains 'PASS': found");
  auto f = check(post, exited(0, std::string(212, 'x')));
  EXPECT_FALSE(f.held);
  EXPECT_EQ(f.reason, "result_contains 'PASS': not found in the result (212 bytes)");
}

TEST(ResultContains, TruncatedStdoutIsMentioned) {
  Postcondition post = post_of(PostKind::ResultContains);
  post.text = "DONE";
  auto outcome = exited(0, "partial");
  outcome.stdout_truncated = true;
  EXPECT_EQ(check(post, outcome).reason,
            "result_contains 'DONE': not found in the result (7 bytes) (stdout was cut at max_output)");
}

TEST(ResultContains, LongExpectedTextIsCutInTheReason) {
  Postcondition post = post_of(PostKind::ResultContains);
  post.text = std::string(200, 'a') + "\nb";
  auto r = check(post, exited(0, "nothing"));
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason, "result_contains '" + std::string(80, 'a') + "...': not found in the result (7 bytes)");
  EXPECT_EQ(r.reason.find('\n'), std::string::npos);
}

TEST(ResultContains, BigResult) {
  std::string big(10 * 1024 * 1024, 'x');
  Postcondition post = post_of(PostKind::ResultContains);
  post.text = "needle";
  auto miss = check(post, exited(0, big));
  EXPECT_FALSE(miss.held);
  EXPECT_EQ(miss.reason, "result_contains 'needle': not found in the result (10.0 MiB (10485760 bytes))");
  big += "needle";
  EXPECT_TRUE(check(post, exited(0, big)).held);
}

TEST(ResultMatches, HeldAndFailed) {
  Postcondition post = post_of(PostKind::ResultMatches);
  post.pattern = R"(^\d+ passed$)";
  auto r = check(post, exited(0, "42 passed"));
  EXPECT_TRUE(r.held);
  EXPECT_EQ(r.reason, R"(result_matches '^\d+ passed$': matched)");
  auto f = check(post, exited(0, "3 failed"));
  EXPECT_FALSE(f.held);
  EXPECT_EQ(f.reason, R"(result_matches '^\d+ passed$': no match in the result (8 bytes))");
}

TEST(ResultMatches, BadRegexIsAFailedCheckWithTheMessage) {
  Postcondition post = post_of(PostKind::ResultMatches);
  post.pattern = "(";
  auto r = check(post, exited(0, "x"));
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason, "result_matches: bad regex '(': missing closing parenthesis at offset 1");
}

TEST(ResultMatches, BigResult) {
  std::string big(10 * 1024 * 1024, 'x');
  big += "\nRESULT: ok 17\n";
  Postcondition post = post_of(PostKind::ResultMatches);
  post.pattern = R"((?m)^RESULT: ok \d+$)";
  EXPECT_TRUE(check(post, exited(0, big)).held);
  post.pattern = R"((?m)^RESULT: fail$)";
  EXPECT_FALSE(check(post, exited(0, big)).held);
}

TEST(ResultMatches, CatastrophicPatternIsAnErrorReasonNotAHang) {
  std::string subject(100000, 'a');
  subject += 'b';
  Postcondition post = post_of(PostKind::ResultMatches);
  post.pattern = "(a+)+$";
  auto start = std::chrono::steady_clock::now();
  auto r = check(post, exited(0, subject));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason.rfind("result_matches: regex '(a+)+$' gave up on 100001 bytes of input", 0), 0u) << r.reason;
}

TEST(ResultMatches, SamePatternManyTimes) {
  // The compiled pattern is cached per thread; results must not leak between patterns.
  Postcondition a = post_of(PostKind::ResultMatches);
  a.pattern = "^a";
  Postcondition b = post_of(PostKind::ResultMatches);
  b.pattern = "^b";
  for (int i = 0; i < 200; ++i) {
    EXPECT_TRUE(check(a, exited(0, "abc")).held);
    EXPECT_FALSE(check(b, exited(0, "abc")).held);
  }
  for (int i = 0; i < 100; ++i) {  // more patterns than the cache holds
    Postcondition p = post_of(PostKind::ResultMatches);
    p.pattern = "n" + std::to_string(i) + "$";
    EXPECT_TRUE(check(p, exited(0, "xn" + std::to_string(i))).held);
  }
}

TEST(EvaluatePost, ReasonsAreValidUtf8OneLiners) {
  Postcondition post = post_of(PostKind::ResultContains);
  post.text = "caf\xc3\xa9 \xff\xfe";  // valid é, then invalid bytes
  auto r = check(post, exited(0, "x"));
  EXPECT_EQ(r.reason, "result_contains 'caf\xc3\xa9 \\xff\\xfe': not found in the result (1 byte)");
  // checks_to_json must be able to store it.
  std::string json = checks_to_json({r});
  auto parsed = nlohmann::json::parse(json);
  EXPECT_EQ(parsed[0]["kind"], "result_contains");
  EXPECT_EQ(parsed[0]["held"], false);
}

TEST(EvaluatePost, ExitZeroIsCheap) {
  // exit_zero runs once per attempt; at 2500 attempts/s it must cost microseconds.
  auto post = post_of(PostKind::ExitZero);
  auto outcome = exited(0);
  auto start = std::chrono::steady_clock::now();
  int held = 0;
  for (int i = 0; i < 100000; ++i) held += check(post, outcome).held ? 1 : 0;
  auto per_check = (std::chrono::steady_clock::now() - start) / 100000;
  EXPECT_EQ(held, 100000);
  EXPECT_LT(per_check, std::chrono::microseconds(20));
}

}  // namespace
}  // namespace orch
