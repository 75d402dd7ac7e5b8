// The schema's own guarantees, checked through a plain sqlite3 connection (as a
// user poking at .orch/orch.db would), and the connection settings.
#include "ledger/schema.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "ledger/cycle_rows.h"
#include "ledger/ledger_test_support.h"
#include "ledger/record_rows.h"
#include "ledger/sqlite_store.h"
#include "sqlite/connection_settings.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace lt = ledger_test;

// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::unique_ptr<SqliteStore> open_store(const std::filesystem::path& path) {
  auto store = SqliteStore::open(path);
  EXPECT_TRUE(store) << store.error().message;
  return store ? std::move(*store) : nullptr;
}

// A ledger with run r1, step a, attempt 1 finished, attempt 2 running, one event, one plan.
struct LedgerWithRun {
  testing::TempDir dir;
  std::filesystem::path db = dir / "orch.db";
  LedgerWithRun() {
    auto store = open_store(db);
    EXPECT_TRUE(store->insert_run(lt::sample_run("r1")));
    EXPECT_TRUE(store->upsert_step(lt::sample_step("r1", "a", 0)));
    EXPECT_TRUE(store->insert_attempt(lt::started_attempt("r1", "a", 1)));
    EXPECT_TRUE(store->finish_attempt(lt::finished_attempt("r1", "a", 1)));
    EXPECT_TRUE(store->insert_attempt(lt::started_attempt("r1", "a", 2)));
    EXPECT_TRUE(store->append_event(lt::sample_event("r1", "run_started")));
    EXPECT_TRUE(store->insert_plan_version(PlanVersion{"r1", 1, "p.yaml", "steps: []", 1}));
  }
};

TEST(Schema, AFinishedAttemptCannotBeUpdatedByHand) {
  LedgerWithRun ledger;
  lt::RawDb raw(ledger.db);
  const std::string refused = raw.exec("UPDATE attempts SET status = 'failed' WHERE number = 1");
  EXPECT_NE(refused.find("append-only"), std::string::npos) << refused;
  EXPECT_NE(raw.exec("UPDATE attempts SET reason = 'rewritten' WHERE number = 1"), "");
  EXPECT_EQ(raw.query("SELECT status FROM attempts WHERE number = 1"), "timed_out");
  // A running attempt may still be finished, but never re-keyed.
  EXPECT_NE(raw.exec("UPDATE attempts SET number = 7 WHERE number = 2"), "");
  EXPECT_EQ(raw.exec("UPDATE attempts SET status = 'failed' WHERE number = 2"), "");
  EXPECT_NE(raw.exec("UPDATE attempts SET status = 'succeeded' WHERE number = 2"), "");
}

TEST(Schema, AttemptsEventsAndPlansAreNeverDeletedOrReplaced) {
  LedgerWithRun ledger;
  lt::RawDb raw(ledger.db);
  for (const char* sql : {
           "DELETE FROM attempts",
           "DELETE FROM events",
           "UPDATE events SET kind = 'forged'",
           "DELETE FROM plans",
           "UPDATE plans SET text = 'forged'",
           "INSERT OR REPLACE INTO attempts SELECT * FROM attempts WHERE number = 1",
           "INSERT OR REPLACE INTO events SELECT * FROM events",
           "INSERT OR REPLACE INTO plans SELECT * FROM plans",
       }) {
    const std::string error = raw.exec(sql);
    EXPECT_NE(error, "") << sql;
    EXPECT_TRUE(error.find("append-only") != std::string::npos ||
                error.find("immutable") != std::string::npos)
        << sql << ": " << error;
  }
  EXPECT_EQ(raw.query("SELECT count(*) FROM attempts"), "2");
  EXPECT_EQ(raw.query("SELECT count(*) FROM events"), "1");
  EXPECT_EQ(raw.query("SELECT kind FROM events"), "run_started");
  EXPECT_EQ(raw.query("SELECT text FROM plans"), "steps: []");
}

