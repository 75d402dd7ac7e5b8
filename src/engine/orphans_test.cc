// kill_orphans by recorded process group: it kills the group an attempt still
// running was started in, and leaves alone a group whose number was taken by
// another process since (a different leader start time, boot or pid namespace).
#include "engine/orphans.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "ledger/ledger_test_support.h"
#include "orch/clock.h"
#include "orch/store.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace lt = ledger_test;

// A child in a process group of its own (as a step's is), in this session; it
// clears its environment, so only the recorded group can find it.
pid_t start_group_leader() {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execle("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr), static_cast<char* const*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first
  return pid;
}

bool gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

class OrphansTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = open_sqlite_store(dir_ / "orch.db");
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
    ASSERT_TRUE(store_->begin());
    ASSERT_TRUE(store_->insert_run(lt::sample_run("r1")));
    ASSERT_TRUE(store_->upsert_step(lt::sample_step("r1", "a", 0)));
    AttemptRecord a = lt::started_attempt("r1", "a", 1);
    a.started_at = Clock::system().wall_ms() - 1000;  // before the leader started
    ASSERT_TRUE(store_->insert_attempt(a));
    ASSERT_TRUE(store_->commit());
  }

  void record(const nlohmann::json& data) {
    ASSERT_TRUE(store_->begin());
    EventRecord e{0, "r1", Clock::system().wall_ms(), "attempt_spawned", "a", 1, data.dump()};
    ASSERT_TRUE(store_->append_event(e));
    ASSERT_TRUE(store_->commit());
  }

  // Starts a group leader and writes its line, as attempt `attempt` of step
  // "a", to run r1's spawn journal (as a driver does right after the spawn).
  pid_t start_leader_in_journal(int attempt) {
    const std::int64_t spawned = Clock::system().wall_ms();
    const pid_t leader = start_group_leader();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::filesystem::create_directories(dir_ / "runs" / "r1");
    SpawnJournal journal;
    journal.set_path(spawn_journal_path(dir_.path(), "r1"));
    EXPECT_TRUE(journal.record("a", attempt, leader, spawned));
    return leader;
  }

  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(OrphansTest, TheRecordedGroupOfARunningAttemptIsKilled) {
  const std::int64_t spawned = Clock::system().wall_ms();
  pid_t leader = start_group_leader();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // exec'd, in its group
  record(process_group_record(leader, spawned));
  auto killed = kill_orphans(store_.get(), "r1");
  ASSERT_TRUE(killed) << killed.error().message;
  EXPECT_EQ(*killed, 1);
  EXPECT_TRUE(gone(leader));
}

TEST_F(OrphansTest, AGroupWhoseNumberWasTakenSinceIsLeftAlone) {
  const std::int64_t spawned = Clock::system().wall_ms();
  pid_t leader = start_group_leader();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const nlohmann::json data = process_group_record(leader, spawned);
  for (const char* what : {"spawned_ms", "boot", "pidns"}) {
    nlohmann::json other = data;
    // Recorded for a process started an hour earlier, in another boot, in another namespace.
    other[what] =
        std::string(what) == "spawned_ms" ? nlohmann::json(spawned - 3600 * 1000) : nlohmann::json("1");
    record(other);
    auto killed = kill_orphans(store_.get(), "r1");
    ASSERT_TRUE(killed) << killed.error().message;
    EXPECT_EQ(*killed, 0) << what;
    EXPECT_EQ(kill(leader, 0), 0) << "killed a process the record did not name (" << what << ")";
  }
  kill(leader, SIGKILL);
  EXPECT_TRUE(gone(leader));
}

// A group the dead driver started but whose attempt_spawned event it never
// committed (kill -9 within the quarter second before the next commit) is in the
// spawn journal, written as the group was started: found from there.
TEST_F(OrphansTest, AGroupOnlyTheSpawnJournalNamesIsKilled) {
  const pid_t leader = start_leader_in_journal(1);
  auto killed = kill_orphans(store_.get(), "r1");
  ASSERT_TRUE(killed) << killed.error().message;
  EXPECT_EQ(*killed, 1);
  EXPECT_TRUE(gone(leader));
}

// A line per group, each whole. clear() leaves a small journal as it is and
// empties one that has grown; lines go on after it.
TEST(SpawnJournal, WritesALineAGroupAndStartsOverOnceItHasGrown) {
  testing::TempDir dir;
  const auto path = dir / "spawned";
  SpawnJournal journal;
  journal.set_path(path);
  EXPECT_FALSE(std::filesystem::exists(path)) << "made before the first group";
  journal.clear();
  ASSERT_TRUE(journal.record("a", 1, 4242, 1000));
  ASSERT_TRUE(journal.record("b\"q", 2, 4343, 2000));
  std::vector<nlohmann::json> lines;
  {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["step"], "b\"q");
  EXPECT_EQ(lines[1]["attempt"], 2);
  EXPECT_EQ(lines[1]["pgid"], 4343);
  EXPECT_EQ(lines[1]["spawned_ms"], 2000);
  // The fields that tell this group from a later one with its number.
  const nlohmann::json same = process_group_record(4343, 2000);
  for (const char* key : {"sid", "boot", "pidns"}) EXPECT_EQ(lines[1][key], same[key]) << key;
  journal.clear();
  const auto small = std::filesystem::file_size(path);
  EXPECT_GT(small, 0u) << "a small journal is left as it is";
  for (int i = 0; std::filesystem::file_size(path) < SpawnJournal::kClearAbove; ++i)
    ASSERT_TRUE(journal.record("s" + std::to_string(i), 1, 5000 + i, 3000));
  journal.clear();
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
  ASSERT_TRUE(journal.record("c", 1, 4444, 3000));
  std::ifstream again(path);
  std::string only;
  std::getline(again, only);
  EXPECT_EQ(nlohmann::json::parse(only)["step"], "c");
  EXPECT_EQ(std::filesystem::file_size(path), only.size() + 1);
}

// The journal keeps the groups of attempts that ended: an attempt the ledger has
// finished had its group killed as it ended, and a group with a journal line of
// its own is not taken for it; a line cut off mid-write is ignored.
TEST_F(OrphansTest, TheSpawnJournalLineOfAFinishedAttemptKillsNothing) {
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->insert_attempt(lt::finished_attempt("r1", "a", 2)));
  ASSERT_TRUE(store_->commit());
  const pid_t leader = start_leader_in_journal(2);
  std::ofstream(spawn_journal_path(dir_.path(), "r1"), std::ios::app)
      << R"({"step":"a","attempt":1,"pgid":)" << leader;  // no end: cut off
  auto killed = kill_orphans(store_.get(), "r1");
  ASSERT_TRUE(killed) << killed.error().message;
  EXPECT_EQ(*killed, 0);
  EXPECT_EQ(kill(leader, 0), 0) << "killed the group of a finished attempt";
  kill(leader, SIGKILL);
  EXPECT_TRUE(gone(leader));
}

}  // namespace
}  // namespace orch
