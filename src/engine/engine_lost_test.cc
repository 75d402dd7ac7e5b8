// An attempt its executor lost (AttemptEnding::Interrupted from an executor
// that runs attempts elsewhere: an `orch worker` whose lease expired) is closed
// interrupted, not counted, and started again at once, told why; a step whose
// attempts are lost kMaxLostInARow times in a row fails. On both ledgers
// (testing/engine_fixture.h).
#include <gtest/gtest.h>

#include "engine/step_state.h"
#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "testing/engine_fixture.h"

namespace orch {
namespace {

using orch::testing::EngineTest;

// Loses the first `losses` attempts of each step ("lease expired on w1"), then
// succeeds with the previous failure it was told as the result.
class Losing final : public Executor {
 public:
  explicit Losing(int losses, std::int64_t tokens = 0) : losses_(losses), tokens_(tokens) {}
  int starts = 0;
  SpendEstimate estimate(const Step&) const override { return {tokens_, 0, 0}; }
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                  DoneCallback done) override {
    ++starts;
    const bool lose = spec.attempt <= losses_;
    loop.defer([done = std::move(done), lose, told = spec.previous_failure] {
      AttemptOutcome o;
      if (lose) {
        o.ending = AttemptEnding::Interrupted;
        o.message = "lease expired on w1";
        o.host = "elsewhere";
      } else {
        o.ending = AttemptEnding::Exited;
        o.exit_code = 0;
        o.result = told;
      }
      done(std::move(o));
    });
    return nullptr;
  }

 private:
  int losses_;
  std::int64_t tokens_;
};

RunOutcome run_with(Store& store, const std::filesystem::path& ws, int losses, const std::string& yaml,
                    std::int64_t tokens = 0) {
  LoadResult loaded = parse_plan(yaml, (ws / "plan.yaml").string());
  EXPECT_TRUE(loaded.diagnostics.empty());
  auto registry = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
  registry->add("lose", std::make_shared<Losing>(losses, tokens));
  EngineOptions options;
  options.workspace = ws;
  options.executors = registry;
  Engine engine(store, options);
  auto out = engine.run(loaded.plan, yaml);
  EXPECT_TRUE(out) << out.error().message;
  return out ? *out : RunOutcome{};
}

TEST_P(EngineTest, ALostAttemptIsStartedAgainToldWhyAndNotCounted) {
  // attempts: 1 — the lost ones do not use it up.
  const auto out = run_with(*store_, ws(), kMaxLostInARow - 1,
                            "steps:\n  - {id: s, executor: lose, attempts: 1, post: [result_nonempty]}\n");
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto attempts = store_->attempts(out.run_id, "s");
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), static_cast<std::size_t>(kMaxLostInARow));
  for (int i = 0; i < kMaxLostInARow - 1; ++i) {
    const AttemptRecord& lost = (*attempts)[static_cast<std::size_t>(i)];
    EXPECT_EQ(lost.status, AttemptStatus::Interrupted);
    EXPECT_FALSE(lost.counted);
    EXPECT_EQ(lost.reason, "lease expired on w1");
    EXPECT_EQ(lost.host, "elsewhere") << "the machine that lost it";
  }
  EXPECT_EQ(attempts->back().status, AttemptStatus::Succeeded);
  auto step = store_->find_step(out.run_id, "s");
  ASSERT_TRUE(step && *step);
  EXPECT_EQ((*step)->result, "lease expired on w1") << "the new attempt was told why";
  EXPECT_EQ((*step)->attempts_counted, 1);
}

TEST_P(EngineTest, AStepLostTooManyTimesInARowFails) {
  const auto out = run_with(*store_, ws(), 1000, "steps:\n  - {id: s, executor: lose, attempts: 5}\n");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto step = store_->find_step(out.run_id, "s");
  ASSERT_TRUE(step && *step);
  EXPECT_EQ((*step)->status, StepStatus::Failed);
  EXPECT_EQ((*step)->reason, "its attempt was lost 3 times in a row: lease expired on w1");
  auto attempts = store_->attempts(out.run_id, "s");
  ASSERT_TRUE(attempts);
  EXPECT_EQ(attempts->size(), static_cast<std::size_t>(kMaxLostInARow));
}

// A lost attempt may have spent (an llm call paid for before its worker
// died): it is charged what was reserved for it, and says so; never nothing.
TEST_P(EngineTest, ALostAttemptIsChargedWhatWasReservedForIt) {
  const auto out = run_with(*store_, ws(), 1, "steps:\n  - {id: s, executor: lose}\n", 100);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto attempts = store_->attempts(out.run_id, "s");
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].status, AttemptStatus::Interrupted);
  EXPECT_EQ((*attempts)[0].tokens_in, 100);
  EXPECT_EQ((*attempts)[0].reason,
            "lease expired on w1; its spend went with it: charged the 100 tokens reserved for it");
  auto totals = store_->attempt_totals(out.run_id);
  ASSERT_TRUE(totals);
  EXPECT_EQ(totals->tokens, 100) << "the lost attempt's reservation, the second spent nothing";
  auto step = store_->find_step(out.run_id, "s");
  ASSERT_TRUE(step && *step);
  EXPECT_EQ((*step)->result,
            "lease expired on w1; its spend went with it: charged the 100 tokens reserved for it")
      << "the new attempt was told why";
}

}  // namespace
}  // namespace orch