TEST(Schema, StatusColumnsRefuseUnknownNames) {
  LedgerWithRun ledger;
  lt::RawDb raw(ledger.db);
  EXPECT_NE(raw.exec("UPDATE runs SET status = 'done'"), "");
  EXPECT_NE(raw.exec("UPDATE steps SET status = 'succeeded'"), "");
  EXPECT_NE(raw.exec("UPDATE attempts SET status = 'done' WHERE number = 2"), "");
}

// Every value each status column may hold is accepted, and only those.
TEST(Schema, StatusColumnsAcceptEveryListedName) {
  LedgerWithRun ledger;
  lt::RawDb raw(ledger.db);
  for (const char* s : {"running", "succeeded", "failed", "cancelled", "budget_exhausted", "escalated",
                        "interrupted", "awaiting_approval"})
    EXPECT_EQ(raw.exec(fmt::format("UPDATE runs SET status = '{}'", s)), "") << s;
  for (const char* s : {"pending", "running", "done", "failed", "skipped", "cancelled", "awaiting_approval"})
    EXPECT_EQ(raw.exec(fmt::format("UPDATE steps SET status = '{}'", s)), "") << s;
  EXPECT_NE(raw.exec("UPDATE steps SET status = 'Done'"), "") << "names are compared exactly";
  EXPECT_NE(raw.exec("UPDATE steps SET status = ''"), "");
  for (const char* s :
       {"running", "succeeded", "failed", "timed_out", "cancelled", "interrupted", "stalled"}) {
    EXPECT_EQ(raw.exec(fmt::format("INSERT INTO attempts (run_id, step_id, number, status, counted, ending,"
                                   " exit_code, signal, reason, checks_json, fingerprint, stdout_path,"
                                   " stderr_path, stdout_bytes, stderr_bytes, stdout_truncated,"
                                   " stderr_truncated, output_tail, tokens_in, tokens_out, cost_usd,"
                                   " started_at, finished_at, duration_ms, snapshot_dir) VALUES ('r1', 'a',"
                                   " (SELECT max(number) + 1 FROM attempts), '{}', 1, '', 0, 0, '', '[]', '',"
                                   " '', '', 0, 0, 0, 0, '', 0, 0, 0, 0, 0, 0, '')",
                                   s)),
              "")
        << s;
  }
  EXPECT_NE(raw.exec("UPDATE attempts SET status = 'stalled ' WHERE number = 2"), "");
  EXPECT_EQ(raw.exec("INSERT INTO traces VALUES ('t', 'r', '', '/w', 'DONE', 'open', '{}', '', 1, 1, 0)"),
            "");
  for (const char* s : {"open", "done", "escalated", "abandoned"})
    EXPECT_EQ(raw.exec(fmt::format("UPDATE traces SET status = '{}'", s)), "") << s;
  EXPECT_NE(raw.exec("UPDATE traces SET status = 'closed'"), "");
  EXPECT_EQ(raw.exec("INSERT INTO reviews VALUES ('v', 'n', '/w', 'running', '', 0, '{}', 1, 1)"), "");
  for (const char* s : {"running", "passed", "failed", "escalated", "spend_cap"})
    EXPECT_EQ(raw.exec(fmt::format("UPDATE reviews SET status = '{}'", s)), "") << s;
  for (const char* s : {"", "PASS", "REVISE", "BLOCK", "INCOMPLETE"})
    EXPECT_EQ(raw.exec(fmt::format("UPDATE reviews SET verdict = '{}'", s)), "") << s;
  EXPECT_NE(raw.exec("UPDATE reviews SET status = 'done'"), "");
  EXPECT_NE(raw.exec("UPDATE reviews SET verdict = 'pass'"), "");
  EXPECT_EQ(raw.exec("INSERT INTO cycles VALUES ('c', 'n', '/w', '/w/cycle.yaml', 'running', 0, '{}', 1, 1)"),
            "");
  for (const char* s : {"running", "converged", "max_iterations", "budget", "failed"})
    EXPECT_EQ(raw.exec(fmt::format("UPDATE cycles SET status = '{}'", s)), "") << s;
  EXPECT_NE(raw.exec("UPDATE cycles SET status = 'done'"), "");
  EXPECT_NE(raw.exec("UPDATE cycles SET status = 'max iterations'"), "");
}

