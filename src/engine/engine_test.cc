// Engine tests: real plans, a real SQLite ledger, real processes.
#include "orch/engine.h"

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
#include "orch/plan_loader.h"
#include "orch/report.h"
#include "orch/validate.h"
#include "testing/testing.h"
#include "util/secrets.h"

namespace orch {
namespace {

using orch::testing::read_file;
using orch::testing::TempDir;
using orch::testing::write_file;
namespace fs = std::filesystem;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(ws());
    auto s = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
  }

  fs::path ws() const { return dir_ / "ws"; }

  // ws/d/s.sock: a file a `writes: [d]` snapshot cannot make again once removed.
  void socket_in_workspace_folder_d() {
    fs::create_directories(ws() / "d");
    orch::testing::make_socket_file(ws() / "d" / "s.sock");
  }

  Plan load(const std::string& yaml) {
    fs::path file = dir_ / "plan.yaml";
    write_file(file, yaml);
    LoadResult r = parse_plan(yaml, file.string());
    std::string all;
    for (const auto& d : r.diagnostics) all += d.to_string() + "\n";
    EXPECT_TRUE(r.diagnostics.empty()) << all;
    auto registry = ExecutorRegistry::with_builtins();
    Diagnostics v = validate_plan(r.plan, validate_options_for(ws(), file.string(), registry));
    for (const auto& d : v) all += d.to_string() + "\n";
    EXPECT_TRUE(v.empty()) << all;
    text_ = yaml;
    return r.plan;
  }

  RunOutcome run(const std::string& yaml, EngineOptions options = {}) {
    Plan plan = load(yaml);
    options.workspace = ws();
    Engine engine(*store_, options);
    auto out = engine.run(plan, text_);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? *out : RunOutcome{};
  }

  RunOutcome resume(const std::string& id, std::optional<std::string> replan = std::nullopt) {
    Engine engine(*store_, EngineOptions{});
    auto out = engine.resume(id, replan);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? *out : RunOutcome{};
  }

  StepRecord step(const std::string& run_id, const std::string& id) {
    auto steps = store_->steps(run_id);
    for (auto& s : *steps)
      if (s.step_id == id) return s;
    ADD_FAILURE() << "no step " << id;
    return {};
  }

