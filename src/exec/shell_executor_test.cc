#include "exec/shell_executor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>

#include "exec/exec_testing.h"
#include "exec/output_sink.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using orch::testing::read_file;
using orch::testing::read_pids;
using orch::testing::Reports;
using orch::testing::run_until;
using orch::testing::shell_spec;
using orch::testing::TempDir;
using orch::testing::wait_gone;
using orch::testing::write_file;
using SteadyClock = std::chrono::steady_clock;

// Runs one shell attempt to its end and returns its outcome.
AttemptOutcome run_attempt(const AttemptSpec& spec, std::chrono::milliseconds limit = 10s) {
  EventLoop loop;
  ShellExecutor shell;
  Reports reports;
  auto attempt = shell.start(spec, loop, reports.callback());
  EXPECT_TRUE(attempt.has_value());
  EXPECT_FALSE(reports.any()) << "done was called from inside start()";
  EXPECT_TRUE(run_until(
      loop, [&] { return reports.any(); }, limit));
  loop.run_once(5ms);
  EXPECT_EQ(reports.outcomes.size(), 1u);
  return reports.any() ? reports.only() : AttemptOutcome{};
}

AttemptSpec sh_spec(const TempDir& dir, const std::string& script) {
  return shell_spec(dir.path(), {"/bin/sh", "-c", script});
}

TEST(ShellExecutor, ResultIsStdoutWithOneTrailingNewlineTrimmed) {
  TempDir dir;
  auto outcome = run_attempt(sh_spec(dir, "printf 'hello\\n\\n'"));
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.message, "");
  EXPECT_EQ(outcome.result, "hello\n");
  EXPECT_EQ(outcome.stdout_bytes, 7);
  EXPECT_EQ(read_file(dir / ".out/step.1.stdout"), "hello\n\n");
  EXPECT_FALSE(fs::exists(dir / ".out/step.1.stderr"));  // no output, no file

  EXPECT_EQ(run_attempt(sh_spec(dir, "printf 'a\\r\\n'")).result, "a");
  EXPECT_EQ(run_attempt(sh_spec(dir, "printf 'a'")).result, "a");
  EXPECT_EQ(trim_one_newline("x\n\r\n"), "x\n");
  EXPECT_EQ(trim_one_newline("\n"), "");
  EXPECT_EQ(trim_one_newline(""), "");
}

TEST(ShellExecutor, NonZeroExitAndStderr) {
  TempDir dir;
  auto outcome = run_attempt(sh_spec(dir, "echo oops >&2; exit 3"));
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.exit_code, 3);
  EXPECT_EQ(outcome.message, "exited with code 3");
  EXPECT_EQ(read_file(dir / ".out/step.1.stderr"), "oops\n");
  EXPECT_EQ(outcome.stderr_bytes, 5);
  EXPECT_EQ(outcome.output_tail, "oops\n");
  EXPECT_FALSE(fs::exists(dir / ".out/step.1.stdout"));
}

TEST(ShellExecutor, KilledBySignal) {
  TempDir dir;
  auto outcome = run_attempt(sh_spec(dir, "kill -KILL $$"));
  EXPECT_EQ(outcome.ending, AttemptEnding::Signaled);
  EXPECT_EQ(outcome.signal, SIGKILL);
  EXPECT_EQ(outcome.message, "killed by SIGKILL");
}

TEST(ShellExecutor, EnvironmentCwdAndStdin) {
  TempDir dir;
  auto spec = shell_spec(dir.path(), {"/bin/sh", "-c", "echo \"$ORCH_STEP_ID $HOME\"; pwd; cat"});
  spec.env = {{"ORCH_STEP_ID", "s1"}, {"HOME", "/elsewhere"}};
  auto start = SteadyClock::now();
  auto outcome = run_attempt(spec);
  EXPECT_LT(SteadyClock::now() - start, 2s);  // cat read /dev/null, not a terminal or a pipe
  EXPECT_EQ(outcome.result, "s1 /elsewhere\n" + dir.path().string());
}

