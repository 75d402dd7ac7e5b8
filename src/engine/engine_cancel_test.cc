// Engine tests: cancels (from another connection, racing a resume) and signals. On each backend of the
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

// While a process holds the run's lock, a row that says interrupted is one a
// starting resume has yet to rewrite: `orch cancel` waits for that driver to end
// the run, instead of taking the stale row for its answer.
TEST_P(EngineTest, ACancelWaitsForTheDriverThatHoldsTheLockNotTheRowItHasYetToWrite) {
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

// A cancel read in the turn that records an attempt (with the run row, inside
// that turn's transaction) keeps the attempt's process from being started.
// (The request lands after the turn's first look for one, as the turn begins its
// transaction; one that is there before the loop starts is seen before anything
// is recorded.)
TEST_P(EngineTest, ACancelReadInTheTurnThatRecordsAnAttemptKeepsItsProcessFromStarting) {
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

TEST_P(EngineTest, CancelFromAnotherConnectionStopsTheRun) {
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
      canceller = std::thread([this, run_id] {
        auto other = ledger_.open();  // another connection, of the same backend
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

// A cancel left over from a driver that died before acting on it does not stop a
// resume, but a new one that lands while the resume reads and checks the plan does.
TEST_P(EngineTest, ANewCancelIsSeenByAResumeEvenWhenAnOldOneWasLeftSet) {
  auto first = run("steps:\n  - {id: a, sh: 'echo ran >> ran.log; exit 1', attempts: 1}\n");
  RunRecord row = **store_->find_run(first.run_id);
  row.status = RunStatus::Interrupted;
  row.cancel_requested = true;  // asked of a driver that died first
  ASSERT_TRUE(store_->update_run(row));
  CountingStore hooked(*store_);
  int begins = 0;
  hooked.before_begin = [&] {
    if (++begins != 2) return;  // after the resume cleared the old request, before it writes
    auto other = ledger_.open();
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
TEST_P(EngineTest, ACancelLandingJustBeforeAResumeClearsAnOldOneIsKept) {
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
    auto other = ledger_.open();
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
TEST_P(EngineTest, ACancelWhoseDriverLetsGoWithoutDrivingCancelsTheRunItself) {
  auto out = run("steps:\n  - {id: a, run: [\"false\"]}\n");
  RunRecord row = **store_->find_run(out.run_id);
  row.status = RunStatus::Interrupted;
  ASSERT_TRUE(store_->update_run(row));
  std::unique_ptr<StoreLock> lock = std::move(*store_->lock(out.run_id));
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    lock.reset();  // the resume gave up
  });
  auto other = ledger_.open();
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
TEST_P(EngineTest, AResumeThatLosesTheLockToACancelRefusesToUndoIt) {
  auto first = run("steps:\n  - {id: a, sh: 'echo ran >> ran.log; exit 1', attempts: 1}\n");
  ASSERT_EQ(first.status, RunStatus::Failed);
  RunRecord row = **store_->find_run(first.run_id);
  row.status = RunStatus::Interrupted;  // as a run stopped by Ctrl-C is: cancel takes those
  ASSERT_TRUE(store_->update_run(row));
  CountingStore hooked(*store_);
  hooked.after_find_run = [&] {
    auto other = ledger_.open();
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
TEST_P(EngineTest, ACancelThatLandsWhileAResumeSetsUpIsActedOn) {
  auto first = run("steps:\n  - {id: a, sh: 'echo ran >> ran.log; exit 1', attempts: 1}\n");
  ASSERT_EQ(first.status, RunStatus::Failed);
  CountingStore hooked(*store_);
  bool asked = false;
  hooked.before_begin = [&] {
    if (asked) return;
    asked = true;  // the resume holds the run's lock and writes nothing yet
    auto other = ledger_.open();
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
TEST_P(EngineTest, ASignalWhileAnAttemptIsPreparedKeepsItFromStarting) {
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

}  // namespace
}  // namespace orch
