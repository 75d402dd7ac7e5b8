// The decision after an attempt (attempt_settle.h), case by case, and the
// retry back-off (retry_policy.h) with a fixed jitter source: exact delays.
#include "engine/attempt_settle.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/retry_policy.h"
#include "orch/postcondition.h"

namespace orch {
namespace {

using std::chrono::milliseconds;
using Kind = SettleDecision::Kind;

// A jitter source that always draws `fraction` of the most it may (0: none, 1: the most).
RetryPolicy settle_test_policy(double fraction = 0) {
  return RetryPolicy([fraction](std::int64_t most) { return static_cast<std::int64_t>(most * fraction); });
}

// A failed attempt of a step with attempts to spare and nothing else in the way.
SettleFacts failed_attempt(std::string reason = "exit_zero: exited with code 1") {
  SettleFacts f;
  f.status = AttemptStatus::Failed;
  f.reason = std::move(reason);
  f.attempts_counted = 1;
  f.max_attempts = 3;
  f.spent.attempts = 1;
  f.retry_delay = milliseconds(250);
  return f;
}

// ---- retry_policy ----------------------------------------------------------

TEST(RetryPolicyTest, AnOrdinaryFailureWaitsItsRetryDelay) {
  const RetryPolicy p = settle_test_policy(1);
  EXPECT_EQ(p.delay(milliseconds(0), false, 1, std::nullopt), milliseconds(0));
  EXPECT_EQ(p.delay(milliseconds(250), false, 3, std::nullopt), milliseconds(250));
  // A Retry-After is a transient failure's: an ordinary one does not wait for it.
  EXPECT_EQ(p.delay(milliseconds(250), false, 1, milliseconds(9000)), milliseconds(250));
}

TEST(RetryPolicyTest, ATransientFailureBacksOffFromOneSecondDoublingPerFailure) {
  const RetryPolicy p = settle_test_policy(0);
  EXPECT_EQ(p.transient_backoff(milliseconds(0), 1, std::nullopt), milliseconds(1000));
  EXPECT_EQ(p.transient_backoff(milliseconds(0), 2, std::nullopt), milliseconds(2000));
  EXPECT_EQ(p.transient_backoff(milliseconds(0), 3, std::nullopt), milliseconds(4000));
  EXPECT_EQ(p.transient_backoff(milliseconds(0), 0, std::nullopt),
            milliseconds(1000));  // no doubling below one
  // A retry_delay above the floor is where the doubling starts.
  EXPECT_EQ(p.transient_backoff(milliseconds(3000), 1, std::nullopt), milliseconds(3000));
  EXPECT_EQ(p.transient_backoff(milliseconds(3000), 3, std::nullopt), milliseconds(12000));
}

TEST(RetryPolicyTest, TheBackOffStopsAtFiveMinutes) {
  const RetryPolicy p = settle_test_policy(0);
  EXPECT_EQ(p.transient_backoff(milliseconds(1000), 9, std::nullopt), milliseconds(256'000));
  EXPECT_EQ(p.transient_backoff(milliseconds(1000), 10, std::nullopt), milliseconds(300'000));
  EXPECT_EQ(p.transient_backoff(milliseconds(1000), 1000, std::nullopt), milliseconds(300'000));
}

TEST(RetryPolicyTest, JitterAddsUpToAQuarterOfTheDelay) {
  EXPECT_EQ(settle_test_policy(1).transient_backoff(milliseconds(0), 1, std::nullopt), milliseconds(1250));
  EXPECT_EQ(settle_test_policy(0.5).transient_backoff(milliseconds(0), 3, std::nullopt), milliseconds(4500));
  EXPECT_EQ(settle_test_policy(1).transient_backoff(milliseconds(1000), 20, std::nullopt),
            milliseconds(375'000));
  // A source that draws out of range is held to it.
  const RetryPolicy wild([](std::int64_t most) { return most * 10; });
  EXPECT_EQ(wild.transient_backoff(milliseconds(0), 1, std::nullopt), milliseconds(1250));
  const RetryPolicy negative([](std::int64_t) { return std::int64_t{-5}; });
  EXPECT_EQ(negative.transient_backoff(milliseconds(0), 1, std::nullopt), milliseconds(1000));
}

TEST(RetryPolicyTest, TheJitterSourceIsAskedForAQuarterOfTheDelay) {
  std::vector<std::int64_t> asked;
  const RetryPolicy p([&asked](std::int64_t most) {
    asked.push_back(most);
    return std::int64_t{7};
  });
  EXPECT_EQ(p.transient_backoff(milliseconds(0), 2, std::nullopt), milliseconds(2007));
  EXPECT_EQ(asked, std::vector<std::int64_t>{500});
  // An ordinary failure draws nothing.
  EXPECT_EQ(p.delay(milliseconds(10), false, 2, std::nullopt), milliseconds(10));
  EXPECT_EQ(asked.size(), 1u);
}

TEST(RetryPolicyTest, ARetryAfterLongerThanTheBackOffIsWaitedFor) {
  const RetryPolicy p = settle_test_policy(1);
  EXPECT_EQ(p.transient_backoff(milliseconds(0), 1, milliseconds(30'000)), milliseconds(30'000));
  EXPECT_EQ(p.transient_backoff(milliseconds(0), 1, milliseconds(500)), milliseconds(1250));
}

TEST(RetryPolicyTest, ASeededSourceRepeatsItselfAndStaysInRange) {
  const JitterSource a = seeded_jitter(42), b = seeded_jitter(42);
  for (int i = 0; i < 100; ++i) {
    const std::int64_t x = a(250);
    EXPECT_EQ(x, b(250));
    EXPECT_GE(x, 0);
    EXPECT_LE(x, 250);
  }
}

// ---- status_of_ending ------------------------------------------------------

TEST(AttemptSettleTest, AnAttemptThatExitedIsJudgedByItsChecks) {
  AttemptOutcome o;
  o.ending = AttemptEnding::Exited;
  o.exit_code = 1;
  EXPECT_FALSE(status_of_ending(o, ""));
}

TEST(AttemptSettleTest, EndingsThatAreNotAnExitAreRecordedAsTheyEnded) {
  AttemptOutcome o;
  o.ending = AttemptEnding::TimedOut;
  o.message = "timed out after 2s";
  auto v = status_of_ending(o, "");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, AttemptStatus::TimedOut);
  EXPECT_EQ(v->reason, "timed out after 2s");
  // Its time was the rest of a wall budget: said as the budget.
  v = status_of_ending(o, "budget exhausted: wall: 5000 ms used of 5000 ms");
  EXPECT_EQ(v->reason, "budget exhausted: wall: 5000 ms used of 5000 ms");

  o = AttemptOutcome{};
  o.ending = AttemptEnding::Stalled;
  v = status_of_ending(o, "");
  EXPECT_EQ(v->status, AttemptStatus::Stalled);
  EXPECT_EQ(v->reason, "stalled");

  o = AttemptOutcome{};
  o.ending = AttemptEnding::SpawnFailed;
  o.message = "no such file: ./missing";
  v = status_of_ending(o, "");
  EXPECT_EQ(v->status, AttemptStatus::Failed);
  EXPECT_EQ(v->reason, "no such file: ./missing");

  o = AttemptOutcome{};
  o.ending = AttemptEnding::SetupFailed;
  o.message = "OPENAI_API_KEY is not set";
  v = status_of_ending(o, "");
  EXPECT_EQ(v->status, AttemptStatus::Failed);
  EXPECT_EQ(v->reason, "OPENAI_API_KEY is not set");
}

TEST(AttemptSettleTest, ACrashSaysWhatTheProcessPrintedLast) {
  AttemptOutcome o;
  o.ending = AttemptEnding::Signaled;
  o.signal = 11;
  o.output_tail = "segfault near here\n";
  const auto v = status_of_ending(o, "");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, AttemptStatus::Failed);
  EXPECT_EQ(v->reason, "killed by signal 11" + failure_output_suffix(o.output_tail));
  // An executor's error after a non-zero exit also shows the output; one before any exit does not.
  o = AttemptOutcome{};
  o.ending = AttemptEnding::Error;
  o.exit_code = 2;
  o.message = "result is not JSON";
  o.output_tail = "oops";
  EXPECT_EQ(status_of_ending(o, "")->reason, "result is not JSON" + failure_output_suffix("oops"));
  o.exit_code = -1;
  EXPECT_EQ(status_of_ending(o, "")->reason, "result is not JSON");
}

// ---- settle_attempt --------------------------------------------------------

TEST(AttemptSettleTest, ASucceededAttemptIsDone) {
  SettleFacts f = failed_attempt("");
  f.status = AttemptStatus::Succeeded;
  const SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Done);
  EXPECT_FALSE(d.remember_failure);
}

TEST(AttemptSettleTest, ACheckThatFailedWithAttemptsLeftIsRetriedAfterTheRetryDelay) {
  const SettleDecision d = settle_attempt(failed_attempt(), settle_test_policy(1));
  EXPECT_EQ(d.kind, Kind::Retry);
  EXPECT_EQ(d.delay, milliseconds(250));
  EXPECT_TRUE(d.remember_failure);
}

TEST(AttemptSettleTest, ATimeoutOrAStallWithAttemptsLeftIsRetried) {
  SettleFacts f = failed_attempt("timed out after 1s");
  f.status = AttemptStatus::TimedOut;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).kind, Kind::Retry);
  f.status = AttemptStatus::Stalled;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).kind, Kind::Retry);
}

TEST(AttemptSettleTest, TheLastAttemptFailsTheStepSayingHowManyThereWere) {
  SettleFacts f = failed_attempt();
  f.attempts_counted = 3;
  SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Fail);
  EXPECT_EQ(d.reason, "failed after 3 attempts: exit_zero: exited with code 1");
  EXPECT_TRUE(d.remember_failure);
  // A step of one attempt fails with the attempt's reason as it is.
  f.attempts_counted = 1;
  f.max_attempts = 1;
  d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Fail);
  EXPECT_EQ(d.reason, "exit_zero: exited with code 1");
}

TEST(AttemptSettleTest, TheSameFailureTwiceIsNotTriedAThirdTime) {
  SettleFacts f = failed_attempt();
  f.attempts_counted = 2;
  f.last_failure_key = f.reason;
  SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Fail);
  EXPECT_EQ(d.reason, "same failure twice: exit_zero: exited with code 1");
  // Another failure is retried.
  f.last_failure_key = "exit_zero: exited with code 2";
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).kind, Kind::Retry);
}