TEST(ShellExecutor, OutputTailIsBothStreamsInArrivalOrder) {
  TempDir dir;
  auto outcome = run_attempt(sh_spec(dir, "echo a; sleep 0.05; echo b >&2; sleep 0.05; echo c"));
  EXPECT_EQ(outcome.output_tail, "a\nb\nc\n");
  EXPECT_EQ(outcome.result, "a\nc");
}

TEST(ShellExecutor, MissingExecutableIsSpawnFailed) {
  TempDir dir;
  auto outcome = run_attempt(shell_spec(dir.path(), {"nosuchcmd"}));
  EXPECT_EQ(outcome.ending, AttemptEnding::SpawnFailed);
  EXPECT_EQ(outcome.message, "cannot run 'nosuchcmd': No such file or directory (not found in PATH)");
}

TEST(ShellExecutor, TimeoutKillsTheProcessAndItsChildren) {
  TempDir dir;
  auto spec = sh_spec(dir, "sleep 30 & echo $! > pids; sleep 30 & echo $! >> pids; wait");
  spec.timeout = 300ms;
  auto start = SteadyClock::now();
  auto outcome = run_attempt(spec);
  auto elapsed = SteadyClock::now() - start;
  EXPECT_EQ(outcome.ending, AttemptEnding::TimedOut);
  EXPECT_EQ(outcome.message, "timed out after 300ms");
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 5s);
  auto pids = read_pids(dir / "pids");
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t pid : pids) EXPECT_TRUE(wait_gone(pid)) << pid;
}

TEST(ShellExecutor, TimeoutMessageNamesTheDuration) {
  EXPECT_EQ("timed out after " + format_duration(2s), "timed out after 2s");
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(120s), "120s");
}

TEST(ShellExecutor, IgnoredTermGetsKillAfterTheGrace) {
  TempDir dir;
  auto spec = sh_spec(dir, "trap '' TERM; while :; do sleep 1; done");
  spec.timeout = 100ms;
  spec.kill_grace = 300ms;
  auto start = SteadyClock::now();
  auto outcome = run_attempt(spec);
  auto elapsed = SteadyClock::now() - start;
  EXPECT_EQ(outcome.ending, AttemptEnding::TimedOut);
  EXPECT_EQ(outcome.signal, SIGKILL);
  EXPECT_GE(elapsed, 390ms);
  EXPECT_LT(elapsed, 3s);
}

TEST(ShellExecutor, GrandchildThatOutlivesItsParentDiesWithTheGroup) {
  TempDir dir;
  auto outcome = run_attempt(sh_spec(dir, "(sleep 5; echo late > late.txt) & echo $! > pids; exit 0"));
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.exit_code, 0);
  auto pids = read_pids(dir / "pids");
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(wait_gone(pids[0]));
  EXPECT_FALSE(fs::exists(dir / "late.txt"));
}

TEST(ShellExecutor, HugeOutputIsCappedCountedAndQuick) {
  TempDir dir;
  auto spec = shell_spec(dir.path(), {"head", "-c", "50000000", "/dev/zero"});
  spec.max_output = 1024 * 1024;
  auto start = SteadyClock::now();
  auto outcome = run_attempt(spec, 20s);
  EXPECT_LT(SteadyClock::now() - start, 5s);
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_TRUE(outcome.stdout_truncated);
  EXPECT_FALSE(outcome.stderr_truncated);
  EXPECT_EQ(outcome.stdout_bytes, 50000000);
  std::string marker = OutputSink::truncation_marker(1024 * 1024, 50000000 - 1024 * 1024);
  EXPECT_EQ(marker, "\n[orch: output truncated at 1048576 bytes; 48951424 bytes discarded]\n");
  std::string file = read_file(dir / ".out/step.1.stdout");
  EXPECT_EQ(file.size(), 1024 * 1024 + marker.size());
  EXPECT_EQ(file.substr(0, 1024 * 1024), std::string(1024 * 1024, '\0'));
  EXPECT_EQ(file.substr(1024 * 1024), marker);
  // The result is what the step printed within the cap; the marker is the log's only.
  EXPECT_EQ(outcome.result, std::string(1024 * 1024, '\0'));
  EXPECT_EQ(outcome.output_tail.size(), 2048u);
}