// A CHECK `x IN (...)` of more than two values makes SQLite build a temporary
// b-tree of the list for every row a statement writes, which was a third of
// orch's own CPU on the 5000-step benchmark (schema v7). No statement the store
// writes with builds one.
TEST(Schema, NoWriteStatementBuildsATemporaryTable) {
  LedgerWithRun ledger;
  lt::RawDb raw(ledger.db);
  const std::pair<const char*, const char*> writes[] = {
      {"kInsertRun", detail::rows::kInsertRun},
      {"kUpdateRun", detail::rows::kUpdateRun},
      {"kRequestCancel", detail::rows::kRequestCancel},
      {"kInsertPlan", detail::rows::kInsertPlan},
      {"kUpsertStep", detail::rows::kUpsertStep},
      {"kInsertAttempt", detail::rows::kInsertAttempt},
      {"kFinishAttempt", detail::rows::kFinishAttempt},
      {"kInsertEvent", detail::rows::kInsertEvent},
      {"kInsertTrace", detail::rows::kInsertTrace},
      {"kUpdateTrace", detail::rows::kUpdateTrace},
      {"kInsertTraceEvent", detail::rows::kInsertTraceEvent},
      {"kInsertReview", detail::rows::kInsertReview},
      {"kUpdateReview", detail::rows::kUpdateReview},
      {"kInsertCycle", detail::rows::kInsertCycle},
      {"kUpdateCycle", detail::rows::kUpdateCycle},
      {"kInsertTransition", detail::rows::kInsertTransition},
  };
  for (const auto& [name, sql] : writes) EXPECT_EQ(raw.count_opcode(sql, "OpenEphemeral"), 0) << name;
  // The probe itself sees one: a list in a statement builds its table.
  EXPECT_EQ(
      raw.count_opcode("UPDATE steps SET reason = '' WHERE reason NOT IN ('a', 'b', 'c')", "OpenEphemeral"),
      1);
}