TEST(AttemptSettleTest, ATransientFailureRepeatedWordForWordIsRetriedWithBackOff) {
  SettleFacts f = failed_attempt("HTTP 429: rate limited");
  f.transient = true;
  f.attempts_counted = 2;
  f.last_failure_key = f.reason;
  const SettleDecision d = settle_attempt(f, settle_test_policy(0));
  EXPECT_EQ(d.kind, Kind::Retry);
  EXPECT_EQ(d.delay, milliseconds(2000));  // 1 s doubled once: its second failure
}

TEST(AttemptSettleTest, ATransientFailureWaitsForTheProvidersRetryAfter) {
  SettleFacts f = failed_attempt("HTTP 503");
  f.transient = true;
  f.retry_after = milliseconds(42'000);
  const SettleDecision d = settle_attempt(f, settle_test_policy(1));
  EXPECT_EQ(d.kind, Kind::Retry);
  EXPECT_EQ(d.delay, milliseconds(42'000));
}

TEST(AttemptSettleTest, ARetryAfterOfHoursIsNotWaitedFor) {
  SettleFacts f = failed_attempt("HTTP 429: daily quota");
  f.transient = true;
  f.retry_after = milliseconds(3 * 3600 * 1000);
  const SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Fail);
  EXPECT_EQ(
      d.reason,
      "HTTP 429: daily quota (the provider asked to retry after 3h00m, longer than orch waits (5m00s): not "
      "retried)");
  // Five minutes exactly is still waited for.
  f.retry_after = RetryPolicy::kMaxRetryAfter;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).kind, Kind::Retry);
}