  std::vector<AttemptRecord> attempts(const std::string& run_id, const std::string& id) {
    return *store_->attempts(run_id, id);
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::string text_;
};

TEST_F(EngineTest, RunsADagAndPassesResultsThroughPlaceholders) {
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

TEST_F(EngineTest, ShScriptsSeePlaceholdersAsShellVariablesNeverAsCode) {
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

TEST_F(EngineTest, AbortSkipsTheRestWithAReason) {
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

TEST_F(EngineTest, KeepGoingRunsIndependentBranchesAndSkipsDependents) {
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
TEST_F(EngineTest, ProgressCountsAreExactAtEveryEvent) {
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
TEST_F(EngineTest, AResultNestedTooDeepFailsTheStepThatReadsItWithAReason) {
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
TEST_F(EngineTest, JsonPlaceholdersKeepNumbersAndACutResultIsNamed) {
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
TEST_F(EngineTest, ADollarBeforeAPlaceholderInAShScriptIsADollar) {
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

// A token count no real call produces fails the attempt instead of wrapping the
// run's totals around (9223372036854775807 twice made the spend -2, and the
// budget let everything through).
TEST_F(EngineTest, AnImpossibleTokenCountFailsTheAttemptAndIsNotCharged) {
  RunOutcome out = run(R"(
budget: {tokens: 1000}
steps:
  - id: huge
    attempts: 1
    sh: 'echo "{\"tokens_in\": 9223372036854775807, \"tokens_out\": 9223372036854775807}" > "$ORCH_USAGE_FILE"'
  - {id: next, deps: [huge], sh: 'echo next ran'}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  StepRecord huge = step(out.run_id, "huge");
  EXPECT_EQ(huge.status, StepStatus::Failed);
  EXPECT_NE(huge.reason.find("impossible token count"), std::string::npos) << huge.reason;
  EXPECT_EQ(huge.tokens_in + huge.tokens_out, 0);
  EXPECT_EQ(step(out.run_id, "next").status, StepStatus::Skipped);
  EXPECT_EQ((*store_->find_run(out.run_id))->spent_tokens, 0);
}

// Shell steps with no budget of their own reserve nothing, so a parallel wave of
// them can spend past the plan's budget: the run's reason and an event say so.
TEST_F(EngineTest, ARunThatEndsOverThePlansBudgetSaysSo) {
  std::string yaml = "concurrency: 3\nbudget: {tokens: 100, cost_usd: 1}\nsteps:\n";
  for (const char* id : {"a", "b", "c"})
    yaml += fmt::format(
        "  - {{id: {}, sh: 'echo \"{{\\\"tokens_in\\\": 60, \\\"cost_usd\\\": 0.5}}\" > "
        "\"$ORCH_USAGE_FILE\"; "
        "sleep 0.2'}}\n",
        id);
  RunOutcome out = run(yaml);
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_NE(
      out.reason.find("over the plan's budget: tokens: 180 spent of 100, cost: $1.5000 spent of $1.0000"),
      std::string::npos)
      << out.reason;
  auto over = store_->events_of_kind(out.run_id, "budget_overspent");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->size(), 1u);
}

// A step whose own budget runs out has failed; the plan's budget did not run out,
// so with --keep-going the run ends failed (exit 1), as it does without it, not
// budget_exhausted (exit 4, which says the plan's budget ran out).
TEST_F(EngineTest, AStepsOwnBudgetRunningOutFailsTheRunNotItsBudget) {
  for (bool keep_going : {false, true}) {
    EngineOptions o;
    o.keep_going = keep_going;
    RunOutcome out = run(R"(
steps:
  - id: b
    attempts: 5
    budget: {tokens: 10}
    sh: 'echo "{\"tokens_in\": 10}" > "$ORCH_USAGE_FILE"; exit 1'
  - {id: c, deps: [b], run: ["true"]}
  - {id: other, run: ["true"]}
)",
                         o);
    EXPECT_EQ(out.status, RunStatus::Failed) << "keep_going " << keep_going << ": " << out.reason;
    EXPECT_EQ(out.reason, keep_going ? "1 step failed: b" : "step 'b' failed");
    StepRecord b = step(out.run_id, "b");
    EXPECT_EQ(b.status, StepStatus::Failed);
    EXPECT_NE(b.reason.find("step budget exhausted: tokens 10 spent of 10"), std::string::npos) << b.reason;
    EXPECT_EQ(step(out.run_id, "c").status, StepStatus::Skipped);
  }
}

// A step's `budget: {attempts: N}` counts every attempt of the step, across
// resumes, as its token budget does; its `attempts` cap starts over for a step
// that failed. When the budget runs out, the reason says so.
// An attempt stopped because its step's own wall budget ran out says that, not
// "timed out": no timeout was set; the budget's time was what it had.
TEST_F(EngineTest, AStepsWallBudgetRunningOutIsSaidAsTheBudget) {
  auto out = run(R"(
on_failure: continue
steps:
  - {id: slow, budget: {wall: 300ms}, sh: 'sleep 5'}
  - {id: timed, timeout: 200ms, budget: {wall: 10s}, sh: 'sleep 5'}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto slow = attempts(out.run_id, "slow");
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].status, AttemptStatus::TimedOut);
  EXPECT_EQ(slow[0].reason, "step budget exhausted: wall 300 ms used of 300 ms");
  EXPECT_EQ(step(out.run_id, "slow").reason, "step budget exhausted: wall 300 ms used of 300 ms");
  // Its own timeout, shorter than the budget: a timeout.
  EXPECT_EQ(step(out.run_id, "timed").reason, "timed out after 200ms");
}

// The plan's wall budget running out stops what runs at that cap: timed_out with
// the budget as its reason, as when it was the attempt's timeout; the run ends
// budget_exhausted and what did not start is skipped for it.
TEST_F(EngineTest, ThePlansWallBudgetRunningOutStopsWhatRunsAsTimedOut) {
  auto out = run(R"(
concurrency: 2
budget: {wall: 300ms}
steps:
  - {id: s, sh: 'sleep 5'}
  - {id: u, sh: 'sleep 5'}
  - {id: t, deps: [s], run: ['true']}
)");
  EXPECT_EQ(out.status, RunStatus::BudgetExhausted) << out.reason;
  for (const char* id : {"s", "u"}) {
    SCOPED_TRACE(id);
    auto a = attempts(out.run_id, id);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].status, AttemptStatus::TimedOut);
    EXPECT_EQ(a[0].ending, AttemptEnding::TimedOut);
    EXPECT_TRUE(a[0].counted);
    EXPECT_EQ(a[0].reason, "budget exhausted: wall: 300 ms used of 300 ms");
    EXPECT_EQ(step(out.run_id, id).status, StepStatus::Failed);
  }
  EXPECT_EQ(step(out.run_id, "t").status, StepStatus::Skipped);
  EXPECT_NE(step(out.run_id, "t").reason.find("budget exhausted: wall"), std::string::npos)
      << step(out.run_id, "t").reason;
}

// An attempt's time is its process's and then its checks': a check that takes a
// second makes the attempt (and the step's wall time) a second long.
TEST_F(EngineTest, AnAttemptsTimeIncludesItsChecks) {
  auto out = run(R"(
steps:
  - {id: a, sh: 'echo A', post: [{shell_zero: 'sleep 0.6'}]}
)");
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto a = attempts(out.run_id, "a");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_GE(a[0].duration_ms, 600);
  EXPECT_LE(a[0].duration_ms, a[0].finished_at - a[0].started_at + 5);
  EXPECT_EQ(step(out.run_id, "a").wall_ms, a[0].duration_ms);
}

TEST_F(EngineTest, AStepsAttemptsBudgetCountsAcrossResumes) {
  auto out = run(R"(
steps:
  - id: s
    attempts: 5
    budget: {attempts: 2}
    sh: 'echo try >> tries.log; exit $ORCH_ATTEMPT'
)");
  EXPECT_EQ(out.status, RunStatus::Failed) << out.reason;
  EXPECT_EQ(attempts(out.run_id, "s").size(), 2u);
  EXPECT_EQ(
      step(out.run_id, "s").reason.rfind("step budget exhausted: attempts 2 made of 2; last failure: ", 0),
      0u)
      << step(out.run_id, "s").reason;
  auto again = resume(out.run_id);
  EXPECT_EQ(again.status, RunStatus::Failed) << again.reason;
  EXPECT_EQ(read_file(ws() / "tries.log"), "try\ntry\n") << "the resume gave the step more attempts";
  EXPECT_EQ(step(out.run_id, "s").reason, "step budget exhausted: attempts 2 made of 2");

  // A done step that --replan re-runs is a new version of it: its attempts budget starts over.
  auto done = run("steps:\n  - {id: d, budget: {attempts: 1}, sh: 'echo v1'}\n");
  ASSERT_EQ(done.status, RunStatus::Succeeded) << done.reason;
  write_file(dir_ / "v2.yaml", "steps:\n  - {id: d, budget: {attempts: 1}, sh: 'echo v2'}\n");
  auto replanned = resume(done.run_id, (dir_ / "v2.yaml").string());
  EXPECT_EQ(replanned.status, RunStatus::Succeeded) << replanned.reason;
  EXPECT_EQ(step(done.run_id, "d").result, "v2");
}

// Reserved at its declared maximum, a step may still spend more than its own
// budget; it is done (its work is kept) and the overrun is said.
TEST_F(EngineTest, AStepThatSucceedsOverItsOwnBudgetIsDoneAndSaysSo) {
  RunOutcome out = run(R"(
steps:
  - id: s
    budget: {tokens: 10, cost_usd: 0.01}
    sh: 'echo "{\"tokens_in\": 30, \"tokens_out\": 30, \"cost_usd\": 2}" > "$ORCH_USAGE_FILE"'
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded);
  StepRecord s = step(out.run_id, "s");
  EXPECT_EQ(s.status, StepStatus::Done);
  EXPECT_EQ(s.reason, "done over its budget: tokens 60 spent of 10");
  auto over = store_->events_of_kind(out.run_id, "step_over_budget");
  ASSERT_TRUE(over);
  ASSERT_EQ(over->size(), 1u);
  EXPECT_EQ(over->front().step_id, "s");
}

// `writes: ["."]` with the store inside the workspace (the default .orch/): a
// snapshot would copy the ledger into itself until paths were too long, and a
// restore would put an old ledger over the live one. The attempt fails, saying
// why, and nothing is copied.
TEST_F(EngineTest, AWritesFolderThatHoldsTheStoreFailsTheAttemptWithoutCopyingIt) {
  auto inside = open_sqlite_store(ws() / ".orch" / "orch.db");
  ASSERT_TRUE(inside) << inside.error().message;
  store_ = std::move(*inside);
  RunOutcome out = run(R"(
steps:
  - {id: s, writes: ["."], sh: 'echo changed > a.txt', attempts: 1}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  StepRecord s = step(out.run_id, "s");
  EXPECT_NE(s.reason.find("is or holds orch's store"), std::string::npos) << s.reason;
  EXPECT_FALSE(fs::exists(ws() / "a.txt")) << "the step must not have run";
  std::size_t entries = 0;
  for (auto it = fs::recursive_directory_iterator(ws() / ".orch"); it != fs::recursive_directory_iterator();
       ++it)
    ++entries;
  EXPECT_LT(entries, 20u) << "the snapshot copied the store";
  // A path inside the store is refused the same way: restoring it would put an
  // old ledger under the live WAL.
  RunOutcome inner = run(R"(
steps:
  - {id: s, writes: [.orch/orch.db], sh: 'true', attempts: 1}
)");
  EXPECT_EQ(inner.status, RunStatus::Failed);
  EXPECT_NE(step(inner.run_id, "s").reason.find("is or holds orch's store"), std::string::npos)
      << step(inner.run_id, "s").reason;
}

// A ledger kept in the workspace itself (`--store orch.db`): the workspace's
// other files are the user's, and a `writes:` of them is snapshotted as usual.
// What orch keeps there (the ledger, its -wal, runs/, locks/) is refused, and not
// retried: every attempt would be refused the same way.
TEST_F(EngineTest, WithTheLedgerInTheWorkspaceOnlyWhatOrchKeepsThereIsRefused) {
  auto beside = open_sqlite_store(ws() / "orch.db");
  ASSERT_TRUE(beside) << beside.error().message;
  store_ = std::move(*beside);
  write_file(ws() / "f.txt", "before\n");
  RunOutcome mine = run(R"(
steps:
  - {id: s, writes: [f.txt, build], sh: 'mkdir -p build && echo x > build/o && echo after > f.txt && exit 1',
     attempts: 1}
)");
  EXPECT_EQ(mine.status, RunStatus::Failed);
  EXPECT_EQ(step(mine.run_id, "s").reason.find("orch's store"), std::string::npos)
      << step(mine.run_id, "s").reason;
  EXPECT_EQ(read_file(ws() / "f.txt"), "before\n") << "restored after the failed attempt";
  EXPECT_FALSE(fs::exists(ws() / "build")) << "a folder the attempt made is removed";
  for (const char* owned : {"orch.db", "orch.db-wal", "runs", "runs/x", "locks"}) {
    RunOutcome out =
        run(fmt::format("steps:\n  - {{id: s, writes: ['{}'], sh: 'true', attempts: 3}}\n", owned));
    EXPECT_EQ(out.status, RunStatus::Failed) << owned;
    EXPECT_NE(step(out.run_id, "s").reason.find("is or holds orch's store"), std::string::npos) << owned;
    auto attempts = store_->attempts(out.run_id, "s");
    ASSERT_TRUE(attempts);
    ASSERT_EQ(attempts->size(), 1u) << owned << ": retried";
    EXPECT_EQ((*attempts)[0].ending, AttemptEnding::SetupFailed);
  }
}

TEST_F(EngineTest, ARetryIsToldWhyTheLastAttemptFailed) {
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

TEST_F(EngineTest, SameFailureTwiceStopsRetrying) {
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

TEST_F(EngineTest, AttemptsCapEndsWithTheLastReason) {
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

TEST_F(EngineTest, TokenBudgetIsNeverOvershotByAParallelWave) {
  // Each step reserves 100 tokens and spends 90; the plan has 250. With -j 8 only
  // two can ever be in flight, and after two have settled (180 spent) no third fits.
  std::string yaml = "concurrency: 8\nbudget: {tokens: 250}\nsteps:\n";
  for (int i = 0; i < 6; ++i) {
    yaml += "  - id: s" + std::to_string(i) +
            "\n    budget: {tokens: 100}\n"
            "    sh: 'echo \"{\\\"tokens_in\\\": 40, \\\"tokens_out\\\": 50}\" > \"$ORCH_USAGE_FILE\"; "
            "mkdir -p live; touch live/$ORCH_STEP_ID; n=$(ls live | wc -l); echo $n >> peak.txt; sleep 0.2; "
            "rm live/$ORCH_STEP_ID'\n";
  }
  auto out = run(yaml);
  EXPECT_EQ(out.status, RunStatus::BudgetExhausted) << out.reason;
  EXPECT_EQ(out.exit_code(), 4);
  auto run_row = *store_->find_run(out.run_id);
  EXPECT_LE(run_row->spent_tokens, 250);
  EXPECT_EQ(run_row->spent_tokens, 180);
  int done = 0, skipped = 0;
  auto steps = *store_->steps(out.run_id);
  for (const auto& s : steps) {
    if (s.status == StepStatus::Done) ++done;
    if (s.status == StepStatus::Skipped) {
      ++skipped;
      EXPECT_NE(s.reason.find("budget exhausted"), std::string::npos) << s.reason;
    }
  }
  EXPECT_EQ(done, 2);
  EXPECT_EQ(skipped, 4);
  for (char c : read_file(ws() / "peak.txt")) {
    if (c != '\n') {
      EXPECT_LE(c, '2');
    }
  }
}

// A ready step that cannot fit in what is left of the plan's budget, nothing in
// flight, and a retry waiting for its delay that does fit: the retry is made
// (the run used to stop as budget_exhausted at once, failing it "not retried").
TEST_F(EngineTest, ABudgetStopWaitsForARetryThatFits) {
  auto out = run(R"(
concurrency: 2
budget: {tokens: 100}
steps:
  - id: flaky
    attempts: 2
    retry_delay: 200ms
    budget: {tokens: 30}
    sh: 'echo "{\"tokens_in\": 10}" > "$ORCH_USAGE_FILE"; [ "$ORCH_ATTEMPT" = 2 ]'
  - {id: big, budget: {tokens: 95}, run: ["true"]}
)");
  // `big` never fits (10 spent + 95 > 100); the run ends out of budget, after the retry.
  EXPECT_EQ(out.status, RunStatus::BudgetExhausted) << out.reason;
  StepRecord flaky = step(out.run_id, "flaky");
  EXPECT_EQ(flaky.status, StepStatus::Done) << flaky.reason;
  EXPECT_EQ(attempts(out.run_id, "flaky").size(), 2u);
  EXPECT_EQ(step(out.run_id, "big").status, StepStatus::Skipped);
  EXPECT_EQ((*store_->find_run(out.run_id))->spent_tokens, 20);

  // A waiting retry that cannot fit either (`other` spent 50 meanwhile, and the
  // retry reserves the 50 left of its own 60): the run stops without waiting for it.
  ManualClock clock;
  EngineOptions options;
  options.clock = &clock;
  auto stuck = run(R"(
concurrency: 3
budget: {tokens: 100}
steps:
  - id: flaky
    attempts: 2
    retry_delay: 1h
    budget: {tokens: 60}
    sh: 'echo "{\"tokens_in\": 10}" > "$ORCH_USAGE_FILE"; exit 1'
  - {id: other, sh: 'echo "{\"tokens_in\": 50}" > "$ORCH_USAGE_FILE"'}
  - {id: big, budget: {tokens: 95}, run: ["true"]}
)",
                   options);
  EXPECT_EQ(stuck.status, RunStatus::BudgetExhausted) << stuck.reason;
  EXPECT_EQ(attempts(stuck.run_id, "flaky").size(), 1u);
  EXPECT_EQ(step(stuck.run_id, "flaky").status, StepStatus::Failed);
  RunRecord row = **store_->find_run(stuck.run_id);
  EXPECT_LT(row.finished_at - row.created_at, 3600 * 1000) << "it waited for a retry that could not fit";
}

TEST_F(EngineTest, PlanAttemptBudgetCountsOnlyAttemptsThatRan) {
  // The seed's step budget counted steps that never ran, so a plan as long as its
  // budget failed before starting. Here 3 steps with attempts: 3 all run.
  auto out = run(R"(
budget: {attempts: 3}
concurrency: 1
steps:
  - {id: a, run: ["true"]}
  - {id: b, run: ["true"]}
  - {id: c, run: ["true"]}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto out2 = run(R"(
budget: {attempts: 2}
concurrency: 1
steps:
  - {id: a, run: ["true"]}
  - {id: b, run: ["true"]}
  - {id: c, run: ["true"]}
)");
  EXPECT_EQ(out2.status, RunStatus::BudgetExhausted);
  EXPECT_EQ(step(out2.run_id, "c").status, StepStatus::Skipped);
  EXPECT_EQ((*store_->find_run(out2.run_id))->spent_attempts, 2);
}

TEST_F(EngineTest, AZeroBudgetAdmitsStepsThatSpendNothingButASpentOneDoesNot) {
  auto out = run(R"(
budget: {tokens: 0, cost_usd: 0}
steps:
  - {id: free, budget: {tokens: 0, cost_usd: 0}, run: ["true"]}
  - id: costly
    deps: [free]
    budget: {tokens: 0}
    sh: 'echo "{\"tokens_in\": 5}" > "$ORCH_USAGE_FILE"'
  - {id: after, deps: [costly], run: ["true"]}
)");
  EXPECT_EQ(step(out.run_id, "free").status, StepStatus::Done);
  // `costly` ran (it reserved nothing) but spent 5 tokens of 0: nothing more may start.
  EXPECT_EQ(out.status, RunStatus::BudgetExhausted) << out.reason;
  EXPECT_EQ(step(out.run_id, "after").status, StepStatus::Skipped);
  // A budget spent to the last token is exhausted, even for a step that reserves nothing.
  auto exact = run(R"(
budget: {tokens: 5}
steps:
  - {id: spends, sh: 'echo "{\"tokens_in\": 5}" > "$ORCH_USAGE_FILE"'}
  - {id: free, deps: [spends], run: ["true"]}
)");
  EXPECT_EQ(step(exact.run_id, "spends").status, StepStatus::Done);
  EXPECT_EQ(exact.status, RunStatus::BudgetExhausted) << exact.reason;
  EXPECT_EQ(step(exact.run_id, "free").status, StepStatus::Skipped);
  EXPECT_NE(exact.reason.find("tokens: 5 spent of 5"), std::string::npos) << exact.reason;
}

TEST_F(EngineTest, FailedAttemptsAreChargedTheirTokens) {
  auto out = run(R"(
steps:
  - id: s
    attempts: 2
    sh: 'echo "{\"tokens_in\": 10, \"tokens_out\": 5, \"cost_usd\": 0.25}" > "$ORCH_USAGE_FILE"; exit $ORCH_ATTEMPT'
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto row = *store_->find_run(out.run_id);
  EXPECT_EQ(row->spent_tokens, 30);
  EXPECT_DOUBLE_EQ(row->spent_cost_usd, 0.5);
  EXPECT_EQ(step(out.run_id, "s").tokens_in, 20);
}

// The run row's spent totals may lag the attempts after kill -9; resume charges
// the budget with what the attempts rows say was spent.
TEST_F(EngineTest, ResumeChargesTheBudgetFromTheAttemptsNotTheRunRow) {
  write_file(ws() / "fail-b", "");
  auto out = run(R"(
budget: {tokens: 250}
steps:
  - id: a
    sh: 'echo "{\"tokens_in\": 200}" > "$ORCH_USAGE_FILE"'
  - id: b
    deps: [a]
    attempts: 1
    sh: 'echo "{\"tokens_in\": 100}" > "$ORCH_USAGE_FILE"; [ ! -e fail-b ]'
)");
  ASSERT_EQ(out.status, RunStatus::Failed) << out.reason;
  EXPECT_EQ(store_->find_run(out.run_id)->value().spent_tokens, 300);
  auto totals = store_->attempt_totals(out.run_id);
  ASSERT_TRUE(totals);
  EXPECT_EQ(totals->tokens, 300);
  EXPECT_EQ(totals->counted, 2);
  // As if the driver died before its last run-row write: the row says nothing was spent.
  RunRecord stale = store_->find_run(out.run_id)->value();
  stale.spent_tokens = 0;
  stale.spent_attempts = 0;
  ASSERT_TRUE(store_->update_run(stale));
  fs::remove(ws() / "fail-b");
  auto again = resume(out.run_id);
  // 300 of 250 tokens are already spent: b is not tried again (with the stale
  // row's 0 it would have been, and the run would have "succeeded").
  EXPECT_EQ(again.status, RunStatus::BudgetExhausted) << again.reason;
  EXPECT_EQ(store_->find_run(out.run_id)->value().spent_tokens, 300);
  EXPECT_EQ(attempts(out.run_id, "b").size(), 1u);
}

TEST_F(EngineTest, WritesAreRestoredWhenAnAttemptFailsItsChecks) {
  write_file(ws() / "config.txt", "original\n");
  auto out = run(R"(
steps:
  - id: edit
    writes: [config.txt, new.txt, gen]
    sh: 'echo broken > config.txt; echo x > new.txt; mkdir -p gen; echo y > gen/f'
    post: [{file_contains: {path: config.txt, text: "fixed"}}]
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(read_file(ws() / "config.txt"), "original\n");
  EXPECT_FALSE(fs::exists(ws() / "new.txt"));
  EXPECT_FALSE(fs::exists(ws() / "gen"));
}

// A `writes:` path that is a symlink: the file it points to and the link itself
// are both put back, whether the attempt wrote through the link or replaced it.
TEST_F(EngineTest, AWritesPathThatIsASymlinkIsPutBackLinkAndTarget) {
  write_file(ws() / "real.txt", "original\n");
  fs::create_symlink("real.txt", ws() / "link");
  auto out = run(R"(
steps:
  - {id: a, writes: [link], attempts: 1, sh: 'echo through > link; rm link; echo plain > link; exit 1'}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(read_file(ws() / "real.txt"), "original\n");
  ASSERT_TRUE(fs::is_symlink(ws() / "link"));
  EXPECT_EQ(fs::read_symlink(ws() / "link"), "real.txt");
  EXPECT_EQ(step(out.run_id, "a").reason.find("could not be put back"), std::string::npos)
      << step(out.run_id, "a").reason;
}

// A snapshot is only space once its attempt's end is in the ledger: it goes,
// whether the attempt succeeded or its writes were put back.
TEST_F(EngineTest, SnapshotsAreRemovedOnceTheirAttemptHasEnded) {
  write_file(ws() / "a.txt", "a\n");
  auto out = run(R"(
on_failure: continue
steps:
  - {id: ok, writes: [a.txt], sh: 'echo b > a.txt'}
  - {id: bad, writes: [b.txt], sh: 'echo x > b.txt; exit 1', attempts: 2, retry_delay: 0s}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(read_file(ws() / "a.txt"), "b\n");
  EXPECT_FALSE(fs::exists(ws() / "b.txt"));
  int snapshots = 0;
  for (const char* id : {"ok", "bad"})
    for (const auto& a : attempts(out.run_id, id)) {
      ASSERT_FALSE(a.snapshot_dir.empty());
      ++snapshots;
      EXPECT_FALSE(fs::exists(a.snapshot_dir)) << a.snapshot_dir;
    }
  EXPECT_EQ(snapshots, 3);
}

// What a failed attempt started outside its process group is killed before its
// writes are put back: it cannot change them again afterwards.
TEST_F(EngineTest, WhatAFailedAttemptLeftRunningIsKilledBeforeItsWritesAreRestored) {
  write_file(ws() / "f.txt", "original\n");
  auto out = run(R"(
steps:
  - {id: a, writes: [f.txt], attempts: 1, sh: 'setsid sh -c "sleep 0.4; echo late > f.txt" </dev/null >/dev/null 2>&1 & sleep 0.1; echo now > f.txt; exit 1'}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(read_file(ws() / "f.txt"), "original\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  EXPECT_EQ(read_file(ws() / "f.txt"), "original\n") << "a leftover process changed it after the restore";
}

// Writes that could not be put back leave the workspace in no state to retry
// in: the step fails at once, saying so, and the snapshot is kept for a human.
TEST_F(EngineTest, AStepWhoseWritesCannotBePutBackIsNotRetried) {
  socket_in_workspace_folder_d();
  auto out = run(R"(
steps:
  - {id: s, writes: [d], sh: 'rm d/s.sock; exit 1', attempts: 3, retry_delay: 0s}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto tries = attempts(out.run_id, "s");
  ASSERT_EQ(tries.size(), 1u) << "a retry would start from the failed attempt's leftovers";
  StepRecord s = step(out.run_id, "s");
  EXPECT_NE(s.reason.find("not retried: its writes could not be put back"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("a socket or device cannot be made again"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find(tries[0].snapshot_dir), std::string::npos) << s.reason;
  EXPECT_TRUE(fs::exists(fs::path(tries[0].snapshot_dir) / "manifest.json"));
}

// Two steps that may change the same file never run at once: a failing one's
// restore would undo the other's work.
TEST_F(EngineTest, StepsWhoseWritesOverlapTakeTurns) {
  write_file(ws() / "shared.txt", "orig\n");
  auto out = run(R"(
concurrency: 4
on_failure: continue
steps:
  - {id: a, writes: [shared.txt], sh: 'sleep 0.3; exit 1', attempts: 1}
  - {id: b, writes: [., other], sh: 'echo from-b > shared.txt'}
  - {id: c, deps: [b], sh: 'cat shared.txt'}
  - {id: free, writes: [elsewhere.txt], sh: 'sleep 0.3; echo x > elsewhere.txt'}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "c").result, "from-b");
  EXPECT_EQ(read_file(ws() / "shared.txt"), "from-b\n");
  auto a = attempts(out.run_id, "a").at(0);
  auto b = attempts(out.run_id, "b").at(0);
  auto f = attempts(out.run_id, "free").at(0);
  EXPECT_TRUE(a.finished_at <= b.started_at || b.finished_at <= a.started_at) << "a and b overlapped";
  EXPECT_TRUE(f.started_at < a.finished_at && a.started_at < f.finished_at)
      << "a step whose writes do not overlap runs alongside";
}

// The same through a symlink: `alias/shared.txt` is `out/shared.txt`.
TEST_F(EngineTest, StepsWhoseWritesOverlapThroughASymlinkTakeTurns) {
  fs::create_directories(ws() / "out");
  fs::create_directory_symlink("out", ws() / "alias");
  write_file(ws() / "out" / "shared.txt", "orig\n");
  auto out = run(R"(
concurrency: 4
on_failure: continue
steps:
  - {id: a, writes: [alias/shared.txt], sh: 'sleep 0.3; exit 1', attempts: 1}
  - {id: b, writes: [out], sh: 'echo from-b > out/shared.txt'}
  - {id: c, deps: [b], sh: 'cat out/shared.txt'}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "c").result, "from-b");
  EXPECT_EQ(read_file(ws() / "out" / "shared.txt"), "from-b\n");
  auto a = attempts(out.run_id, "a").at(0);
  auto b = attempts(out.run_id, "b").at(0);
  EXPECT_TRUE(a.finished_at <= b.started_at || b.finished_at <= a.started_at) << "a and b overlapped";
}

TEST_F(EngineTest, PostconditionsDecideNotTheExitCode) {
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
TEST_F(EngineTest, ShellZeroGetsTheResultInAFileAndSmallOnesInTheEnvironment) {
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

TEST_F(EngineTest, TimeoutKillsAndRecordsTimedOut) {
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

// A step that reports its usage and then runs past its timeout has spent what it
// reported: the attempt is charged, and the plan's budget it went past says so.
TEST_F(EngineTest, UsageReportedBeforeATimeoutIsCharged) {
  auto out = run(R"(
budget: {tokens: 300, cost_usd: 1}
defaults: {kill_grace: 100ms}
steps:
  - id: slow
    attempts: 1
    timeout: 300ms
    sh: 'echo "{\"tokens_in\":400,\"tokens_out\":100,\"cost_usd\":5}" > "$ORCH_USAGE_FILE"; sleep 30'
  - {id: after, deps: [slow], run: ["true"]}
)");
  EXPECT_EQ(out.status, RunStatus::Failed) << out.reason;
  auto as = attempts(out.run_id, "slow");
  ASSERT_EQ(as.size(), 1u);
  EXPECT_EQ(as[0].status, AttemptStatus::TimedOut);
  EXPECT_EQ(as[0].tokens_in, 400);
  EXPECT_EQ(as[0].tokens_out, 100);
  EXPECT_DOUBLE_EQ(as[0].cost_usd, 5);
  StepRecord slow = step(out.run_id, "slow");
  EXPECT_EQ(slow.tokens_in + slow.tokens_out, 500);
  auto row = *store_->find_run(out.run_id);
  EXPECT_EQ(row->spent_tokens, 500);
  EXPECT_DOUBLE_EQ(row->spent_cost_usd, 5);
  EXPECT_NE(out.reason.find("over the plan's budget: tokens: 500 spent of 300"), std::string::npos)
      << out.reason;
  EXPECT_EQ(store_->events_of_kind(out.run_id, "budget_overspent")->size(), 1u);
}

TEST_F(EngineTest, ResumeNeverRerunsDoneStepsAndRetriesFailedOnes) {
  auto out = run(R"(
concurrency: 1
steps:
  - id: a
    sh: 'echo ran >> a.log'
  - id: b
    deps: [a]
    sh: 'echo ran >> b.log; test -f fixed'
  - id: c
    deps: [b]
    sh: 'echo "${steps.a.result}" > c.txt; echo ran >> c.log'
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "c").status, StepStatus::Skipped);
  write_file(ws() / "fixed", "");
  auto again = resume(out.run_id);
  EXPECT_EQ(again.status, RunStatus::Succeeded) << again.reason;
  EXPECT_EQ(read_file(ws() / "a.log"), "ran\n");
  EXPECT_EQ(read_file(ws() / "b.log"), "ran\nran\n");
  EXPECT_EQ(read_file(ws() / "c.log"), "ran\n");
  auto bs = attempts(out.run_id, "b");
  ASSERT_EQ(bs.size(), 2u);
  EXPECT_EQ(bs[1].number, 2);
}

// A plan of more than 256 KiB is parsed and validated on a second thread while
// the step rows are read and the scheduler's state is built: the same outcome.
TEST_F(EngineTest, ResumeOfALargePlanGoesOnWhereItStopped) {
  const std::string padding(300 * 1024, 'g');
  std::string yaml = "concurrency: 1\nsteps:\n  - {id: a, goal: " + padding + ", sh: 'echo ran >> a.log'}\n";
  for (int i = 0; i < 50; ++i)
    yaml += fmt::format(
        "  - {{id: s{}, deps: [a], executor: builtin:echo, inputs: {{text: \"${{steps.a.result}}{}\"}}}}\n",
        i, i);
  yaml += "  - {id: last, deps: [s49], sh: 'echo ran >> last.log; test -f fixed'}\n";
  ASSERT_GT(yaml.size(), 256u * 1024);
  auto out = run(yaml);
  ASSERT_EQ(out.status, RunStatus::Failed) << out.reason;
  write_file(ws() / "fixed", "");
  auto again = resume(out.run_id);
  EXPECT_EQ(again.status, RunStatus::Succeeded) << again.reason;
  EXPECT_EQ(read_file(ws() / "a.log"), "ran\n");
  EXPECT_EQ(read_file(ws() / "last.log"), "ran\nran\n");
  EXPECT_EQ(step(out.run_id, "s7").result, "7");
  EXPECT_EQ(step(out.run_id, "a").goal, padding);

  // An invalid replacement of a large plan: refused with its problems, nothing recorded.
  const auto events_before = store_->events(out.run_id)->size();
  std::string broken = yaml;
  broken.replace(broken.find("deps: [s49]"), 11, "deps: [s99]");
  write_file(dir_ / "broken.yaml", broken);
  Engine engine(*store_, EngineOptions{});
  auto refused = engine.resume(out.run_id, (dir_ / "broken.yaml").string());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(refused.error().message.find("s99"), std::string::npos) << refused.error().message;
  EXPECT_EQ(store_->events(out.run_id)->size(), events_before);
  EXPECT_EQ((*store_->find_run(out.run_id))->plan_version, 1);
}

TEST_F(EngineTest, ReplanRerunsChangedStepsAndTheirDescendantsOnly) {
  std::string v1 = R"(
concurrency: 1
steps:
  - {id: a, sh: 'echo a >> a.log'}
  - {id: b, deps: [a], sh: 'echo b1 >> b.log'}
  - {id: c, deps: [b], sh: 'echo c >> c.log'}
  - {id: d, deps: [a], sh: 'echo d >> d.log'}
)";
  auto out = run(v1);
  ASSERT_EQ(out.status, RunStatus::Succeeded);
  std::string v2 = v1;
  v2.replace(v2.find("b1"), 2, "b2");
  write_file(dir_ / "plan2.yaml", v2);
  auto again = resume(out.run_id, (dir_ / "plan2.yaml").string());
  EXPECT_EQ(again.status, RunStatus::Succeeded) << again.reason;
  EXPECT_EQ(read_file(ws() / "a.log"), "a\n");
  EXPECT_EQ(read_file(ws() / "b.log"), "b1\nb2\n");
  EXPECT_EQ(read_file(ws() / "c.log"), "c\nc\n");
  EXPECT_EQ(read_file(ws() / "d.log"), "d\n");
  EXPECT_EQ((*store_->find_run(out.run_id))->plan_version, 2);
  EXPECT_EQ((*store_->find_run(out.run_id))->plan_path, (dir_ / "plan2.yaml").string())
      << "the run is the edited plan's now";
}

// Steps --replan removes keep their rows, after the plan's steps: no two rows
// share an idx when a new step takes a removed one's place.
TEST_F(EngineTest, ReplanNumbersRemovedStepsAfterThePlansSteps) {
  auto out = run(R"(
steps:
  - {id: a, sh: 'true'}
  - {id: b, sh: 'true'}
  - {id: c, sh: 'exit 1', attempts: 1}
)");
  ASSERT_EQ(out.status, RunStatus::Failed);
  write_file(dir_ / "plan2.yaml", R"(
steps:
  - {id: a, sh: 'true'}
  - {id: b2, sh: 'true'}
  - {id: c2, sh: 'true'}
)");
  auto again = resume(out.run_id, (dir_ / "plan2.yaml").string());
  EXPECT_EQ(again.status, RunStatus::Succeeded) << again.reason;
  std::map<std::string, int> idx;
  std::set<int> seen;
  auto rows = store_->steps(out.run_id);
  ASSERT_TRUE(rows);
  for (const StepRecord& r : *rows) {
    idx[r.step_id] = r.idx;
    EXPECT_TRUE(seen.insert(r.idx).second) << "two rows with idx " << r.idx;
  }
  EXPECT_EQ(idx, (std::map<std::string, int>{{"a", 0}, {"b2", 1}, {"c2", 2}, {"b", 3}, {"c", 4}}));
  EXPECT_EQ(step(out.run_id, "b").status, StepStatus::Done);
  EXPECT_EQ(step(out.run_id, "c").status, StepStatus::Skipped);
}

// A done step taken out of the plan and put back after its dependency ran
// again did not run on what the dependency now does: it runs again, although
// nothing of its own changed. An edited plan's concurrency is the run's from then on.
TEST_F(EngineTest, ReplanRerunsAStepPutBackAfterItsDependencyRanAgain) {
  const std::string v1 = R"(
steps:
  - {id: a, sh: 'echo one > a.txt'}
  - {id: b, deps: [a], sh: 'cp a.txt b.txt'}
)";
  auto out = run(v1);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  ASSERT_EQ(read_file(ws() / "b.txt"), "one\n");
  write_file(dir_ / "v2.yaml", "concurrency: 1\nsteps:\n  - {id: a, sh: 'echo two > a.txt'}\n");
  ASSERT_EQ(resume(out.run_id, (dir_ / "v2.yaml").string()).status, RunStatus::Succeeded);
  EXPECT_EQ((*store_->find_run(out.run_id))->concurrency, 1);
  // b as it was, after a as it is now: b's fingerprint is unchanged, a's too.
  write_file(dir_ / "v3.yaml", R"(
steps:
  - {id: a, sh: 'echo two > a.txt'}
  - {id: b, deps: [a], sh: 'cp a.txt b.txt'}
)");
  auto again = resume(out.run_id, (dir_ / "v3.yaml").string());
  EXPECT_EQ(again.status, RunStatus::Succeeded) << again.reason;
  EXPECT_EQ(read_file(ws() / "b.txt"), "two\n") << "b was not run again after a";
  EXPECT_EQ(attempts(out.run_id, "a").size(), 2u);
  EXPECT_EQ(attempts(out.run_id, "b").size(), 2u);
  const auto resets = store_->events_of_kind(out.run_id, "step_reset");
  ASSERT_TRUE(resets);
  ASSERT_FALSE(resets->empty());
  EXPECT_EQ(resets->back().step_id, "b");
  EXPECT_NE(resets->back().data_json.find("dependency 'a' ran again after it"), std::string::npos)
      << resets->back().data_json;
}

// A result_json check's schema file is part of what the step is: an edited
// schema re-checks the step on --replan, and so does a shell_zero's timeout.
TEST_F(EngineTest, ReplanRerunsAStepWhoseSchemaFileChanged) {
  write_file(dir_ / "schema.json", R"({"type": "object", "required": ["x"]})");
  std::string v1 = R"(
steps:
  - {id: a, sh: 'echo ran >> a.log; echo "{\"x\": 1}"', post: [{result_json: schema.json}]}
  - {id: b, sh: 'echo ran >> b.log', post: [{shell_zero: "true"}]}
)";
  auto out = run(v1);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  write_file(dir_ / "schema.json", R"({"type": "object", "required": ["y"]})");
  std::string v2 = v1;
  v2.replace(v2.find("{shell_zero: \"true\"}"), 20, "{shell_zero: {cmd: \"true\", timeout: 5s}}");
  write_file(dir_ / "plan2.yaml", v2);
  auto again = resume(out.run_id, (dir_ / "plan2.yaml").string());
  EXPECT_EQ(again.status, RunStatus::Failed) << "a no longer holds under the edited schema";
  EXPECT_EQ(read_file(ws() / "a.log"), "ran\nran\n");
  EXPECT_EQ(read_file(ws() / "b.log"), "ran\nran\n");
}

// Writing out what a step already had by default changes nothing: `post:
// exit_zero` on a shell step, a shell_zero check's default timeout of 60 s.
TEST_F(EngineTest, ReplanKeepsStepsThatOnlyWroteOutTheirDefaults) {
  std::string v1 = R"(
steps:
  - {id: a, sh: 'echo ran >> a.log'}
  - {id: b, deps: [a], sh: 'echo ran >> b.log', post: [{shell_zero: "true"}]}
  - {id: c, sh: 'echo ran >> c.log'}
)";
  auto out = run(v1);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  std::string v2 = R"(
steps:
  - {id: a, sh: 'echo ran >> a.log', post: [exit_zero]}
  - {id: b, deps: [a], sh: 'echo ran >> b.log', post: [{kind: shell_zero, cmd: "true", timeout: 60s}]}
  - {id: c, sh: 'echo ran >> c.log', post: [exit_zero, result_nonempty]}
)";
  write_file(dir_ / "plan2.yaml", v2);
  auto again = resume(out.run_id, (dir_ / "plan2.yaml").string());
  EXPECT_EQ(again.status, RunStatus::Failed) << "c's new check fails: it prints nothing";
  EXPECT_EQ(read_file(ws() / "a.log"), "ran\n");
  EXPECT_EQ(read_file(ws() / "b.log"), "ran\n");
  EXPECT_EQ(read_file(ws() / "c.log"), "ran\nran\n") << "a check added to the default is a change";
}

// A done step that --replan re-runs (its command changed, or an ancestor's did)
// is a new version of the step, with its own budget again; the plan's totals
// keep what every version spent.
TEST_F(EngineTest, AStepReplannedToRunAgainHasItsOwnBudgetAgain) {
  std::string v1 = R"(
steps:
  - id: a
    budget: {tokens: 30}
    sh: 'echo "{\"tokens_in\": 30}" > "$ORCH_USAGE_FILE"; echo v1'
  - id: b
    deps: [a]
    budget: {tokens: 5}
    sh: 'echo "{\"tokens_in\": 5}" > "$ORCH_USAGE_FILE"; echo "${steps.a.result}"'
)";
  auto out = run(v1);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  std::string v2 = v1;
  v2.replace(v2.find("echo v1"), 7, "echo v2");
  write_file(dir_ / "plan2.yaml", v2);
  auto again = resume(out.run_id, (dir_ / "plan2.yaml").string());
  EXPECT_EQ(again.status, RunStatus::Succeeded) << again.reason;
  EXPECT_EQ(attempts(out.run_id, "a").size(), 2u);
  EXPECT_EQ(attempts(out.run_id, "b").size(), 2u);
  StepRecord a = step(out.run_id, "a");
  EXPECT_EQ(a.status, StepStatus::Done) << a.reason;
  EXPECT_EQ(a.tokens_in, 30);
  StepRecord b = step(out.run_id, "b");
  EXPECT_EQ(b.status, StepStatus::Done) << b.reason;
  EXPECT_EQ(b.result, "v2");
  EXPECT_EQ(b.tokens_in, 5);
  EXPECT_EQ((*store_->find_run(out.run_id))->spent_tokens, 70);
}

// A resume that the budget stops before anything starts does not call a step
// that failed in an earlier drive "not started": it failed, and was not retried.
TEST_F(EngineTest, AStepWithAttemptsFromAnEarlierDriveIsNotRetriedNotSkipped) {
  auto out = run(R"(
budget: {attempts: 2}
steps:
  - {id: a, sh: 'exit $ORCH_ATTEMPT', attempts: 5, retry_delay: 0s}
)");
  ASSERT_EQ(out.status, RunStatus::BudgetExhausted) << out.reason;
  auto again = resume(out.run_id);
  EXPECT_EQ(again.status, RunStatus::BudgetExhausted) << again.reason;
  StepRecord a = step(out.run_id, "a");
  EXPECT_EQ(a.status, StepStatus::Failed) << a.reason;
  EXPECT_NE(a.reason.find("not retried (budget exhausted"), std::string::npos) << a.reason;
  EXPECT_EQ(a.reason.find("not started"), std::string::npos) << a.reason;
  EXPECT_EQ(attempts(out.run_id, "a").size(), 2u);
  // More resumes that stop the same way say the same thing: the reason does not
  // nest one "not retried (...); last failure: not retried (...)" deeper each time.
  const std::string first = a.reason;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(resume(out.run_id).status, RunStatus::BudgetExhausted);
  a = step(out.run_id, "a");
  EXPECT_EQ(a.reason, first);
  EXPECT_EQ(a.reason.find("not retried", a.reason.find("last failure:")), std::string::npos) << a.reason;
  EXPECT_EQ(attempts(out.run_id, "a").size(), 2u);
  // Each step_failed event names the attempt that failed, also when a resume
  // failed it without running it.
  int failed_events = 0;
  const std::vector<EventRecord> events = *store_->events(out.run_id);
  for (const EventRecord& e : events) {
    if (e.kind != "step_failed") continue;
    ++failed_events;
    EXPECT_EQ(e.attempt, 2) << e.data_json;
  }
  EXPECT_EQ(failed_events, 4);
}

// An abort names the step that stopped the run, and the others that failed
// while it stopped (running ones finish).
TEST_F(EngineTest, AnAbortNamesEveryStepThatFailed) {
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

TEST_F(EngineTest, ASecondDriverOfTheSameRunIsRefused) {
  auto out = run("steps:\n  - {id: a, run: [\"false\"]}\n");
  auto lock = store_->lock(out.run_id);
  ASSERT_TRUE(lock);
  Engine engine(*store_, EngineOptions{});
  auto again = engine.resume(out.run_id, std::nullopt);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::Busy);
  EXPECT_NE(again.error().message.find("already being driven"), std::string::npos);
}

// While a process holds the run's lock, a row that says interrupted is one a
// starting resume has yet to rewrite: `orch cancel` waits for that driver to end
// the run, instead of taking the stale row for its answer.
TEST_F(EngineTest, ACancelWaitsForTheDriverThatHoldsTheLockNotTheRowItHasYetToWrite) {
  auto out = run("steps:\n  - {id: a, run: [\"false\"]}\n");
  RunRecord row = **store_->find_run(out.run_id);
  row.status = RunStatus::Interrupted;  // as a run stopped by Ctrl-C is, before its resume writes
  ASSERT_TRUE(store_->update_run(row));
  auto lock = store_->lock(out.run_id);  // the resume, setting up
  ASSERT_TRUE(lock);
  const auto began = std::chrono::steady_clock::now();
  auto answer = cancel_run(*store_, out.run_id, std::chrono::milliseconds(300));
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(*answer, RunStatus::Running) << "answered from the row the driver had not written yet";
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::milliseconds(300));
  EXPECT_TRUE(*store_->cancel_requested(out.run_id));
}

// Forwards to a real store and counts the calls the batching claims to save.
class CountingStore final : public Store {
 public:
  explicit CountingStore(Store& inner) : inner_(inner) {}
  int commits = 0;
  int step_writes = 0;
  int attempts_inserted = 0;
  int attempts_finished = 0;

  std::function<void()> before_begin;    // runs before every begin()
  std::function<void()> after_find_run;  // runs once, after the next find_run()

  const fs::path& folder() const override { return inner_.folder(); }
  Expected<void> begin() override {
    if (before_begin) before_begin();
    return inner_.begin();
  }
  Expected<void> commit() override {
    ++commits;
    return inner_.commit();
  }
  Expected<void> rollback() override { return inner_.rollback(); }
  Expected<void> insert_run(const RunRecord& r) override { return inner_.insert_run(r); }
  Expected<void> update_run(const RunRecord& r) override { return inner_.update_run(r); }
  Expected<void> insert_plan_version(const PlanVersion& p) override { return inner_.insert_plan_version(p); }
  Expected<void> upsert_step(const StepRecord& s) override {
    ++step_writes;
    return inner_.upsert_step(s);
  }
  Expected<void> insert_attempt(const AttemptRecord& a) override {
    ++attempts_inserted;
    return inner_.insert_attempt(a);
  }
  Expected<void> finish_attempt(const AttemptRecord& a) override {
    ++attempts_finished;
    return inner_.finish_attempt(a);
  }
  Expected<std::int64_t> append_event(const EventRecord& e) override { return inner_.append_event(e); }
  Expected<void> request_cancel(const std::string& id) override { return inner_.request_cancel(id); }
  Expected<std::optional<RunRecord>> find_run(const std::string& id) override {
    auto found = inner_.find_run(id);
    if (after_find_run) std::exchange(after_find_run, nullptr)();  // once
    return found;
  }
  Expected<std::vector<RunRecord>> list_runs() override { return inner_.list_runs(); }
  Expected<std::vector<RunRecord>> owned_runs(OwnerKind kind, const std::string& owner) override {
    return inner_.owned_runs(kind, owner);
  }
  Expected<PlanVersion> latest_plan(const std::string& id) override { return inner_.latest_plan(id); }
  Expected<std::vector<StepRecord>> steps(const std::string& id) override { return inner_.steps(id); }
  Expected<std::vector<AttemptRecord>> attempts(const std::string& id, const std::string& step) override {
    return inner_.attempts(id, step);
  }
  Expected<std::vector<EventRecord>> events(const std::string& id, std::int64_t after, int limit) override {
    return inner_.events(id, after, limit);
  }
  Expected<std::vector<EventRecord>> events_of_kind(const std::string& id, const std::string& kind) override {
    return inner_.events_of_kind(id, kind);
  }
  Expected<bool> cancel_requested(const std::string& id) override { return inner_.cancel_requested(id); }
  Expected<AttemptTotals> attempt_totals(const std::string& id) override { return inner_.attempt_totals(id); }

 private:
  Store& inner_;
};

// A cancel read in the turn that records an attempt (with the run row, inside
// that turn's transaction) keeps the attempt's process from being started.
// (The request lands after the turn's first look for one, as the turn begins its
// transaction; one that is there before the loop starts is seen before anything
// is recorded.)
TEST_F(EngineTest, ACancelReadInTheTurnThatRecordsAnAttemptKeepsItsProcessFromStarting) {
  Plan plan = load("steps:\n  - {id: a, run: [touch, marker]}\n");
  CountingStore hooked(*store_);
  std::string armed;  // the run id, once the loop is about to start
  EngineOptions o;
  o.workspace = ws();
  o.on_started = [&](const std::string& run_id) { armed = run_id; };
  hooked.before_begin = [&] {
    if (armed.empty()) return;
    ASSERT_TRUE(store_->request_cancel(armed));
    armed.clear();
  };
  Engine engine(hooked, o);
  auto run_out = engine.run(plan, text_);
  ASSERT_TRUE(run_out) << run_out.error().message;
  const RunOutcome& out = *run_out;
  EXPECT_EQ(out.status, RunStatus::Cancelled) << out.reason;
  EXPECT_FALSE(fs::exists(ws() / "marker")) << "the process ran";
  auto a = attempts(out.run_id, "a");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, AttemptStatus::Cancelled);
  EXPECT_EQ(a[0].ending, AttemptEnding::Cancelled);
  EXPECT_EQ(step(out.run_id, "a").status, StepStatus::Cancelled);
}

TEST_F(EngineTest, CancelFromAnotherConnectionStopsTheRun) {
  Plan plan = load(R"(
concurrency: 2
steps:
  - {id: long1, run: [sleep, "30"]}
  - {id: long2, run: [sleep, "30"]}
  - {id: after, deps: [long1], run: ["true"]}
)");
  EngineOptions o;
  o.workspace = ws();
  std::string id;
  o.on_started = [&id](const std::string& run_id) { id = run_id; };
  std::thread canceller;
  o.on_progress = [&](const ProgressEvent& e) {
    if (e.kind == ProgressEvent::Kind::AttemptStarted && !canceller.joinable()) {
      std::string run_id = id;
      fs::path db = store_->folder() / "orch.db";
      canceller = std::thread([db, run_id] {
        auto other = open_sqlite_store(db);
        ASSERT_TRUE(other);
        auto st = cancel_run(**other, run_id, std::chrono::milliseconds(0));
        EXPECT_TRUE(st) << (st ? "" : st.error().message);
      });
    }
  };
  auto start = std::chrono::steady_clock::now();
  Engine engine(*store_, o);
  auto out = engine.run(plan, text_);
  if (canceller.joinable()) canceller.join();
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(out->status, RunStatus::Cancelled);
  EXPECT_EQ(step(out->run_id, "after").status, StepStatus::Skipped);
  EXPECT_EQ(step(out->run_id, "long1").status, StepStatus::Cancelled);
}

TEST_F(EngineTest, BuiltinJsonComposesData) {
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

// In-process steps start and settle inside one turn's transaction: a chain of
// builtins costs a handful of commits, and each step row is written once per
// commit however often it changed, while the ledger still ends up complete.
TEST_F(EngineTest, ABuiltinChainIsSettledInFewTransactions) {
  constexpr int kSteps = 300;
  std::string yaml = "steps:\n  - {id: c0, executor: builtin:echo, inputs: {text: x}}\n";
  for (int i = 1; i < kSteps; ++i)
    yaml += fmt::format(
        "  - {{id: c{}, deps: [c{}], executor: builtin:echo, inputs: {{text: "
        "\"${{steps.c{}.result}}x\"}}}}\n",
        i, i - 1, i - 1);
  Plan plan = load(yaml);
  CountingStore counting(*store_);
  EngineOptions options;
  options.workspace = ws();
  Engine engine(counting, options);
  auto out = engine.run(plan, text_);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Succeeded) << out->reason;
  EXPECT_EQ(step(out->run_id, fmt::format("c{}", kSteps - 1)).result, std::string(kSteps, 'x'));
  EXPECT_EQ(counting.attempts_inserted, kSteps);
  // A builtin attempt that starts and ends in one transaction is written once, finished;
  // only one still in flight when a batch hits its time limit is inserted running at
  // that commit and finished by an update later (at most one per commit in a chain).
  EXPECT_LE(counting.attempts_finished, counting.commits);
  EXPECT_LT(counting.commits, kSteps / 10) << "one commit per builtin step: the turn did not batch them";
  // prepare_new writes every row once; after that, at most one write per step per commit.
  EXPECT_LE(counting.step_writes, kSteps + kSteps + counting.commits);
  auto all = *store_->attempts(out->run_id);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kSteps));
  for (const auto& a : all) EXPECT_EQ(a.status, AttemptStatus::Succeeded) << a.step_id;
  auto events = *store_->events(out->run_id);
  int done = 0;
  for (const auto& e : events) done += e.kind == "step_done";
  EXPECT_EQ(done, kSteps);
}

// A shell step is not started inside a batch: its attempt row is committed
// before its process runs, so the process can see itself in the ledger.
TEST_F(EngineTest, AProcessStepStartsOnlyAfterItsAttemptIsCommitted) {
  fs::path db = dir_ / "store" / "orch.db";
  auto out = run(fmt::format(R"YAML(
steps:
  - {{id: a, executor: builtin:echo, inputs: {{text: x}}}}
  - {{id: b, deps: [a], executor: builtin:echo, inputs: {{text: y}}}}
  - id: look
    deps: [b]
    run: [python3, -c, "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute(\"select count(*) from attempts where step_id in ('a','b','look')\").fetchone()[0])", "{}"]
)YAML",
                             db.string()));
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "look").result, "3");
}

// Once the ledger has every group a run started (attempt_spawned), its spawn
// journal may be emptied, and is once it has grown: 600 processes' lines would
// be more than that.
TEST_F(EngineTest, TheSpawnJournalIsEmptiedOnceItHasGrown) {
  std::string plan = "concurrency: 4\nsteps:\n";
  for (int i = 0; i < 600; ++i) plan += fmt::format("  - {{id: s{}, run: [\"true\"]}}\n", i);
  auto out = run(plan);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  const fs::path journal = spawn_journal_path(dir_ / "store", out.run_id);
  ASSERT_TRUE(fs::exists(journal));
  EXPECT_LT(fs::file_size(journal), static_cast<std::uintmax_t>(SpawnJournal::kClearAbove) + 4096);
}

// A secret from orch's environment, or from a step's secret-looking env, never
// reaches the ledger, the log files or the results: each is "***" there.
TEST_F(EngineTest, SecretsAreMaskedEverywhereTheyAreStoredOrShown) {
  const std::string key = "sk-live-0123456789";
  setenv("ORCH_TEST_PROVIDER_API_KEY", key.c_str(), 1);  // read by the default masker and the steps
  auto out = run(R"YAML(
on_failure: continue
steps:
  - {id: leak, sh: 'echo "key=$ORCH_TEST_PROVIDER_API_KEY"; echo "err $ORCH_TEST_PROVIDER_API_KEY" >&2'}
  - id: plan_env
    env: {SERVICE_TOKEN: tok-plan-abcdef}
    sh: 'echo "token $SERVICE_TOKEN"'
  - id: passed_on
    deps: [leak]
    executor: builtin:echo
    inputs: {text: "got ${steps.leak.result}"}
  - id: fails
    attempts: 1
    sh: 'echo "dying with $ORCH_TEST_PROVIDER_API_KEY"; exit 3'
)YAML");
  unsetenv("ORCH_TEST_PROVIDER_API_KEY");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "leak").result, "key=***");
  EXPECT_EQ(step(out.run_id, "plan_env").result, "token ***");
  EXPECT_EQ(step(out.run_id, "passed_on").result, "got key=***");
  auto leak = attempts(out.run_id, "leak");
  ASSERT_EQ(leak.size(), 1u);
  EXPECT_EQ(read_file(leak[0].stdout_path), "key=***\n");
  EXPECT_EQ(read_file(leak[0].stderr_path), "err ***\n");
  auto fails = attempts(out.run_id, "fails");
  ASSERT_EQ(fails.size(), 1u);
  EXPECT_NE(fails[0].output_tail.find("dying with ***"), std::string::npos) << fails[0].output_tail;
  // The environment's secret is nowhere under the store folder: not in the
  // ledger file, its WAL, or any log.
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "store")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(read_file(entry.path()).find(key), std::string::npos) << entry.path();
  }
  EXPECT_GE(files, 4);
  // The plan's own literal is stored with the plan (resume needs it), and nowhere else.
  auto steps = store_->steps(out.run_id);
  ASSERT_TRUE(steps);
  for (const auto& s : *steps) EXPECT_EQ(s.result.find("tok-plan"), std::string::npos);
  auto all = store_->attempts(out.run_id);
  ASSERT_TRUE(all);
  for (const auto& a : *all) {
    EXPECT_EQ(a.output_tail.find("tok-plan"), std::string::npos) << a.step_id;
    if (!a.stdout_path.empty() && fs::exists(a.stdout_path)) {
      EXPECT_EQ(read_file(a.stdout_path).find("tok-plan"), std::string::npos) << a.stdout_path;
    }
  }
}

// Retry back-off on an injected clock: an hour's delay, no sleeping.
TEST_F(EngineTest, RetryDelayRunsOnTheInjectedClock) {
  ManualClock clock;
  EngineOptions options;
  options.clock = &clock;
  const auto real_start = std::chrono::steady_clock::now();
  auto out = run(R"(
steps:
  - {id: flaky, sh: '[ "$ORCH_ATTEMPT" = 2 ]', attempts: 2, retry_delay: 1h}
)",
                 options);
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, std::chrono::seconds(20));
  auto tries = attempts(out.run_id, "flaky");
  ASSERT_EQ(tries.size(), 2u);
  EXPECT_GE(tries[1].started_at - tries[0].finished_at, 3600 * 1000) << "the retry did not wait its hour";
  EXPECT_LT(tries[1].started_at - tries[0].finished_at, 3600 * 1000 + 60 * 1000);
}

