// Engine tests: budgets (tokens, attempts, wall time) and what is charged. On each backend of the
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

// A token count no real call produces fails the attempt instead of wrapping the
// run's totals around (9223372036854775807 twice made the spend -2, and the
// budget let everything through).
TEST_P(EngineTest, AnImpossibleTokenCountFailsTheAttemptAndIsNotCharged) {
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
TEST_P(EngineTest, ARunThatEndsOverThePlansBudgetSaysSo) {
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
TEST_P(EngineTest, AStepsOwnBudgetRunningOutFailsTheRunNotItsBudget) {
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
TEST_P(EngineTest, AStepsWallBudgetRunningOutIsSaidAsTheBudget) {
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
TEST_P(EngineTest, ThePlansWallBudgetRunningOutStopsWhatRunsAsTimedOut) {
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
TEST_P(EngineTest, AnAttemptsTimeIncludesItsChecks) {
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

TEST_P(EngineTest, AStepsAttemptsBudgetCountsAcrossResumes) {
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
TEST_P(EngineTest, AStepThatSucceedsOverItsOwnBudgetIsDoneAndSaysSo) {
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

TEST_P(EngineTest, TokenBudgetIsNeverOvershotByAParallelWave) {
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
TEST_P(EngineTest, ABudgetStopWaitsForARetryThatFits) {
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

TEST_P(EngineTest, PlanAttemptBudgetCountsOnlyAttemptsThatRan) {
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

TEST_P(EngineTest, AZeroBudgetAdmitsStepsThatSpendNothingButASpentOneDoesNot) {
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

TEST_P(EngineTest, FailedAttemptsAreChargedTheirTokens) {
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
TEST_P(EngineTest, ResumeChargesTheBudgetFromTheAttemptsNotTheRunRow) {
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

// A step that reports its usage and then runs past its timeout has spent what it
// reported: the attempt is charged, and the plan's budget it went past says so.
TEST_P(EngineTest, UsageReportedBeforeATimeoutIsCharged) {
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

// Retry back-off on an injected clock: an hour's delay, no sleeping.
TEST_P(EngineTest, RetryDelayRunsOnTheInjectedClock) {
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
TEST_P(EngineTest, WallBudgetRunsOutOnTheInjectedClock) {
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

}  // namespace
}  // namespace orch