TEST(AttemptSettleTest, ASetupFailureIsNeverRetried) {
  SettleFacts f = failed_attempt("OPENAI_API_KEY is not set");
  f.setup_failed = true;
  const SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Fail);
  EXPECT_EQ(d.reason, "OPENAI_API_KEY is not set");
  EXPECT_TRUE(d.remember_failure);
}

TEST(AttemptSettleTest, AStepWhoseOwnBudgetIsSpentFailsSayingWhich) {
  SettleFacts f = failed_attempt();
  f.step_budget.tokens = 100;
  f.spent.tokens = 100;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).reason,
            "step budget exhausted: tokens 100 spent of 100; last failure: exit_zero: exited with code 1");
  f = failed_attempt();
  f.step_budget.cost_usd = 0.5;
  f.spent.cost_usd = 0.75;
  EXPECT_EQ(
      settle_attempt(f, settle_test_policy()).reason,
      "step budget exhausted: cost $0.7500 spent of $0.5000; last failure: exit_zero: exited with code 1");
  f = failed_attempt();
  f.step_budget.attempts = 1;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).reason,
            "step budget exhausted: attempts 1 made of 1; last failure: exit_zero: exited with code 1");
  // The wall budget is not judged here: the attempt's timeout was held to it.
  f = failed_attempt();
  f.step_budget.wall = milliseconds(10);
  f.spent.wall_ms = 50;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).kind, Kind::Retry);
}

TEST(AttemptSettleTest, TheStepBudgetComesBeforeTheAttemptsCap) {
  SettleFacts f = failed_attempt();
  f.attempts_counted = 3;
  f.step_budget.attempts = 2;
  f.spent.attempts = 2;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).reason,
            "step budget exhausted: attempts 2 made of 2; last failure: exit_zero: exited with code 1");
}