// The plan's wall budget ends a run that is only waiting, on the injected clock.
TEST_F(EngineTest, WallBudgetRunsOutOnTheInjectedClock) {
  ManualClock clock;
  EngineOptions options;
  options.clock = &clock;
  const auto real_start = std::chrono::steady_clock::now();
  auto out = run(R"(
budget: {wall: 30m}
steps:
  - {id: flaky, sh: 'echo "try $ORCH_ATTEMPT"; exit 1', attempts: 5, retry_delay: 1h}
  - {id: later, deps: [flaky], run: ["true"]}
)",
                 options);
  EXPECT_EQ(out.status, RunStatus::BudgetExhausted) << out.reason;
  EXPECT_NE(out.reason.find("wall"), std::string::npos) << out.reason;
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, std::chrono::seconds(20));
  EXPECT_EQ(attempts(out.run_id, "flaky").size(), 1u) << "the retry an hour later is past the 30 minutes";
  EXPECT_EQ(step(out.run_id, "later").status, StepStatus::Skipped);
  // Recorded however the budget ran out, here by the wall clock, once.
  auto exhausted = *store_->events_of_kind(out.run_id, "budget_exhausted");
  ASSERT_EQ(exhausted.size(), 1u);
  EXPECT_NE(exhausted[0].data_json.find("wall"), std::string::npos) << exhausted[0].data_json;
}