TEST(ShellExecutor, ACutResultHoldsTheStepsBytesNotOrchsMarker) {
  TempDir dir;
  auto spec = sh_spec(dir, "printf '0123456789\n'; printf 'abcdefghij\n'");
  spec.max_output = 10;
  auto outcome = run_attempt(spec);
  EXPECT_TRUE(outcome.stdout_truncated);
  EXPECT_EQ(outcome.result, "0123456789");
  EXPECT_NE(read_file(dir / ".out/step.1.stdout").find("[orch: output truncated at 10 bytes"),
            std::string::npos);
}

TEST(ShellExecutor, AnOutputFileTheStepLinksOutsideTheWorkspaceIsRefusedNotRead) {
  TempDir dir;
  write_file(dir / "secret.txt", "outside\n");
  fs::create_directories(dir / "ws");
  auto spec = sh_spec(dir, "ln -sf ../secret.txt out.txt; echo hi");
  spec.workspace = dir / "ws";
  spec.output_file = "out.txt";
  auto outcome = run_attempt(spec);
  EXPECT_EQ(outcome.ending, AttemptEnding::Error);
  EXPECT_EQ(outcome.result, "");
  EXPECT_NE(outcome.message.find("outside the workspace"), std::string::npos) << outcome.message;
}

TEST(ShellExecutor, AnOutputFileThatIsANamedPipeFailsAtOnceInsteadOfHanging) {
  TempDir dir;
  auto spec = sh_spec(dir, "mkfifo out.fifo; echo hi");
  spec.output_file = "out.fifo";
  auto start = SteadyClock::now();
  auto outcome = run_attempt(spec, 5s);
  EXPECT_LT(SteadyClock::now() - start, 3s);
  EXPECT_EQ(outcome.ending, AttemptEnding::Error);
  EXPECT_NE(outcome.message.find("is not a regular file"), std::string::npos) << outcome.message;
}

TEST(ShellExecutor, NonUtf8BytesArePreservedExactly) {
  TempDir dir;
  auto outcome = run_attempt(sh_spec(dir, "printf '\\377\\376\\000abc'; printf '\\377' >&2"));
  std::string expected("\xff\xfe\0abc", 6);
  EXPECT_EQ(outcome.result, expected);
  EXPECT_EQ(read_file(dir / ".out/step.1.stdout"), expected);
  EXPECT_EQ(read_file(dir / ".out/step.1.stderr"), "\xff");
}

TEST(ShellExecutor, OutputFileIsTheResult) {
  TempDir dir;
  auto spec = sh_spec(dir, "echo ignored; printf 'from file\\n' > out.txt");
  spec.output_file = dir / "out.txt";
  auto outcome = run_attempt(spec);
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.result, "from file\n");  // the file as written, not trimmed

  spec.output_file = "out.txt";  // relative: inside the workspace
  EXPECT_EQ(run_attempt(spec).result, "from file\n");
}

TEST(ShellExecutor, MissingOutputFileIsAnErrorNamingIt) {
  TempDir dir;
  auto spec = sh_spec(dir, "echo hi");
  spec.output_file = dir / "never.txt";
  auto outcome = run_attempt(spec);
  EXPECT_EQ(outcome.ending, AttemptEnding::Error);
  EXPECT_NE(outcome.message.find((dir / "never.txt").string()), std::string::npos) << outcome.message;

  spec.argv = {"/bin/sh", "-c", "exit 2"};  // the failed exit is the better reason
  outcome = run_attempt(spec);
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.exit_code, 2);
}

