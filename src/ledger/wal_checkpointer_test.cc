// The ledger's WAL checkpoints: off the writer's thread while the writer pauses
// now and then, in the writer itself when it never does, and never a thread for
// a short-lived writer. Real SQLite files in temp dirs.
#include "ledger/wal_checkpointer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "ledger/ledger_test_support.h"
#include "ledger/sqlite_store.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace lt = ledger_test;
namespace fs = std::filesystem;

constexpr std::uintmax_t kCkptFrameBytes = 4096 + 24;  // page size + WAL frame header

std::unique_ptr<SqliteStore> open_ckpt_store(const fs::path& db) {
  auto store = SqliteStore::open(db);
  EXPECT_TRUE(store) << store.error().message;
  return store ? std::move(*store) : nullptr;
}

// A store with run "r1" in it, for the events the tests write.
std::unique_ptr<SqliteStore> open_ckpt_store_with_run(const fs::path& db) {
  auto store = open_ckpt_store(db);
  if (store) {
    EXPECT_TRUE(store->insert_run(lt::sample_run("r1")));
  }
  return store;
}

std::uintmax_t ckpt_file_size(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

// One transaction of eight ~3 KB events: about ten new pages, so ten WAL frames.
void commit_ckpt_events(SqliteStore& store, int batch) {
  ASSERT_TRUE(store.begin());
  for (int i = 0; i < 8; ++i) {
    EventRecord event;
    event.run_id = "r1";
    event.ts = batch;
    event.kind = "note";
    event.data_json = "{\"text\":\"" + std::string(3000, static_cast<char>('a' + (batch + i) % 26)) + "\"}";
    ASSERT_TRUE(store.append_event(event));
  }
  ASSERT_TRUE(store.commit());
}

std::int64_t count_ckpt_events(const fs::path& db) {
  auto store = open_ckpt_store(db);
  auto events = store->events("r1");
  EXPECT_TRUE(events) << events.error().message;
  return events ? static_cast<std::int64_t>(events->size()) : -1;
}

TEST(WalCheckpointer, AWriterThatPausesIsCheckpointedByTheThreadAndItsWalStaysSmall) {
  testing::TempDir dir;
  const fs::path db = dir / "orch.db";
  const fs::path wal = dir / "orch.db-wal";
  constexpr int kBatches = 120;  // ~1200 frames in all: past the foreground threshold
  std::uintmax_t largest_wal = 0;
  {
    auto store = open_ckpt_store_with_run(db);
    ASSERT_TRUE(store);
    const auto db_size_before = ckpt_file_size(db);
    for (int batch = 0; batch < kBatches; ++batch) {
      commit_ckpt_events(*store, batch);
      // The pause: whatever the commit asked of the thread is done before the
      // next one, so the writer finds the WAL checkpointed and starts it over.
      ASSERT_TRUE(testing::wait_for([&] { return store->checkpointer().idle(); }, 10000));
      largest_wal = std::max(largest_wal, ckpt_file_size(wal));
    }
    EXPECT_TRUE(store->checkpointer().started());
    EXPECT_GE(store->checkpointer().completed(), kBatches * 10 / kBackgroundCheckpointFrames - 1);
    EXPECT_EQ(store->checkpointer().failed(), 0);
    // The pages reached the database file while the writer (which never
    // checkpointed itself: its WAL never reached the foreground threshold) kept
    // its connection open.
    EXPECT_GT(ckpt_file_size(db), db_size_before + 800 * 4096);
  }
  // Never much more than the background threshold plus one transaction, where
  // SQLite's own automatic checkpoint would have let it reach 1000 frames.
  EXPECT_LT(largest_wal, (kBackgroundCheckpointFrames + 40) * kCkptFrameBytes) << largest_wal;
  EXPECT_GT(largest_wal, 0u);
  EXPECT_EQ(count_ckpt_events(db), kBatches * 8);
}

TEST(WalCheckpointer, AWriterThatNeverPausesCheckpointsItselfAndItsWalStaysBounded) {
  testing::TempDir dir;
  const fs::path db = dir / "orch.db";
  const fs::path wal = dir / "orch.db-wal";
  constexpr int kBatches = 300;  // ~3000 frames: three times the foreground threshold
  std::uintmax_t largest_wal = 0;
  {
    auto store = open_ckpt_store_with_run(db);
    ASSERT_TRUE(store);
    for (int batch = 0; batch < kBatches; ++batch) {
      commit_ckpt_events(*store, batch);
      largest_wal = std::max(largest_wal, ckpt_file_size(wal));
    }
  }
  // A commit past the foreground threshold checkpoints in the writer (or, when the
  // thread holds the checkpoint, the next one does), and the writer's next
  // transaction starts the WAL over: it never holds the 3000 frames.
  EXPECT_LT(largest_wal, (kForegroundCheckpointFrames + 200) * kCkptFrameBytes);
  EXPECT_GT(largest_wal, kBackgroundCheckpointFrames * kCkptFrameBytes);
  EXPECT_EQ(count_ckpt_events(db), kBatches * 8);
}

TEST(WalCheckpointer, AShortLivedWriterStartsNoThreadAndItsWalIsKeptSmall) {
  testing::TempDir dir;
  const fs::path db = dir / "orch.db";
  {
    auto store = open_ckpt_store_with_run(db);
    ASSERT_TRUE(store);
    commit_ckpt_events(*store, 0);
    EXPECT_FALSE(store->checkpointer().started());
    EXPECT_EQ(store->checkpointer().completed(), 0);
  }
  EXPECT_EQ(count_ckpt_events(db), 8);
}

// The mask of thread `tid` of this process, from /proc/self/task/TID/status.
std::uint64_t blocked_signals_of(const std::string& tid) {
  std::ifstream status("/proc/self/task/" + tid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  ADD_FAILURE() << "no SigBlk line for thread " << tid;
  return 0;
}

bool blocks(std::uint64_t mask, int sig) {
  return (mask >> (sig - 1)) & 1U;
}

// Signals are the main thread's: the checkpoint thread blocks them all, so a
// child's SIGCHLD or a Ctrl-C never wakes it, and the caller's mask is unchanged.
TEST(WalCheckpointer, TheThreadBlocksEverySignalAndLeavesTheCallersMaskAlone) {
  testing::TempDir dir;
  const fs::path db = dir / "orch.db";
  auto store = open_ckpt_store_with_run(db);
  ASSERT_TRUE(store);
  const std::string self = std::to_string(::gettid());
  const std::uint64_t before = blocked_signals_of(self);
  ASSERT_FALSE(blocks(before, SIGCHLD)) << "the test runner blocks SIGCHLD itself";
  for (int batch = 0; batch < 100 && !store->checkpointer().started(); ++batch) {
    commit_ckpt_events(*store, batch);  // the WAL grows until the thread is asked for
  }
  ASSERT_TRUE(store->checkpointer().started());
  EXPECT_EQ(blocked_signals_of(self), before);

  int others = 0;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    const std::string tid = task.path().filename().string();
    if (tid == self) continue;
    const std::uint64_t mask = blocked_signals_of(tid);
    // gtest may run no other thread; any thread here besides the checkpointer is
    // one this test did not start, so all of them are checked.
    ++others;
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGUSR1, SIGALRM}) {
      EXPECT_TRUE(blocks(mask, sig)) << "thread " << tid << " does not block signal " << sig;
    }
  }
  EXPECT_EQ(others, 1) << "the checkpoint thread is the only other thread";
}

}  // namespace
}  // namespace orch