TEST_F(EngineTest, ReportIsBuiltFromTheLedger) {
  auto out = run("steps:\n  - {id: a, run: [echo, hi]}\n  - {id: b, deps: [a], run: [\"false\"]}\n");
  auto report = build_run_report(*store_, out.run_id);
  ASSERT_TRUE(report);
  EXPECT_EQ((*report)["run"]["status"], "failed");
  EXPECT_EQ((*report)["counts"]["done"], 1);
  EXPECT_EQ((*report)["counts"]["failed"], 1);
  EXPECT_EQ((*report)["steps"][1]["attempts"][0]["exit_code"], 1);
  // A stream with output names its log file, which exists; one that wrote nothing
  // has no file, and the report names none.
  const auto& a_out = (*report)["steps"][0]["attempts"][0]["stdout"];
  EXPECT_TRUE(fs::exists(a_out["path"].get<std::string>())) << a_out.dump();
  const auto& b_out = (*report)["steps"][1]["attempts"][0]["stdout"];
  EXPECT_EQ(b_out["bytes"], 0);
  EXPECT_EQ(b_out["path"], "") << b_out.dump();
  EXPECT_FALSE(b_out["in_ledger"].get<bool>());
  std::string table = format_report_table(*report);
  EXPECT_NE(table.find("exit_zero"), std::string::npos) << table;
}