TEST(ShellExecutor, UsageFileFillsTokensAndCost) {
  TempDir dir;
  auto spec =
      sh_spec(dir, "printf '{\"tokens_in\":120,\"tokens_out\":30,\"cost_usd\":0.25}' > \"$ORCH_USAGE_FILE\"");
  spec.env = {{"ORCH_USAGE_FILE", spec.usage_path.string()}};
  fs::create_directories(spec.usage_path.parent_path());
  auto outcome = run_attempt(spec);
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.tokens_in, 120);
  EXPECT_EQ(outcome.tokens_out, 30);
  EXPECT_DOUBLE_EQ(outcome.cost_usd, 0.25);

  TempDir other;  // a fresh usage path that no step writes
  auto none = run_attempt(sh_spec(other, "true"));
  EXPECT_EQ(none.tokens_in, 0);
  EXPECT_EQ(none.tokens_out, 0);
  EXPECT_EQ(none.cost_usd, 0);
}

TEST(ShellExecutor, MalformedUsageFileIsAnError) {
  TempDir dir;
  auto spec = sh_spec(dir, "printf '{\"tokens_in\": \"many\"}' > \"$ORCH_USAGE_FILE\"");
  spec.env = {{"ORCH_USAGE_FILE", spec.usage_path.string()}};
  fs::create_directories(spec.usage_path.parent_path());
  auto outcome = run_attempt(spec);
  EXPECT_EQ(outcome.ending, AttemptEnding::Error);
  EXPECT_NE(outcome.message.find(spec.usage_path.string()), std::string::npos) << outcome.message;
  EXPECT_NE(outcome.message.find("tokens_in"), std::string::npos) << outcome.message;
}

// A step stopped before it exits (its timeout, a cancel, a signal) may have paid
// for its calls already: what its usage file says is reported all the same.
TEST(ShellExecutor, UsageIsReportedHoweverTheProcessEnds) {
  const std::string report =
      "printf '{\"tokens_in\":400,\"tokens_out\":100,\"cost_usd\":5}' > \"$ORCH_USAGE_FILE\"; ";
  for (const std::string ending : {"timeout", "cancel", "signal"}) {
    TempDir dir;
    auto spec = sh_spec(dir, report + (ending == "signal" ? "kill -KILL $$" : "touch reported; sleep 30"));
    spec.env = {{"ORCH_USAGE_FILE", spec.usage_path.string()}};
    spec.kill_grace = 100ms;
    if (ending == "timeout") spec.timeout = 300ms;
    fs::create_directories(spec.usage_path.parent_path());
    EventLoop loop;
    ShellExecutor shell;
    Reports reports;
    auto attempt = shell.start(spec, loop, reports.callback());
    ASSERT_TRUE(attempt);
    if (ending == "cancel") {
      ASSERT_TRUE(run_until(
          loop, [&] { return fs::exists(dir / "reported"); }, 5s));
      (*attempt)->cancel("cancelled");
    }
    ASSERT_TRUE(run_until(
        loop, [&] { return reports.any(); }, 10s))
        << ending;
    const AttemptOutcome& outcome = reports.only();
    EXPECT_EQ(outcome.ending, ending == "timeout"  ? AttemptEnding::TimedOut
                              : ending == "cancel" ? AttemptEnding::Cancelled
                                                   : AttemptEnding::Signaled)
        << ending;
    EXPECT_EQ(outcome.tokens_in, 400) << ending;
    EXPECT_EQ(outcome.tokens_out, 100) << ending;
    EXPECT_DOUBLE_EQ(outcome.cost_usd, 5) << ending;
  }
  // A report that cannot be read does not change how a stopped step ended; its message says so.
  TempDir dir;
  auto spec = sh_spec(dir, "printf '{' > \"$ORCH_USAGE_FILE\"; sleep 30");
  spec.env = {{"ORCH_USAGE_FILE", spec.usage_path.string()}};
  spec.kill_grace = 100ms;
  spec.timeout = 300ms;
  fs::create_directories(spec.usage_path.parent_path());
  auto outcome = run_attempt(spec);
  EXPECT_EQ(outcome.ending, AttemptEnding::TimedOut);
  EXPECT_EQ(outcome.tokens_in, 0);
  EXPECT_NE(outcome.message.find("timed out after 300ms; not charged: usage file"), std::string::npos)
      << outcome.message;
}

