// Engine::recover: what a dead driver left of a run, settled (engine/recover.cc).
#include <gtest/gtest.h>

#include "engine/snapshot.h"
#include "orch/clock.h"
#include "orch/engine.h"
#include "testing/engine_fixture.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::write_file;

// A driver that died in attempt 2 of `a` (kill -9): the run row still says
// running, the attempt is running in the ledger, and the attempt had changed
// out.txt, a `writes:` path whose snapshot it took before it started.
class RecoverTest : public orch::testing::EngineFixture {
 protected:
  std::string run_killed_in_attempt_2() {
    write_file(ws() / "out.txt", "old\n");
    write_file(ws() / "fail-a", "");
    RunOutcome first = run(R"(
steps:
  - id: a
    attempts: 1
    writes: [out.txt]
    sh: 'echo new > out.txt; [ ! -e fail-a ]'
)");
    EXPECT_EQ(first.status, RunStatus::Failed) << first.reason;
    EXPECT_EQ(read_file(ws() / "out.txt"), "old\n");
    const fs::path snapshot = store_->folder() / "runs" / first.run_id / "a.2.snapshot";
    auto taken = take_snapshot({fs::canonical(ws()) / "out.txt"}, snapshot, ws());
    EXPECT_TRUE(taken) << taken.error().message;
    const std::int64_t now = Clock::system().wall_ms();
    EXPECT_TRUE(store_->begin());
    AttemptRecord a;
    a.run_id = first.run_id;
    a.step_id = "a";
    a.number = 2;
    a.status = AttemptStatus::Running;
    a.started_at = now - 1000;
    a.snapshot_dir = snapshot.string();
    EXPECT_TRUE(store_->insert_attempt(a));
    StepRecord row = step(first.run_id, "a");
    row.status = StepStatus::Running;
    row.last_attempt = 2;
    row.reason.clear();
    row.finished_at = 0;
    EXPECT_TRUE(store_->upsert_step(row));
    RunRecord r = store_->find_run(first.run_id)->value();
    r.status = RunStatus::Running;
    r.finished_at = 0;
    r.owner_pid = 0;
    EXPECT_TRUE(store_->update_run(r));
    EXPECT_TRUE(store_->commit());
    write_file(ws() / "out.txt", "half written by attempt 2\n");
    return first.run_id;
  }
};

TEST_P(RecoverTest, SettlesWhatADeadDriverLeftAndASecondCallFindsNothing) {
  const std::string id = run_killed_in_attempt_2();
  Engine engine(*store_, EngineOptions{});
  auto first = engine.recover(id);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->attempts_closed, 1);
  EXPECT_TRUE(first->steps_failed.empty());
  EXPECT_EQ(read_file(ws() / "out.txt"), "old\n") << "the attempt's writes are put back";
  const auto tried = attempts(id, "a");
  ASSERT_EQ(tried.size(), 2u);
  EXPECT_EQ(tried[1].status, AttemptStatus::Interrupted);
  EXPECT_FALSE(tried[1].counted);
  EXPECT_FALSE(fs::exists(tried[1].snapshot_dir)) << "a snapshot put back is removed";
  // The run is left for a resume to drive: its status is not changed, and its lock is let go.
  const RunRecord after_first = store_->find_run(id)->value();
  EXPECT_EQ(after_first.status, RunStatus::Running);
  EXPECT_FALSE(store_->locked(id));
  const std::size_t events = store_->events(id)->size();

  auto second = engine.recover(id);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->processes_killed, 0);
  EXPECT_EQ(second->attempts_closed, 0);
  EXPECT_TRUE(second->steps_failed.empty());
  const RunRecord after_second = store_->find_run(id)->value();
  EXPECT_EQ(store_->events(id)->size(), events);
  EXPECT_EQ(after_second.spent_wall_ms, after_first.spent_wall_ms) << "the downtime is not driven time";
  EXPECT_EQ(after_second.updated_at, after_first.updated_at);
  EXPECT_EQ(attempts(id, "a").size(), 2u);

  // A resume (by another Engine) goes on from there.
  fs::remove(ws() / "fail-a");
  RunOutcome resumed = resume(id);
  EXPECT_EQ(resumed.status, RunStatus::Succeeded) << resumed.reason;
  EXPECT_EQ(read_file(ws() / "out.txt"), "new\n");
  EXPECT_EQ(attempts(id, "a").size(), 3u);
}

