// Engine tests: `writes:` snapshots, their restores, and the store they must not touch. On each backend of
// the ledger (testing/engine_fixture.h: EngineTest), with real plans and real processes.
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

// `writes: ["."]` with the store inside the workspace (the default .orch/): a
// snapshot would copy the ledger into itself until paths were too long, and a
// restore would put an old ledger over the live one. The attempt fails, saying
// why, and nothing is copied.
// SQLite only: about the ledger's file (and its WAL) kept inside the workspace.
TEST_P(EngineSqliteTest, AWritesFolderThatHoldsTheStoreFailsTheAttemptWithoutCopyingIt) {
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
// SQLite only: about the ledger's file and its -wal beside the user's files.
TEST_P(EngineSqliteTest, WithTheLedgerInTheWorkspaceOnlyWhatOrchKeepsThereIsRefused) {
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

TEST_P(EngineTest, WritesAreRestoredWhenAnAttemptFailsItsChecks) {
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
TEST_P(EngineTest, AWritesPathThatIsASymlinkIsPutBackLinkAndTarget) {
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
TEST_P(EngineTest, SnapshotsAreRemovedOnceTheirAttemptHasEnded) {
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
TEST_P(EngineTest, WhatAFailedAttemptLeftRunningIsKilledBeforeItsWritesAreRestored) {
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
TEST_P(EngineTest, AStepWhoseWritesCannotBePutBackIsNotRetried) {
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
TEST_P(EngineTest, StepsWhoseWritesOverlapTakeTurns) {
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
TEST_P(EngineTest, StepsWhoseWritesOverlapThroughASymlinkTakeTurns) {
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

// An attempt interrupted (Ctrl-C) whose writes cannot be put back leaves its
// step failed, not pending: a resume must not run it on the leftovers unasked.
TEST_P(EngineTest, AnInterruptedStepWhoseWritesCannotBePutBackIsFailed) {
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
