// Engine tests: resume and replan. On each backend of the
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

TEST_P(EngineTest, ResumeNeverRerunsDoneStepsAndRetriesFailedOnes) {
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
TEST_P(EngineTest, ResumeOfALargePlanGoesOnWhereItStopped) {
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

TEST_P(EngineTest, ReplanRerunsChangedStepsAndTheirDescendantsOnly) {
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
TEST_P(EngineTest, ReplanNumbersRemovedStepsAfterThePlansSteps) {
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
TEST_P(EngineTest, ReplanRerunsAStepPutBackAfterItsDependencyRanAgain) {
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
TEST_P(EngineTest, ReplanRerunsAStepWhoseSchemaFileChanged) {
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
TEST_P(EngineTest, ReplanKeepsStepsThatOnlyWroteOutTheirDefaults) {
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
TEST_P(EngineTest, AStepReplannedToRunAgainHasItsOwnBudgetAgain) {
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
TEST_P(EngineTest, AStepWithAttemptsFromAnEarlierDriveIsNotRetriedNotSkipped) {
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

TEST_P(EngineTest, ASecondDriverOfTheSameRunIsRefused) {
  auto out = run("steps:\n  - {id: a, run: [\"false\"]}\n");
  auto lock = store_->lock(out.run_id);
  ASSERT_TRUE(lock);
  Engine engine(*store_, EngineOptions{});
  auto again = engine.resume(out.run_id, std::nullopt);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::Busy);
  EXPECT_NE(again.error().message.find("already being driven"), std::string::npos);
}

}  // namespace
}  // namespace orch