TEST(AttemptSettleTest, NothingIsRetriedOnceTheRunIsStopping) {
  SettleFacts f = failed_attempt();
  f.run_stopping = "step 'a' failed";
  const SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Fail);
  EXPECT_EQ(d.reason, "exit_zero: exited with code 1 (not retried: step 'a' failed)");
  // The cap and "same failure twice" are said first.
  f.attempts_counted = 3;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).reason,
            "failed after 3 attempts: exit_zero: exited with code 1");
}

TEST(AttemptSettleTest, AnInterruptedAttemptPutsTheStepBackToPending) {
  SettleFacts f = failed_attempt("interrupted by signal 2");
  f.status = AttemptStatus::Interrupted;
  f.attempts_counted = 3;  // an interrupted attempt is not counted, nor capped
  const SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Requeue);
  EXPECT_FALSE(d.remember_failure);
}

TEST(AttemptSettleTest, ACancelledAttemptCancelsTheStep) {
  SettleFacts f = failed_attempt("cancelled by `orch cancel`");
  f.status = AttemptStatus::Cancelled;
  const SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Cancel);
  EXPECT_EQ(d.reason, "cancelled by `orch cancel`");
}

TEST(AttemptSettleTest, WritesThatCouldNotBePutBackFailTheStepForGood) {
  SettleFacts f = failed_attempt();
  f.unrestored = "cannot remove /ws/out: Permission denied";
  f.snapshot_dir = "/store/runs/r/a.1.snapshot";
  const std::string expected =
      "exit_zero: exited with code 1 (not retried: its writes could not be put back: cannot remove /ws/out: "
      "Permission denied; the snapshot is kept in /store/runs/r/a.1.snapshot)";
  SettleDecision d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Fail);
  EXPECT_EQ(d.reason, expected);
  EXPECT_FALSE(d.remember_failure);
  // Interrupted too: a resume must not run it again on the leftovers.
  f.status = AttemptStatus::Interrupted;
  d = settle_attempt(f, settle_test_policy());
  EXPECT_EQ(d.kind, Kind::Fail);
  EXPECT_EQ(d.reason, expected);
  // A cancelled attempt is cancelled all the same.
  f.status = AttemptStatus::Cancelled;
  EXPECT_EQ(settle_attempt(f, settle_test_policy()).kind, Kind::Cancel);
}

TEST(AttemptSettleTest, AFailedStepSkipsItsDependentsOrStopsTheRun) {
  EXPECT_EQ(after_failure(false, OnFailure::Abort), AfterFailure::StopRun);
  EXPECT_EQ(after_failure(true, OnFailure::Abort), AfterFailure::SkipDependents);
  EXPECT_EQ(after_failure(false, OnFailure::Continue), AfterFailure::SkipDependents);
  EXPECT_EQ(after_failure(true, OnFailure::Continue), AfterFailure::SkipDependents);
}

// ---- the step's own budget ---------------------------------------------------

TEST(AttemptSettleTest, AZeroSpendNeverExhaustsAStepBudget) {
  BudgetLimits b;
  b.tokens = 0;
  b.cost_usd = 0;
  EXPECT_FALSE(step_budget_exhausted(b, StepSpent{}, true));
  EXPECT_EQ(step_budget_exhausted(b, StepSpent{1, 0, 0, 0}, true),
            "step budget exhausted: tokens 1 spent of 0");
}

TEST(AttemptSettleTest, TheWallBudgetCountsBeforeAnAttemptOnly) {
  BudgetLimits b;
  b.wall = milliseconds(1000);
  const StepSpent spent{0, 0, 0, 1000};
  EXPECT_EQ(step_budget_exhausted(b, spent, true), "step budget exhausted: wall 1000 ms used of 1000 ms");
  EXPECT_FALSE(step_budget_exhausted(b, spent, false));
  EXPECT_FALSE(step_budget_exhausted(b, StepSpent{0, 0, 0, 999}, true));
}

TEST(AttemptSettleTest, AStepDoneOverItsBudgetSaysSo) {
  BudgetLimits b;
  b.tokens = 100;
  EXPECT_EQ(done_over_budget(b, StepSpent{100, 0, 1, 0}), "");
  EXPECT_EQ(done_over_budget(b, StepSpent{101, 0, 1, 0}), "done over its budget: tokens 101 spent of 100");
  b = BudgetLimits{};
  b.cost_usd = 0.25;
  EXPECT_EQ(done_over_budget(b, StepSpent{0, 0.25, 1, 0}), "");
  EXPECT_EQ(done_over_budget(b, StepSpent{0, 0.5, 1, 0}),
            "done over its budget: cost $0.5000 spent of $0.2500");
}

}  // namespace
}  // namespace orch
