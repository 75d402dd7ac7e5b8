// Engine tests: the DAG, placeholders, results, retries and timeouts. On each backend of the
// ledger (testing/engine_fixture.h: EngineTest), with real plans and real processes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <sstream>
#include <thread>
#include <utility>

#include "engine/orphans.h"
#include "engine/snapshot.h"
#include "orch/clock.h"
#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/report.h"
#include "orch/validate.h"
#include "testing/engine_fixture.h"
#include "testing/testing.h"
#include "util/secrets.h"

namespace orch {
namespace {

using orch::testing::CountingStore;
using orch::testing::EngineSqliteTest;
using orch::testing::EngineTest;
using orch::testing::read_file;
using orch::testing::TempDir;
using orch::testing::write_file;
namespace fs = std::filesystem;
TEST_P(EngineTest, RunsADagAndPassesResultsThroughPlaceholders) {
  auto out = run(R"(
name: dag
steps:
  - id: a
    run: [echo, "hello world"]
  - id: b
    executor: builtin:echo
    deps: [a]
    inputs: {text: "got ${steps.a.result}!"}
  - id: c
    deps: [b]
    run: [sh, -c, 'printf "%s|%s" "$1" "$ORCH_IN_x" > c.txt', sh, "${steps.b.result}"]
    inputs: {x: "#E0"}
    post: [{file_contains: {path: c.txt, text: "got hello world!|hello world"}}]
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(out.exit_code(), 0);
  EXPECT_EQ(read_file(ws() / "c.txt"), "got hello world!|hello world");
  EXPECT_EQ(step(out.run_id, "b").result, "got hello world!");
  auto events = *store_->events(out.run_id);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().kind, "run_started");
  EXPECT_EQ(events.back().kind, "run_finished");
  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_LT(events[i - 1].seq, events[i].seq);
}

TEST_P(EngineTest, ShScriptsSeePlaceholdersAsShellVariablesNeverAsCode) {
  auto out = run(R"(
steps:
  - id: evil
    executor: builtin:echo
    inputs: {text: "$(touch pwned); `touch pwned2`; ' \" ;"}
  - id: use
    deps: [evil]
    sh: 'printf "%s" "${steps.evil.result}" > seen.txt; echo "$ORCH_IN_v" > v.txt'
    inputs: {v: "${steps.evil.result}"}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_FALSE(fs::exists(ws() / "pwned"));
  EXPECT_FALSE(fs::exists(ws() / "pwned2"));
  EXPECT_EQ(read_file(ws() / "seen.txt"), "$(touch pwned); `touch pwned2`; ' \" ;");
}

TEST_P(EngineTest, AbortSkipsTheRestWithAReason) {
  auto out = run(R"(
concurrency: 1
steps:
  - id: bad
    run: [sh, -c, "echo oops >&2; exit 3"]
  - id: later
    run: [touch, later.txt]
  - id: child
    deps: [bad]
    run: [touch, child.txt]
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(out.exit_code(), 1);
  EXPECT_EQ(step(out.run_id, "bad").status, StepStatus::Failed);
  EXPECT_NE(step(out.run_id, "bad").reason.find("exited with code 3"), std::string::npos)
      << step(out.run_id, "bad").reason;
  EXPECT_EQ(step(out.run_id, "later").status, StepStatus::Skipped);
  EXPECT_NE(step(out.run_id, "later").reason.find("run aborted"), std::string::npos);
  EXPECT_FALSE(fs::exists(ws() / "later.txt"));
  EXPECT_FALSE(fs::exists(ws() / "child.txt"));
}

TEST_P(EngineTest, KeepGoingRunsIndependentBranchesAndSkipsDependents) {
  EngineOptions o;
  o.keep_going = true;
  auto out = run(R"(
concurrency: 1
steps:
  - id: bad
    run: ["false"]
  - id: child
    deps: [bad]
    run: [touch, child.txt]
  - id: grandchild
    deps: [child]
    run: [touch, gc.txt]
  - id: other
    run: [touch, other.txt]
)",
                 o);
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_TRUE(fs::exists(ws() / "other.txt"));
  EXPECT_EQ(step(out.run_id, "child").status, StepStatus::Skipped);
  EXPECT_EQ(step(out.run_id, "child").reason, "dependency 'bad' failed");
  EXPECT_EQ(step(out.run_id, "grandchild").status, StepStatus::Skipped);
  EXPECT_FALSE(fs::exists(ws() / "gc.txt"));
}

// Every progress event carries the counts as they are at that moment: after the
// last step finished they add up to the run's end, and running never goes below 0.
TEST_P(EngineTest, ProgressCountsAreExactAtEveryEvent) {
  EngineOptions o;
  o.keep_going = true;
  std::vector<ProgressEvent> seen;
  o.on_progress = [&seen](const ProgressEvent& e) {
    if (e.kind != ProgressEvent::Kind::Committed) seen.push_back(e);
  };
  auto out = run(R"(
concurrency: 1
steps:
  - {id: one, executor: builtin:echo, inputs: {text: a}}
  - {id: two, executor: builtin:echo, inputs: {text: b}}
  - {id: bad, run: ["false"], attempts: 1}
  - {id: child, deps: [bad], run: ["true"]}
  - {id: last, deps: [one, two], run: ["true"]}
)",
                 o);
  EXPECT_EQ(out.status, RunStatus::Failed);
  ASSERT_FALSE(seen.empty());
  int finished = 0;
  for (const ProgressEvent& e : seen) {
    EXPECT_EQ(e.total, 5);
    EXPECT_GE(e.running, 0);
    EXPECT_LE(e.running, 1);
    EXPECT_LE(e.done + e.failed + e.skipped + e.running, e.total);
    if (e.kind == ProgressEvent::Kind::StepFinished) {
      ++finished;
      // The step just finished is counted: its status is in the counts already.
      EXPECT_EQ(e.done + e.failed + e.skipped, finished) << e.step_id;
    }
    if (e.kind == ProgressEvent::Kind::AttemptStarted) {
      EXPECT_EQ(e.running, 1) << e.step_id;
    }
  }
  EXPECT_EQ(finished, 5);
  const ProgressEvent& end = seen.back();
  EXPECT_EQ(end.done, 3);
  EXPECT_EQ(end.failed, 1);
  EXPECT_EQ(end.skipped, 1);
  EXPECT_EQ(end.running, 0);
}

// A result that nests too deep for `${steps.ID.json}` fails the step that reads
// it, with the reason, where writing it out used to overflow the stack.
TEST_P(EngineTest, AResultNestedTooDeepFailsTheStepThatReadsItWithAReason) {
  write_file(ws() / "deep.json", std::string(200000, '[') + std::string(200000, ']'));
  RunOutcome out = run(R"(
steps:
  - {id: a, run: [cat, deep.json], max_output: 1MiB}
  - {id: b, deps: [a], run: [echo, "${steps.a.json}"], attempts: 1}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "a").status, StepStatus::Done);
  StepRecord b = step(out.run_id, "b");
  EXPECT_EQ(b.status, StepStatus::Failed);
  EXPECT_NE(b.reason.find("nests deeper than 500 levels"), std::string::npos) << b.reason;
}

// `${steps.ID.json...}` hands numbers on as the step wrote them, and a result
// cut at max_output is not just "not JSON": the reason says it may be cut.
TEST_P(EngineTest, JsonPlaceholdersKeepNumbersAndACutResultIsNamed) {
  RunOutcome out = run(R"(
on_failure: continue
steps:
  - {id: a, sh: 'printf "{\"n\": 12345678901234567890123, \"f\": 1e2, \"l\": [1, 2, 3, 4, 5, 6, 7]}"'}
  - {id: b, deps: [a], run: [echo, "${steps.a.json.n} ${steps.a.json.f} ${steps.a.json}"]}
  - {id: cut, sh: 'printf "{\"l\": [1, 2, 3, 4, 5, 6, 7]}"', max_output: 12}
  - {id: c, deps: [cut], run: [echo, "${steps.cut.json.l}"], attempts: 1}
)");
  EXPECT_EQ(step(out.run_id, "b").result,
            R"(12345678901234567890123 1e2 {"n":12345678901234567890123,"f":1e2,"l":[1,2,3,4,5,6,7]})");
  EXPECT_EQ(step(out.run_id, "cut").result, R"({"l": [1, 2,)");
  StepRecord c = step(out.run_id, "c");
  EXPECT_EQ(c.status, StepStatus::Failed);
  EXPECT_NE(c.reason.find("not JSON"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find(
                "step 'cut' wrote at least its max_output of 12 bytes, so its result may be cut short there"),
            std::string::npos)
      << c.reason;
  EXPECT_EQ(step(out.run_id, "b").reason.find("max_output"), std::string::npos);
}

// In an `sh` script a literal `$` right before a placeholder stays a `$`: the
// script's `${ORCH_IN_price}` after it must not read as the shell's `$$`.
TEST_P(EngineTest, ADollarBeforeAPlaceholderInAShScriptIsADollar) {
  RunOutcome out = run(R"(
steps:
  - {id: a, sh: 'printf 7'}
  - id: b
    deps: [a]
    inputs: {price: "20"}
    sh: 'printf "%s" "cost $$${inputs.price}, $$$$${steps.a.result} and \$$${attempt.number}"'
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "b").result, "cost $20, $$7 and $1");
}

TEST_P(EngineTest, ARetryIsToldWhyTheLastAttemptFailed) {
  auto out = run(R"(
steps:
  - id: flaky
    attempts: 3
    sh: |
      if [ "$ORCH_ATTEMPT" = 1 ]; then echo "first try output"; exit 7; fi
      printf '%s' "$ORCH_PREVIOUS_FAILURE" > told.txt
      echo "attempt ${attempt.number}"
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto as = attempts(out.run_id, "flaky");
  ASSERT_EQ(as.size(), 2u);
  EXPECT_EQ(as[0].status, AttemptStatus::Failed);
  EXPECT_EQ(as[1].status, AttemptStatus::Succeeded);
  std::string told = read_file(ws() / "told.txt");
  EXPECT_NE(told.find("exited with code 7"), std::string::npos) << told;
  EXPECT_NE(told.find("first try output"), std::string::npos) << told;
  EXPECT_EQ(step(out.run_id, "flaky").result, "attempt 2");
}

TEST_P(EngineTest, SameFailureTwiceStopsRetrying) {
  auto out = run(R"(
steps:
  - id: stuck
    attempts: 6
    run: [sh, -c, "exit 1"]
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(attempts(out.run_id, "stuck").size(), 2u);
  EXPECT_NE(step(out.run_id, "stuck").reason.find("same failure twice"), std::string::npos);
}

TEST_P(EngineTest, AttemptsCapEndsWithTheLastReason) {
  auto out = run(R"(
steps:
  - id: varied
    attempts: 3
    run: [sh, -c, 'exit $ORCH_ATTEMPT']
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(attempts(out.run_id, "varied").size(), 3u);
  EXPECT_NE(step(out.run_id, "varied").reason.find("failed after 3 attempts"), std::string::npos)
      << step(out.run_id, "varied").reason;
}

TEST_P(EngineTest, PostconditionsDecideNotTheExitCode) {
  auto out = run(R"(
on_failure: continue
steps:
  - id: says_ok_but_no_file
    run: [echo, "done!"]
    post: [exit_zero, {file_exists: out.txt}]
  - id: shell_check
    run: [sh, -c, "echo 42 > n.txt"]
    post: [{shell_zero: "grep -q 42 n.txt"}, {shell_zero: "grep -q 43 n.txt"}]
  - id: json_result
    run: [echo, '{"a": {"b": [1, 2]}}']
    post: [{kind: result_json, schema: {type: object, required: [a]}}]
  - id: uses_json
    deps: [json_result]
    executor: builtin:echo
    inputs: {text: "${steps.json_result.json.a.b.1}"}
    post: [{result_matches: "^2$"}]
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  StepRecord a = step(out.run_id, "says_ok_but_no_file");
  EXPECT_EQ(a.status, StepStatus::Failed);
  EXPECT_NE(a.reason.find("out.txt"), std::string::npos) << a.reason;
  StepRecord b = step(out.run_id, "shell_check");
  EXPECT_EQ(b.status, StepStatus::Failed);
  EXPECT_NE(b.reason.find("grep -q 43"), std::string::npos) << b.reason;
  EXPECT_EQ(step(out.run_id, "json_result").status, StepStatus::Done);
  EXPECT_EQ(step(out.run_id, "uses_json").status, StepStatus::Done);
  EXPECT_EQ(step(out.run_id, "uses_json").result, "2");
}

// A shell_zero check gets the result in a file whatever its size, and also in
// ORCH_RESULT when an environment variable can hold it: a result past Linux's
// 128 KiB cap on one variable made every check fail with E2BIG.
TEST_P(EngineTest, ShellZeroGetsTheResultInAFileAndSmallOnesInTheEnvironment) {
  // One in orch's own environment must not pass for the result (it is emptied).
  setenv("ORCH_RESULT", "stale", 1);
  auto out = run(R"yaml(
steps:
  - id: chatty
    sh: 'seq 1 40000'
    post: [{shell_zero: 'test "$(tail -n 1 "$ORCH_RESULT_FILE")" = 40000 && test -z "$ORCH_RESULT"'}]
  - id: quiet
    sh: 'echo hi'
    post: [{shell_zero: 'test "$ORCH_RESULT" = hi && test "$(cat "$ORCH_RESULT_FILE")" = hi'}]
)yaml");
  unsetenv("ORCH_RESULT");
  EXPECT_EQ(out.status, RunStatus::Succeeded);
  EXPECT_EQ(step(out.run_id, "chatty").status, StepStatus::Done) << step(out.run_id, "chatty").reason;
  EXPECT_EQ(step(out.run_id, "quiet").status, StepStatus::Done) << step(out.run_id, "quiet").reason;
}

TEST_P(EngineTest, TimeoutKillsAndRecordsTimedOut) {
  auto start = std::chrono::steady_clock::now();
  auto out = run(R"(
defaults: {kill_grace: 200ms}
steps:
  - id: slow
    timeout: 300ms
    run: [sleep, "30"]
)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto as = attempts(out.run_id, "slow");
  ASSERT_EQ(as.size(), 1u);
  EXPECT_EQ(as[0].status, AttemptStatus::TimedOut);
}

// An abort names the step that stopped the run, and the others that failed
// while it stopped (running ones finish).
TEST_P(EngineTest, AnAbortNamesEveryStepThatFailed) {
  auto out = run(R"(
concurrency: 2
steps:
  - {id: a, sh: 'sleep 0.1; exit 1', attempts: 1}
  - {id: b, sh: 'sleep 0.5; exit 2', attempts: 1}
  - {id: c, deps: [a], run: ["true"]}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(out.reason, "step 'a' failed (2 steps failed: a, b)");
  EXPECT_EQ(step(out.run_id, "c").status, StepStatus::Skipped);
}

TEST_P(EngineTest, BuiltinJsonComposesData) {
  auto out = run(R"(
steps:
  - {id: name, executor: builtin:echo, inputs: {text: orch}}
  - id: doc
    deps: [name]
    executor: builtin:json
    inputs: {tool: "${steps.name.result}", n: 3, tags: [a, "${steps.name.result}"]}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto j = nlohmann::json::parse(step(out.run_id, "doc").result);
  EXPECT_EQ(j["tool"], "orch");
  EXPECT_EQ(j["n"], 3);
  EXPECT_EQ(j["tags"][1], "orch");
}

}  // namespace
}  // namespace orch