TEST_P(RecoverTest, AResumeAfterARecoveryIsTheResumeOfTheDeadDriversRun) {
  const std::string id = run_killed_in_attempt_2();
  fs::remove(ws() / "fail-a");
  Engine engine(*store_, EngineOptions{});
  ASSERT_TRUE(engine.recover(id));
  auto out = engine.resume(id, std::nullopt);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Succeeded) << out->reason;
  auto resumed = store_->events_of_kind(id, "run_resumed");
  ASSERT_TRUE(resumed);
  ASSERT_EQ(resumed->size(), 1u);
  EXPECT_NE(resumed->front().data_json.find("\"previous_status\":\"running\""), std::string::npos)
      << resumed->front().data_json;
}

TEST_P(RecoverTest, AStepWhoseWritesCannotBePutBackIsFailedAndTheResumeByTheSameEngineKeepsItFailed) {
  const std::string id = run_killed_in_attempt_2();
  fs::remove(ws() / "fail-a");
  // The snapshot is lost: what attempt 2 did cannot be undone.
  fs::remove_all(store_->folder() / "runs" / id / "a.2.snapshot");
  Engine engine(*store_, EngineOptions{});
  auto recovered = engine.recover(id);
  ASSERT_TRUE(recovered) << recovered.error().message;
  EXPECT_EQ(recovered->attempts_closed, 1);
  EXPECT_EQ(recovered->steps_failed, std::vector<std::string>{"a"});
  StepRecord a = step(id, "a");
  EXPECT_EQ(a.status, StepStatus::Failed);
  EXPECT_NE(a.reason.find("its writes could not be put back"), std::string::npos) << a.reason;
  auto out = engine.resume(id, std::nullopt);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Failed) << out->reason;
  EXPECT_EQ(attempts(id, "a").size(), 2u) << "not run again on what attempt 2 left";
  EXPECT_EQ(read_file(ws() / "out.txt"), "half written by attempt 2\n");
}

TEST_P(RecoverTest, ARunWhoseWorkspaceIsGoneIsRefusedWithNothingChanged) {
  const std::string id = run_killed_in_attempt_2();
  const fs::path moved = dir_ / "ws-moved";
  fs::rename(ws(), moved);
  Engine engine(*store_, EngineOptions{});
  auto refused = engine.recover(id);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(refused.error().message.find("is not a folder any more"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(attempts(id, "a")[1].status, AttemptStatus::Running);
  EXPECT_FALSE(store_->locked(id));
}

TEST_P(RecoverTest, ARunDrivenByALiveProcessIsNotTouched) {
  const std::string id = run_killed_in_attempt_2();
  auto held = store_->lock(id);
  ASSERT_TRUE(held) << held.error().message;
  Engine engine(*store_, EngineOptions{});
  auto refused = engine.recover(id);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::Busy);
  EXPECT_EQ(attempts(id, "a")[1].status, AttemptStatus::Running);
  EXPECT_EQ(read_file(ws() / "out.txt"), "half written by attempt 2\n");
}

TEST_P(RecoverTest, ARunNoDriverDiedInNeedsNothing) {
  RunOutcome done = run("steps:\n  - {id: a, sh: 'true'}\n");
  ASSERT_EQ(done.status, RunStatus::Succeeded) << done.reason;
  const RunRecord before = store_->find_run(done.run_id)->value();
  const std::size_t events = store_->events(done.run_id)->size();
  Engine engine(*store_, EngineOptions{});
  auto recovered = engine.recover(done.run_id);
  ASSERT_TRUE(recovered) << recovered.error().message;
  EXPECT_EQ(recovered->attempts_closed, 0);
  EXPECT_EQ(store_->events(done.run_id)->size(), events);
  const RunRecord after = store_->find_run(done.run_id)->value();
  EXPECT_EQ(after.status, RunStatus::Succeeded);
  EXPECT_EQ(after.updated_at, before.updated_at);
  EXPECT_EQ(after.finished_at, before.finished_at);
}

INSTANTIATE_TEST_SUITE_P(Backends, RecoverTest, ::testing::ValuesIn(orch::testing::kEngineBackends),
                         orch::testing::engine_backend_name);

}  // namespace
}  // namespace orch