// The table's columns line up whatever the statuses: awaiting_approval is wider
// than the others.
TEST_F(EngineTest, ReportTableColumnsLineUpForEveryStatus) {
  auto out = run("steps:\n  - {id: a, sh: 'true'}\n  - {id: deploy, risk: high, deps: [a], sh: 'true'}\n");
  ASSERT_EQ(out.status, RunStatus::AwaitingApproval) << out.reason;
  auto report = build_run_report(*store_, out.run_id);
  ASSERT_TRUE(report);
  std::istringstream table(format_report_table(*report));
  std::string header, row_a, row_deploy;
  std::getline(table, header);
  std::getline(table, row_a);
  std::getline(table, row_deploy);
  const std::size_t try_end = header.find("TRY") + 2;
  ASSERT_GT(row_deploy.size(), try_end) << row_deploy;
  EXPECT_EQ(row_a[try_end], '1') << header << "\n" << row_a;
  EXPECT_EQ(row_deploy[try_end], '0') << header << "\n" << row_deploy;
}

// Counts warm_up() calls and checks that each came before the executor's first
// attempt; attempts succeed at once with the result "ok".
class WarmCounting final : public Executor {
 public:
  int warm_ups = 0;
  int starts = 0;
  int starts_before_warm_up = 0;
  void warm_up() override { ++warm_ups; }
  bool in_process() const override { return true; }
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec&, EventLoop& loop, DoneCallback done) override {
    if (warm_ups == 0) ++starts_before_warm_up;
    ++starts;
    loop.defer([done = std::move(done)] {
      AttemptOutcome o;
      o.ending = AttemptEnding::Exited;
      o.exit_code = 0;
      o.result = "ok";
      done(std::move(o));
    });
    return nullptr;
  }
};