TEST(ReadUsageFile, AcceptsAndRejects) {
  TempDir dir;
  EXPECT_FALSE(read_usage_file(dir / "absent.json").value().has_value());
  auto check = [&](const std::string& text) {
    write_file(dir / "u.json", text);
    return read_usage_file(dir / "u.json");
  };
  auto ok = check(R"({"tokens_in": 5, "x-model": "a note"})");
  ASSERT_TRUE(ok && *ok);
  EXPECT_EQ((*ok)->tokens_in, 5);
  EXPECT_EQ((*ok)->tokens_out, 0);
  ASSERT_TRUE(check(R"({"cost_usd": 1})").has_value());
  // A whole number however JSON writes it, as result_json and JSON Schema count one.
  auto whole = check(R"({"tokens_in": 5.0, "tokens_out": 2e1})");
  ASSERT_TRUE(whole && *whole) << (whole ? "" : whole.error().message);
  EXPECT_EQ((*whole)->tokens_in, 5);
  EXPECT_EQ((*whole)->tokens_out, 20);
  auto huge = check(R"({"tokens_in": 99999999999999999999})");
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message.find("too large to be a token count"), std::string::npos)
      << huge.error().message;
  // Empty: nothing reported, as with no file.
  auto empty = check(" \n");
  ASSERT_TRUE(empty.has_value());
  EXPECT_FALSE(empty->has_value());
  // A misspelt or repeated key would leave the budget blind to what was spent.
  auto typo = check(R"({"token_in": 500, "cost_usd": 1})");
  ASSERT_FALSE(typo.has_value());
  EXPECT_NE(typo.error().message.find("unknown key \"token_in\" (did you mean 'tokens_in'?)"),
            std::string::npos)
      << typo.error().message;
  auto twice = check(R"({"tokens_in": 500, "tokens_in": 0})");
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.error().message.find("\"tokens_in\" is written twice"), std::string::npos)
      << twice.error().message;
  for (std::string bad : {"{", "[1]", R"({"cost": 3})", R"({"tokens_out": -1})", R"({"tokens_in": 1.5})",
                          R"({"cost_usd": "1"})", R"({"cost_usd": -0.5})"}) {
    auto result = check(bad);
    ASSERT_FALSE(result.has_value()) << bad;
    EXPECT_NE(result.error().message.find("u.json"), std::string::npos) << result.error().message;
  }
  EXPECT_NE(check("{").error().message.find("not valid JSON"), std::string::npos);
}

TEST(ShellExecutor, ManyConcurrentAttemptsAreEachReportedOnce) {
  TempDir dir;
  EventLoop loop;
  ShellExecutor shell;
  constexpr int kCount = 50;
  int fds_before = orch::testing::open_fd_count();
  std::vector<Reports> reports(kCount);
  std::vector<std::unique_ptr<RunningAttempt>> attempts;
  for (int i = 0; i < kCount; ++i) {
    auto spec = sh_spec(dir, "echo " + std::to_string(i));
    spec.stdout_path = dir / ("out/" + std::to_string(i));
    auto attempt = shell.start(spec, loop, reports[i].callback());
    ASSERT_TRUE(attempt);
    attempts.push_back(std::move(*attempt));
  }
  auto all = [&] {
    for (const auto& r : reports) {
      if (!r.any()) return false;
    }
    return true;
  };
  ASSERT_TRUE(run_until(loop, all, 15s));
  loop.run_once(10ms);
  for (int i = 0; i < kCount; ++i) {
    ASSERT_EQ(reports[i].outcomes.size(), 1u);
    EXPECT_EQ(reports[i].only().result, std::to_string(i));
  }
  attempts.clear();
  EXPECT_TRUE(loop.idle());
  EXPECT_EQ(orch::testing::open_fd_count(), fds_before);  // pipes, pidfds and files all closed
}

