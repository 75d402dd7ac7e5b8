// Several connections on one ledger: readers never wait for a writer, and two
// writers (two processes) on different runs both succeed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>

#include "ledger/ledger_test_support.h"
#include "orch/store.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace lt = ledger_test;
using Clock = std::chrono::steady_clock;

TEST(Concurrency, AReaderSeesCommittedDataWhileTheWriterHoldsATransaction) {
  testing::TempDir dir;
  const auto path = dir / ".orch/orch.db";
  auto writer = open_sqlite_store(path);
  ASSERT_TRUE(writer) << writer.error().message;
  Store& w = **writer;
  ASSERT_TRUE(w.insert_run(lt::sample_run("committed")));
  ASSERT_TRUE(w.begin());
  ASSERT_TRUE(w.insert_run(lt::sample_run("uncommitted")));
  ASSERT_TRUE(w.append_event(lt::sample_event("uncommitted", "run_started")));

  // `orch status` in another process: opens the ledger and reads while the write lock is held.
  const auto start = Clock::now();
  auto reader = open_sqlite_store(path);
  ASSERT_TRUE(reader) << reader.error().message;
  auto runs = (*reader)->list_runs();
  ASSERT_TRUE(runs) << runs.error().message;
  auto hidden = (*reader)->find_run("uncommitted");
  const auto elapsed = Clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(1)) << "the reader waited for the writer";
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().id, "committed");
  ASSERT_TRUE(hidden);
  EXPECT_FALSE(*hidden);

  ASSERT_TRUE(w.commit());
  EXPECT_TRUE(*(*reader)->find_run("uncommitted")) << "a reader sees the next commit";
  EXPECT_EQ((*reader)->events("uncommitted")->size(), 1u);
}

// One writer's work: `turns` loop turns of one run, each a short transaction
// like the engine's (a step, an attempt started and finished, events, the run).
Expected<void> drive_run(Store& store, const std::string& run_id, int turns) {
  for (int i = 0; i < turns; ++i) {
    const std::string step_id = "s" + std::to_string(i);
    ORCH_TRY(store.begin());
    ORCH_TRY(store.upsert_step(lt::sample_step(run_id, step_id, i)));
    ORCH_TRY(store.insert_attempt(lt::started_attempt(run_id, step_id, 1)));
    ORCH_TRY(store.append_event(lt::sample_event(run_id, "attempt_started", i)));
    ORCH_TRY(store.finish_attempt(lt::finished_attempt(run_id, step_id, 1)));
    ORCH_TRY(store.append_event(lt::sample_event(run_id, "step_done", i)));
    RunRecord run = lt::sample_run(run_id);
    run.spent_attempts = i + 1;
    ORCH_TRY(store.update_run(run));
    ORCH_TRY(store.commit());
  }
  return {};
}

TEST(Concurrency, TwoProcessesWritingDifferentRunsBothSucceed) {
  testing::TempDir dir;
  const auto path = dir / ".orch/orch.db";
  constexpr int kTurns = 300;
  {
    auto store = open_sqlite_store(path);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->insert_run(lt::sample_run("parent-run")));
    ASSERT_TRUE((*store)->insert_run(lt::sample_run("child-run")));
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto store = open_sqlite_store(path);
    auto done =
        store ? drive_run(**store, "child-run", kTurns) : Expected<void>(std::unexpected(store.error()));
    if (!done) std::fprintf(stderr, "child: %s\n", done.error().message.c_str());
    _exit(done ? 0 : 1);
  }
  auto store = open_sqlite_store(path);
  ASSERT_TRUE(store) << store.error().message;
  const auto start = Clock::now();
  auto done = drive_run(**store, "parent-run", kTurns);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_TRUE(done) << done.error().message;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_LT(elapsed.count(), 10000);

  std::set<std::int64_t> seqs;
  for (const char* run_id : {"parent-run", "child-run"}) {
    EXPECT_EQ((*store)->steps(run_id)->size(), static_cast<std::size_t>(kTurns)) << run_id;
    EXPECT_EQ((*store)->attempts(run_id)->size(), static_cast<std::size_t>(kTurns)) << run_id;
    EXPECT_EQ((*(*store)->find_run(run_id))->spent_attempts, kTurns) << run_id;
    auto events = (*store)->events(run_id);
    ASSERT_EQ(events->size(), static_cast<std::size_t>(2 * kTurns)) << run_id;
    for (std::size_t i = 1; i < events->size(); ++i) EXPECT_LT((*events)[i - 1].seq, (*events)[i].seq);
    for (const auto& e : *events) seqs.insert(e.seq);
  }
  EXPECT_EQ(seqs.size(), static_cast<std::size_t>(4 * kTurns)) << "every event has its own seq";
}

}  // namespace
}  // namespace orch