TEST_F(EngineTest, EachExecutorThePlanUsesIsWarmedUpOnceBeforeItsFirstAttempt) {
  const std::string yaml = R"(name: warm
steps:
  - {id: a, executor: "count:x"}
  - {id: b, executor: "count:y", deps: [a]}
  - {id: c, sh: "exit 1", deps: [b]}
)";
  auto used = std::make_shared<WarmCounting>();
  auto unused = std::make_shared<WarmCounting>();
  auto registry = [&](const std::shared_ptr<WarmCounting>& counting) {
    auto r = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
    r->add("count:", counting);
    r->add("idle", unused);
    return r;
  };
  LoadResult loaded = parse_plan(yaml, (dir_ / "plan.yaml").string());
  ASSERT_TRUE(loaded.diagnostics.empty()) << loaded.diagnostics.front().to_string();
  EngineOptions options;
  options.workspace = ws();
  options.executors = registry(used);
  Engine engine(*store_, options);
  auto out = engine.run(loaded.plan, yaml);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Failed);
  EXPECT_EQ(used->warm_ups, 1);  // count:x and count:y are one executor
  EXPECT_EQ(used->starts, 2);
  EXPECT_EQ(used->starts_before_warm_up, 0);
  EXPECT_EQ(unused->warm_ups, 0);

  // A resume warms up the executors of the stored plan again (a new process).
  auto again = std::make_shared<WarmCounting>();
  EngineOptions resume_options;
  resume_options.executors = registry(again);
  Engine resumed(*store_, resume_options);
  auto second = resumed.resume(out->run_id, std::nullopt);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(again->warm_ups, 1);
  EXPECT_EQ(again->starts, 0);  // a and b are done; only c re-runs
  EXPECT_EQ(unused->warm_ups, 0);
}