TEST(ShellExecutor, CancelStopsTheGroupAndReportsCancelled) {
  TempDir dir;
  EventLoop loop;
  ShellExecutor shell;
  Reports reports;
  auto spec = sh_spec(dir, "sleep 30 & echo $! > pids; wait");
  auto attempt = shell.start(spec, loop, reports.callback());
  ASSERT_TRUE(attempt);
  ASSERT_TRUE(run_until(
      loop, [&] { return read_pids(dir / "pids").size() == 1; }, 5s));
  (*attempt)->cancel("run cancelled by the user");
  (*attempt)->cancel("twice");  // the first reason stands
  EXPECT_FALSE(reports.any());  // reported from the loop, not from cancel()
  ASSERT_TRUE(run_until(
      loop, [&] { return reports.any(); }, 5s));
  EXPECT_EQ(reports.only().ending, AttemptEnding::Cancelled);
  EXPECT_EQ(reports.only().message, "run cancelled by the user");
  EXPECT_TRUE(wait_gone(read_pids(dir / "pids")[0]));
  (*attempt)->cancel("after the end");  // harmless
  loop.run_once(5ms);
  EXPECT_EQ(reports.outcomes.size(), 1u);
}

TEST(ShellExecutor, DestroyingARunningAttemptKillsTheGroup) {
  TempDir dir;
  EventLoop loop;
  ShellExecutor shell;
  Reports reports;
  auto attempt = shell.start(sh_spec(dir, "sleep 30 & echo $! > pids; wait"), loop, reports.callback());
  ASSERT_TRUE(attempt);
  ASSERT_TRUE(run_until(
      loop, [&] { return read_pids(dir / "pids").size() == 1; }, 5s));
  attempt->reset();
  EXPECT_TRUE(wait_gone(read_pids(dir / "pids")[0]));
  EXPECT_TRUE(loop.idle());
  loop.run_once(5ms);
  EXPECT_FALSE(reports.any());
}

TEST(ShellExecutor, DestroyedBeforeASpawnFailureIsReportedReportsNothing) {
  TempDir dir;
  EventLoop loop;
  ShellExecutor shell;
  Reports reports;
  auto attempt = shell.start(shell_spec(dir.path(), {"nosuchcmd"}), loop, reports.callback());
  ASSERT_TRUE(attempt);
  attempt->reset();
  loop.run_once(5ms);
  EXPECT_FALSE(reports.any());
}

TEST(ShellExecutor, DoneMayDestroyTheAttempt) {
  TempDir dir;
  EventLoop loop;
  ShellExecutor shell;
  std::unique_ptr<RunningAttempt> attempt;
  int calls = 0;
  auto started = shell.start(sh_spec(dir, "echo hi"), loop, [&](AttemptOutcome) {
    ++calls;
    attempt.reset();  // what an engine does when it settles the attempt
  });
  ASSERT_TRUE(started);
  attempt = std::move(*started);
  ASSERT_TRUE(run_until(loop, [&] { return calls > 0; }));
  loop.run_once(5ms);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(loop.idle());
}

Step shell_step(std::vector<std::string> run, std::optional<std::string> script) {
  Step step;
  step.id = "s";
  step.run = std::move(run);
  step.sh = std::move(script);
  step.loc = {"plan.yaml", 3};
  return step;
}

TEST(ShellExecutor, CheckStepLeavesRunAndShToTheValidator) {
  ShellExecutor shell;
  Diagnostics out;
  shell.check_step(shell_step({"true"}, "true"), out);  // validate_plan reports this one, once
  EXPECT_TRUE(out.empty());
}

TEST(ShellExecutor, DefaultPostconditionIsExitZero) {
  ShellExecutor shell;
  auto post = shell.default_post();
  ASSERT_EQ(post.size(), 1u);
  EXPECT_EQ(post[0].kind, PostKind::ExitZero);
}

}  // namespace
}  // namespace orch