TEST(Schema, TheFileIsMarkedVersionedAndInWalMode) {
  LedgerWithRun ledger;
  lt::RawDb raw(ledger.db);
  EXPECT_EQ(raw.query("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.query("PRAGMA application_id"), std::to_string(kOrchApplicationId));
  EXPECT_EQ(raw.query("SELECT count(*) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_NE(raw.query("SELECT description FROM schema_version"), "");
  EXPECT_NE(raw.query("SELECT applied_at FROM schema_version"), "0");
}

TEST(Schema, ReopeningDoesNotMigrateAgain) {
  LedgerWithRun ledger;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(open_store(ledger.db));
  lt::RawDb raw(ledger.db);
  EXPECT_EQ(raw.query("SELECT count(*) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.query("SELECT count(*) FROM runs"), "1");
}

TEST(Schema, MigrationsAreNumberedInOrder) {
  int expected = 1;
  for (const Migration& m : schema_migrations()) {
    EXPECT_EQ(m.version, expected++);
    EXPECT_NE(std::string(m.description), "");
  }
}

TEST(ConnectionSettings, NormalSyncForeignKeysAndWalByDefault) {
  testing::TempDir dir;
  auto store = open_store(dir / "orch.db");
  ASSERT_TRUE(store);
  EXPECT_EQ(*store->connection().query_text("PRAGMA journal_mode", "test"), "wal");
  EXPECT_EQ(*store->connection().query_int("PRAGMA synchronous", "test"), 1);  // NORMAL
  EXPECT_EQ(*store->connection().query_int("PRAGMA foreign_keys", "test"), 1);
}

TEST(ConnectionSettings, OrchSyncFullIsHonoured) {
  testing::TempDir dir;
  ScopedEnv env("ORCH_SYNC", "FULL");
  auto store = open_store(dir / "orch.db");
  ASSERT_TRUE(store);
  EXPECT_EQ(*store->connection().query_int("PRAGMA synchronous", "test"), 2);  // FULL
}

TEST(ConnectionSettings, AnUnknownOrchSyncIsRefusedBeforeTouchingTheFile) {
  testing::TempDir dir;
  ScopedEnv env("ORCH_SYNC", "fastest");
  auto store = open_sqlite_store(dir / ".orch/orch.db");
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(store.error().message.find("ORCH_SYNC=fastest"), std::string::npos) << store.error().message;
  EXPECT_FALSE(std::filesystem::exists(dir / ".orch"));
}

TEST(ConnectionSettings, LedgerFilesAreNotInheritedByStepProcesses) {
  testing::TempDir dir;
  auto store = open_store(dir / "orch.db");
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->insert_run(lt::sample_run("r1")));  // the -wal and -shm files are open now too
  int ledger_fds = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (ec || target.string().rfind(dir.path().string(), 0) != 0) continue;
    ++ledger_fds;
    const int fd = std::stoi(entry.path().filename().string());
    EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC) << target << " would leak into spawned steps";
  }
  EXPECT_GE(ledger_fds, 2);
}

// Writes events until the WAL file is past kWalShrinkBytes; returns how many.
int grow_wal(SqliteStore& store, const std::filesystem::path& wal) {
  int n = 0;
  EventRecord e = lt::sample_event("r1", "bulk");
  e.data_json = nlohmann::json{{"pad", std::string(2000, 'x')}}.dump();
  while (std::filesystem::file_size(wal) <= kWalShrinkBytes) {
    EXPECT_TRUE(store.append_event(e));  // one commit each
    ++n;
  }
  return n;
}

// The first process to open a ledger rebuilds the WAL index by reading the whole
// WAL: a large one is checkpointed and truncated by the connection that closes.
TEST(ConnectionSettings, ClosingShrinksALargeWalAndKeepsEverything) {
  testing::TempDir dir;
  const auto db = dir / "orch.db";
  const auto wal = dir / "orch.db-wal";
  int written = 0;
  {
    auto store = open_store(db);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->insert_run(lt::sample_run("r1")));
    written = grow_wal(*store, wal);
  }
  EXPECT_EQ(std::filesystem::file_size(wal), 0u);
  auto store = open_store(db);
  ASSERT_TRUE(store);
  auto events = store->events("r1");
  ASSERT_TRUE(events);
  EXPECT_EQ(events->size(), static_cast<std::size_t>(written));
}

// A small WAL is left alone (no fsync for a short command), and so is a large one
// while another connection reads: the closing one neither waits nor fails.
TEST(ConnectionSettings, ClosingLeavesASmallWalOrABusyOneAlone) {
  testing::TempDir dir;
  const auto db = dir / "orch.db";
  const auto wal = dir / "orch.db-wal";
  {
    auto store = open_store(db);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->insert_run(lt::sample_run("r1")));
  }
  const auto small = std::filesystem::file_size(wal);
  EXPECT_GT(small, 0u);
  EXPECT_LE(small, kWalShrinkBytes);

  auto reader = open_store(db);
  ASSERT_TRUE(reader);
  ASSERT_TRUE(reader->connection().exec("BEGIN", "test"));
  ASSERT_TRUE(reader->connection().query_int("SELECT count(*) FROM events", "test"));  // holds a snapshot
  {
    auto writer = open_store(db);
    ASSERT_TRUE(writer);
    grow_wal(*writer, wal);
    const auto began = std::chrono::steady_clock::now();
    writer.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(2))
        << "closing waited for the reader";
  }
  EXPECT_GT(std::filesystem::file_size(wal), kWalShrinkBytes);
  ASSERT_TRUE(reader->connection().exec("COMMIT", "test"));
}

}  // namespace
}  // namespace orch