// A cancel left over from a driver that died before acting on it does not stop a
// resume, but a new one that lands while the resume reads and checks the plan does.
TEST_F(EngineTest, ANewCancelIsSeenByAResumeEvenWhenAnOldOneWasLeftSet) {
  auto first = run("steps:\n  - {id: a, sh: 'echo ran >> ran.log; exit 1', attempts: 1}\n");
  RunRecord row = **store_->find_run(first.run_id);
  row.status = RunStatus::Interrupted;
  row.cancel_requested = true;  // asked of a driver that died first
  ASSERT_TRUE(store_->update_run(row));
  CountingStore hooked(*store_);
  int begins = 0;
  hooked.before_begin = [&] {
    if (++begins != 2) return;  // after the resume cleared the old request, before it writes
    auto other = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(other) << other.error().message;
    ASSERT_TRUE((*other)->request_cancel(first.run_id));
  };
  Engine engine(hooked, EngineOptions{});
  auto out = engine.resume(first.run_id, std::nullopt);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Cancelled) << out->reason;
  EXPECT_EQ(read_file(ws() / "ran.log"), "ran\n");
}

// The window between a resume reading the run row (an old request set) and
// clearing it: a cancel that lands there, after the resume took the run's lock,
// is told from the dead driver's by its event's time, and is kept.
TEST_F(EngineTest, ACancelLandingJustBeforeAResumeClearsAnOldOneIsKept) {
  auto first = run("steps:\n  - {id: a, sh: 'echo ran >> ran.log; exit 1', attempts: 1}\n");
  RunRecord row = **store_->find_run(first.run_id);
  row.status = RunStatus::Interrupted;
  row.cancel_requested = true;  // asked of a driver that died first
  ASSERT_TRUE(store_->update_run(row));
  EventRecord old_request{0, first.run_id, Clock::system().wall_ms() - 60'000, "cancel_requested", "",
                          0, "{}"};
  ASSERT_TRUE(store_->append_event(old_request));
  CountingStore hooked(*store_);
  int begins = 0;
  hooked.before_begin = [&] {
    if (++begins != 1) return;  // the resume holds the lock, has read the row, and is about to clear it
    auto other = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(other) << other.error().message;
    auto asked = cancel_run(**other, first.run_id, std::chrono::milliseconds(0));
    ASSERT_TRUE(asked) << asked.error().message;
    EXPECT_EQ(*asked, RunStatus::Running) << "a live driver holds the lock: the cancel asks it";
  };
  Engine engine(hooked, EngineOptions{});
  auto out = engine.resume(first.run_id, std::nullopt);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Cancelled) << out->reason;
  EXPECT_EQ(read_file(ws() / "ran.log"), "ran\n") << "the step ran again after the cancel";

  // Only the old request left set: cleared, and the resume runs. (A request
  // stamped in the very millisecond a resume takes the lock counts as new: the
  // first resume above can end within that millisecond, so a little time passes.)
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RunRecord again = **store_->find_run(first.run_id);
  again.status = RunStatus::Interrupted;
  again.cancel_requested = true;
  ASSERT_TRUE(store_->update_run(again));
  auto events = *store_->events_of_kind(first.run_id, "cancel_requested");
  ASSERT_FALSE(events.empty());
  auto resumed = resume(first.run_id);
  EXPECT_EQ(resumed.status, RunStatus::Failed) << resumed.reason;
  EXPECT_EQ(read_file(ws() / "ran.log"), "ran\nran\n");
}

