// Engine tests: `when:` conditions — a branch not taken skipped to its end, a
// join run when one branch was, a condition that cannot be read failing its
// step, a skipped step never asked about, and a resume reading them again.
// On each backend of the ledger (testing/engine_fixture.h).
#include <gtest/gtest.h>

#include "orch/engine.h"
#include "testing/engine_fixture.h"
#include "testing/testing.h"

namespace orch {
namespace {

using orch::testing::EngineTest;

const char* const kBranches = R"(
name: branches
steps:
  - id: review
    sh: 'echo "{\"verdict\": \"REVISE\", \"score\": 7}"'
  - id: deploy
    deps: [review]
    when: ${steps.review.result.verdict} == "PASS"
    sh: echo deployed > deployed.txt
  - id: announce
    deps: [deploy]
    sh: echo announced > announced.txt
  - id: fix
    deps: [review]
    when: steps.review.result.verdict != "PASS" and steps.review.result.score >= 5
    sh: echo fixing
  - id: report
    deps: [deploy, fix]
    sh: echo report
)";

TEST_P(EngineTest, AFalseConditionSkipsItsBranchAndAJoinRunsOnTheOther) {
  auto out = run(kBranches);
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "deploy").status, StepStatus::Skipped);
  EXPECT_EQ(step(out.run_id, "deploy").reason, R"(when: ${steps.review.result.verdict} == "PASS" was false)");
  EXPECT_EQ(step(out.run_id, "announce").status, StepStatus::Skipped);
  EXPECT_EQ(step(out.run_id, "announce").reason, "dependency 'deploy' was skipped");
  EXPECT_EQ(step(out.run_id, "fix").status, StepStatus::Done);
  EXPECT_EQ(step(out.run_id, "report").status, StepStatus::Done);
  EXPECT_FALSE(std::filesystem::exists(ws() / "deployed.txt"));
  EXPECT_FALSE(std::filesystem::exists(ws() / "announced.txt"));
  EXPECT_TRUE((*store_->attempts(out.run_id, "deploy")).empty()) << "a skipped step has no attempt";
  const auto evaluated = events(out.run_id, "condition_evaluated");
  ASSERT_EQ(evaluated.size(), 2u);
  EXPECT_EQ(evaluated[0].step_id, "deploy");
  EXPECT_NE(evaluated[0].data_json.find("\"value\":false"), std::string::npos) << evaluated[0].data_json;
  EXPECT_EQ(evaluated[1].step_id, "fix");
  EXPECT_NE(evaluated[1].data_json.find("\"value\":true"), std::string::npos) << evaluated[1].data_json;
}

TEST_P(EngineTest, EveryBranchSkippedSkipsTheJoinToo) {
  auto out = run(R"(
steps:
  - id: probe
    sh: 'echo "{\"mode\": \"none\"}"'
  - id: a
    deps: [probe]
    when: steps.probe.result.mode == "a"
    sh: echo a
  - id: b
    deps: [probe]
    when: steps.probe.result.mode == "b"
    sh: echo b
  - id: join
    deps: [a, b]
    sh: echo join
  - id: after
    deps: [join]
    sh: echo after
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "join").status, StepStatus::Skipped);
  EXPECT_EQ(step(out.run_id, "join").reason, "every dependency was skipped");
  EXPECT_EQ(step(out.run_id, "after").status, StepStatus::Skipped);
}

TEST_P(EngineTest, AConditionThatCannotBeReadFailsItsStepWithWhy) {
  auto out = run(R"(
steps:
  - id: review
    sh: 'echo "{\"score\": 3}"'
  - id: deploy
    deps: [review]
    when: steps.review.result.verdict == "PASS"
    sh: echo deployed
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  const StepRecord deploy = step(out.run_id, "deploy");
  EXPECT_EQ(deploy.status, StepStatus::Failed);
  EXPECT_NE(deploy.reason.find("could not be evaluated: steps.review.result has no 'verdict'"),
            std::string::npos)
      << deploy.reason;
  EXPECT_TRUE((*store_->attempts(out.run_id, "deploy")).empty());
}

TEST_P(EngineTest, AStepItsConditionSkipsIsNeverAskedAbout) {
  auto out = run(R"(
steps:
  - id: check
    sh: echo no
  - id: wipe
    deps: [check]
    risk: high
    when: steps.check.result == "yes"
    sh: echo wiped > wiped.txt
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "wipe").status, StepStatus::Skipped);
  EXPECT_TRUE(events(out.run_id, "approval_requested").empty());
}

TEST_P(EngineTest, AResumeReadsTheConditionsAgainAndSkipsTheSame) {
  auto out = run(R"(
steps:
  - id: review
    sh: 'echo "{\"verdict\": \"REVISE\"}"'
  - id: deploy
    deps: [review]
    when: steps.review.result.verdict == "PASS"
    sh: echo deployed > deployed.txt
  - id: flaky
    attempts: 1
    sh: test -f go.txt
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "deploy").status, StepStatus::Skipped);
  orch::testing::write_file(ws() / "go.txt", "");
  auto again = resume(out.run_id);
  EXPECT_EQ(again.status, RunStatus::Succeeded) << again.reason;
  EXPECT_EQ(step(out.run_id, "deploy").status, StepStatus::Skipped);
  EXPECT_EQ(step(out.run_id, "deploy").reason, R"(when: steps.review.result.verdict == "PASS" was false)");
  EXPECT_TRUE((*store_->attempts(out.run_id, "deploy")).empty());
  EXPECT_FALSE(std::filesystem::exists(ws() / "deployed.txt"));
}

}  // namespace
}  // namespace orch