// A cancel waiting on a starting resume that lets the lock go without driving
// the run (its resume failed) cancels the run itself.
TEST_F(EngineTest, ACancelWhoseDriverLetsGoWithoutDrivingCancelsTheRunItself) {
  auto out = run("steps:\n  - {id: a, run: [\"false\"]}\n");
  RunRecord row = **store_->find_run(out.run_id);
  row.status = RunStatus::Interrupted;
  ASSERT_TRUE(store_->update_run(row));
  std::unique_ptr<StoreLock> lock = std::move(*store_->lock(out.run_id));
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    lock.reset();  // the resume gave up
  });
  auto other = open_sqlite_store(dir_ / "store" / "orch.db");
  ASSERT_TRUE(other) << other.error().message;
  auto answer = cancel_run(**other, out.run_id, std::chrono::milliseconds(3000));
  release.join();
  ASSERT_TRUE(answer) << answer.error().message;
  EXPECT_EQ(*answer, RunStatus::Cancelled);
  EXPECT_EQ((*store_->find_run(out.run_id))->status, RunStatus::Cancelled);
}

// `orch cancel` that takes the run's lock while a resume is starting (the resume
// has read the run, not yet locked it) cancels it, and the resume then refuses
// rather than undo the cancel.
TEST_F(EngineTest, AResumeThatLosesTheLockToACancelRefusesToUndoIt) {
  auto first = run("steps:\n  - {id: a, sh: 'echo ran >> ran.log; exit 1', attempts: 1}\n");
  ASSERT_EQ(first.status, RunStatus::Failed);
  RunRecord row = **store_->find_run(first.run_id);
  row.status = RunStatus::Interrupted;  // as a run stopped by Ctrl-C is: cancel takes those
  ASSERT_TRUE(store_->update_run(row));
  CountingStore hooked(*store_);
  hooked.after_find_run = [&] {
    auto other = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(other) << other.error().message;
    auto cancelled = cancel_run(**other, first.run_id, std::chrono::milliseconds(0));
    ASSERT_TRUE(cancelled) << cancelled.error().message;
    EXPECT_EQ(*cancelled, RunStatus::Cancelled);
  };
  {
    Engine engine(hooked, EngineOptions{});  // lets the run's lock go when it ends
    auto out = engine.resume(first.run_id, std::nullopt);
    ASSERT_FALSE(out);
    EXPECT_NE(out.error().message.find("was cancelled while this resume was starting"), std::string::npos)
        << out.error().message;
  }
  EXPECT_EQ((*store_->find_run(first.run_id))->status, RunStatus::Cancelled);
  EXPECT_EQ(read_file(ws() / "ran.log"), "ran\n");
  // Asked again, on purpose, it goes on.
  auto again = resume(first.run_id);
  EXPECT_EQ(again.status, RunStatus::Failed);
  EXPECT_EQ(read_file(ws() / "ran.log"), "ran\nran\n");
}

// `orch cancel` of a run a resume has just locked (it sees a live driver and asks)
// is acted on by that resume, not overwritten by the run row it writes as it sets up.
TEST_F(EngineTest, ACancelThatLandsWhileAResumeSetsUpIsActedOn) {
  auto first = run("steps:\n  - {id: a, sh: 'echo ran >> ran.log; exit 1', attempts: 1}\n");
  ASSERT_EQ(first.status, RunStatus::Failed);
  CountingStore hooked(*store_);
  bool asked = false;
  hooked.before_begin = [&] {
    if (asked) return;
    asked = true;  // the resume holds the run's lock and writes nothing yet
    auto other = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(other) << other.error().message;
    ASSERT_TRUE((*other)->begin());
    ASSERT_TRUE((*other)->request_cancel(first.run_id));
    ASSERT_TRUE((*other)->commit());
  };
  Engine engine(hooked, EngineOptions{});
  auto out = engine.resume(first.run_id, std::nullopt);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_TRUE(asked);
  EXPECT_EQ(out->status, RunStatus::Cancelled) << out->reason;
  EXPECT_EQ(read_file(ws() / "ran.log"), "ran\n") << "the step ran again after the cancel";
}

// A Ctrl-C that comes while a turn prepares its attempts (a snapshot of large
// `writes:` takes seconds) stops them before they start.
TEST_F(EngineTest, ASignalWhileAnAttemptIsPreparedKeepsItFromStarting) {
  Plan plan = load(R"(
steps:
  - {id: a, writes: [w.txt], sh: 'touch started; sleep 5'}
)");
  CountingStore hooked(*store_);
  bool raised = false;
  hooked.before_begin = [&] {
    // The turn's transaction begins after the attempt's snapshot is taken.
    if (raised || !fs::exists(dir_ / "store" / "runs")) return;
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "store" / "runs"))
      if (e.path().filename() == "manifest.json") {
        raised = true;
        ::raise(SIGINT);
        return;
      }
  };
  EngineOptions options;
  options.workspace = ws();
  options.handle_signals = true;
  Engine engine(hooked, options);
  auto out = engine.run(plan, text_);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_TRUE(raised);
  EXPECT_EQ(out->status, RunStatus::Interrupted) << out->reason;
  EXPECT_FALSE(fs::exists(ws() / "started")) << "the attempt's process was started after the signal";
  auto spawned = *store_->events_of_kind(out->run_id, "attempt_spawned");
  EXPECT_TRUE(spawned.empty());
  auto tries = attempts(out->run_id, "a");
  ASSERT_EQ(tries.size(), 1u);
  EXPECT_EQ(tries[0].status, AttemptStatus::Interrupted);
}

// An attempt interrupted (Ctrl-C) whose writes cannot be put back leaves its
// step failed, not pending: a resume must not run it on the leftovers unasked.
TEST_F(EngineTest, AnInterruptedStepWhoseWritesCannotBePutBackIsFailed) {
  socket_in_workspace_folder_d();
  Plan plan = load(R"(
steps:
  - {id: a, writes: [d], sh: 'rm d/s.sock; touch gone; sleep 5'}
)");
  std::thread interrupt([&] {
    for (int i = 0; i < 1000 && !fs::exists(ws() / "gone"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::raise(SIGINT);
  });
  EngineOptions options;
  options.workspace = ws();
  options.handle_signals = true;
  Engine engine(*store_, options);
  auto out = engine.run(plan, text_);
  interrupt.join();
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Interrupted) << out->reason;
  StepRecord a = step(out->run_id, "a");
  EXPECT_EQ(a.status, StepStatus::Failed) << a.reason;
  EXPECT_NE(a.reason.find("not retried: its writes could not be put back"), std::string::npos) << a.reason;
}

}  // namespace
}  // namespace orch
