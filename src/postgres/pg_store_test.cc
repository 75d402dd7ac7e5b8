// The PostgreSQL store beyond the Store contract (which store_conformance_test.cc
// checks on every backend): its schema's version, several stores and processes
// on one database, locks released by a killed holder, outputs kept in rows.
// Each test runs in a fresh schema of the server ORCH_TEST_PG_URL_FILE names,
// and fails without one.
#include "postgres/pg_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "orch/postgres_store.h"
#include "orch/store.h"
#include "postgres/pg_schema.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch {
namespace {

class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = testing::PgTestSchema::create();
    ASSERT_TRUE(schema) << schema.error().message;
    schema_ = std::move(*schema);
  }

  std::unique_ptr<Store> open() {
    auto store = open_postgres_store(schema_->url(), dir_.path());
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }

  static RunRecord run(const std::string& id) {
    RunRecord r;
    r.id = id;
    r.name = "plan " + id;
    r.created_at = r.updated_at = 1;
    return r;
  }
  static StepRecord step(const std::string& run_id, const std::string& id) {
    StepRecord s;
    s.run_id = run_id;
    s.step_id = id;
    return s;
  }
  static AttemptRecord attempt(const std::string& run_id, const std::string& step_id, int number) {
    AttemptRecord a;
    a.run_id = run_id;
    a.step_id = step_id;
    a.number = number;
    return a;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::PgTestSchema> schema_;  // dropped after the stores of a test
};

TEST(PgSchema, IsAtTheVersionOfTheSqliteSchema) {
  EXPECT_EQ(detail::kPgSchemaVersion, store_schema_version())
      << "a SQLite migration needs its PostgreSQL counterpart in pg_schema.cc";
}

TEST_F(PgStoreTest, AnEmptySchemaIsCreatedOnceByConcurrentFirstOpens) {
  std::vector<std::thread> openers;
  std::vector<std::string> errors(6);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    openers.emplace_back([&, i] {
      auto store = open_postgres_store(schema_->url(), dir_.path());
      if (!store) errors[i] = store.error().message;
    });
  }
  for (auto& t : openers) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "") << "no first open races another";
  // v13's row (the PostgreSQL ledger's first version), then one per migration.
  EXPECT_EQ(schema_->exec(fmt::format("DO $$ BEGIN IF (SELECT count(*) FROM schema_version) <> {} THEN "
                                      "RAISE EXCEPTION 'not one row per version'; END IF; END $$",
                                      detail::kPgSchemaVersion - 12)),
            "");
}

// A ledger made by an orch of v13 (the first PostgreSQL one) is migrated in
// place at the next open, its runs kept.
TEST_F(PgStoreTest, AVersion13LedgerIsMigrated) {
  {
    auto store = open();
    ASSERT_TRUE(store);
    RunRecord r;
    r.id = "old";
    r.name = "n";
    ASSERT_TRUE(store->insert_run(r));
  }
  // What v13 had: no dispatch column, no queue, no workers (v14), no attempts.model (v15).
  ASSERT_EQ(
      schema_->exec("DROP TABLE work_items; DROP TABLE workers; ALTER TABLE runs DROP COLUMN dispatch; "
                    "ALTER TABLE attempts DROP COLUMN model; DELETE FROM schema_version WHERE version > 13"),
      "");
  auto store = open();
  ASSERT_TRUE(store);
  auto run = store->find_run("old");
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->dispatch, Dispatch::Local);
  EXPECT_EQ(schema_->exec(fmt::format(
                "DO $$ BEGIN IF (SELECT max(version) FROM schema_version) <> {} OR "
                "to_regclass('work_items') IS NULL OR NOT EXISTS (SELECT 1 FROM "
                "information_schema.columns WHERE table_name = 'attempts' AND column_name = "
                "'model' AND table_schema = current_schema()) THEN RAISE EXCEPTION 'not migrated'; "
                "END IF; END $$",
                detail::kPgSchemaVersion)),
            "");
}

TEST_F(PgStoreTest, ALedgerFromANewerOrchIsRefused) {
  ASSERT_TRUE(open());
  ASSERT_EQ(schema_->exec(fmt::format("INSERT INTO schema_version VALUES ({}, 0, 'from the future')",
                                      detail::kPgSchemaVersion + 1)),
            "");
  auto refused = open_postgres_store(schema_->url(), dir_.path());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(
                fmt::format("schema version {}, newer than this orch", detail::kPgSchemaVersion + 1)),
            std::string::npos)
      << refused.error().message;
}

TEST_F(PgStoreTest, ASchemaWithOtherTablesIsNotTakenForALedger) {
  ASSERT_EQ(schema_->exec("CREATE TABLE runs (id TEXT)"), "");
  auto refused = open_postgres_store(schema_->url(), dir_.path());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not an orch ledger"), std::string::npos) << refused.error().message;
}

TEST_F(PgStoreTest, AnUnreachableServerIsAClearError) {
  auto refused = open_postgres_store("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", dir_.path());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::Store);
  EXPECT_NE(refused.error().message.find("cannot connect to"), std::string::npos) << refused.error().message;
}

TEST_F(PgStoreTest, TwoStoresSeeEachOthersCommittedWritesOnly) {
  auto a = open();
  auto b = open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->begin());
  ASSERT_TRUE(a->insert_run(run("r")));
  auto first = a->append_event(EventRecord{0, "r", 1, "run_started", "", 0, "{}"});
  ASSERT_TRUE(first);
  EXPECT_FALSE(b->find_run("r")->has_value()) << "not before the commit";
  ASSERT_TRUE(a->commit());
  auto seen = b->find_run("r");
  ASSERT_TRUE(seen && *seen);
  EXPECT_EQ((*seen)->name, "plan r");
  auto second = b->append_event(EventRecord{0, "r", 2, "step_ready", "", 0, ""});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_GT(*second, *first) << "one sequence for every store of the ledger";
  ASSERT_TRUE(b->request_cancel("r"));
  EXPECT_TRUE(*a->cancel_requested("r"));
  EXPECT_EQ(a->events("r")->size(), 2u);
}

TEST_F(PgStoreTest, ACancelRequestedDuringADriversTurnIsNeverLost) {
  auto driver = open();
  auto canceller = open();
  ASSERT_TRUE(driver && canceller);
  ASSERT_TRUE(driver->insert_run(run("r")));
  ASSERT_TRUE(driver->begin());
  EXPECT_FALSE(*driver->cancel_requested("r"));
  std::string cancel_error = "not yet";
  std::thread cancel([&] {
    auto done = canceller->request_cancel("r");
    cancel_error = done ? "" : done.error().message;
  });
  // The request waits on the row the driver read; give it time to get there.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  RunRecord turn = run("r");
  turn.spent_tokens = 5;  // the driver writes its copy of the row, flag unset
  ASSERT_TRUE(driver->update_run(turn));
  ASSERT_TRUE(driver->commit());
  cancel.join();
  EXPECT_EQ(cancel_error, "");
  auto after = driver->find_run("r");
  ASSERT_TRUE(after && *after);
  EXPECT_TRUE((*after)->cancel_requested) << "the request landed after the turn, not under it";
  EXPECT_EQ((*after)->spent_tokens, 5);
}

TEST_F(PgStoreTest, AFailedStatementFailsItsTransactionAndTheStoreGoesOn) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r")));
  EXPECT_FALSE(store->insert_run(run("r")));
  auto committed = store->commit();
  ASSERT_FALSE(committed) << "PostgreSQL aborts the whole transaction";
  EXPECT_NE(committed.error().message.find("rolled back"), std::string::npos) << committed.error().message;
  EXPECT_FALSE(store->find_run("r")->has_value());
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r")));
  ASSERT_TRUE(store->commit());
  EXPECT_TRUE(store->find_run("r")->has_value());
}

TEST_F(PgStoreTest, TheDatabaseItselfRefusesToRewriteHistory) {
  auto store = open();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r")));
  ASSERT_TRUE(store->insert_step(step("r", "a")));
  AttemptRecord a = attempt("r", "a", 1);
  a.status = AttemptStatus::Failed;
  ASSERT_TRUE(store->insert_attempt(a));
  ASSERT_TRUE(store->append_event(EventRecord{0, "r", 1, "run_started", "", 0, "{}"}));
  ASSERT_TRUE(store->commit());
  EXPECT_NE(
      schema_->exec("UPDATE attempts SET reason = 'rewritten'").find("a finished attempt never changes"),
      std::string::npos);
  EXPECT_NE(schema_->exec("DELETE FROM attempts").find("never deleted"), std::string::npos);
  EXPECT_NE(schema_->exec("DELETE FROM events").find("never deleted"), std::string::npos);
  EXPECT_NE(schema_->exec("UPDATE runs SET owner_id = 'x'").find("owner never changes"), std::string::npos);
  EXPECT_NE(schema_->exec("INSERT INTO events (run_id, ts, kind, step_id, attempt, data) "
                          "VALUES ('r', 1, 'k', '', 0, 'not json')"),
            "");
}

TEST_F(PgStoreTest, AnyBytesRoundTripThroughTheOutputColumns) {
  auto store = open();
  ASSERT_TRUE(store);
  const std::string bytes("\xff\xfe not utf-8 \0 and a NUL", 25);
  StepRecord s = step("r", "a");
  s.result = bytes;
  AttemptRecord a = attempt("r", "a", 1);
  a.output_tail = bytes;
  a.stdout_text = bytes;
  a.cost_usd = 0.1 + 0.2;
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r")));
  ASSERT_TRUE(store->insert_step(s));
  ASSERT_TRUE(store->insert_attempt(a));
  ASSERT_TRUE(store->commit());
  EXPECT_EQ((*store->find_step("r", "a"))->result, bytes);
  auto read = store->attempts("r", "a");
  ASSERT_TRUE(read && read->size() == 1u);
  EXPECT_EQ((*read)[0].output_tail, bytes);
  EXPECT_EQ((*read)[0].stdout_text, bytes);
  EXPECT_EQ((*read)[0].cost_usd, 0.1 + 0.2) << "a double reads back exactly";
}

TEST_F(PgStoreTest, AFinishedAttemptsOutputIsServedFromTheDatabaseOnceItsFilesAreGone) {
  auto store = open();
  ASSERT_TRUE(store);
  const auto folder = dir_.path() / "runs" / "r";
  std::filesystem::create_directories(folder);
  // Over two chunks of 256 KiB, with every byte value.
  std::string big;
  for (int i = 0; i < 600 * 1024; ++i) big.push_back(static_cast<char>(i * 7 % 256));
  testing::write_file(folder / "a.1.stdout", big);
  testing::write_file(folder / "a.1.stderr", "warning\n");
  AttemptRecord a = attempt("r", "a", 1);
  a.stdout_path = (folder / "a.1.stdout").string();
  a.stderr_path = (folder / "a.1.stderr").string();
  a.stdout_bytes = static_cast<std::int64_t>(big.size());
  a.stderr_bytes = 8;
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r")));
  ASSERT_TRUE(store->insert_step(step("r", "a")));
  ASSERT_TRUE(store->insert_attempt(a));
  ASSERT_TRUE(store->commit());

  std::string text;
  auto sink = [&](std::string_view piece) { text += piece; };
  auto running = store->read_attempt_output(a, AttemptStream::Stderr, sink);
  ASSERT_TRUE(running) << running.error().message;
  EXPECT_EQ(running->source, OutputSource::File) << "while it runs, from its file";
  EXPECT_EQ(text, "warning\n");

  a.status = AttemptStatus::Succeeded;
  a.ending = AttemptEnding::Exited;
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->finish_attempt(a));
  ASSERT_TRUE(store->commit());
  std::filesystem::remove_all(folder);

  auto other = open();  // another store (machine) of the same ledger
  ASSERT_TRUE(other);
  text.clear();
  auto out = other->read_attempt_output(a, AttemptStream::Stdout, sink);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->source, OutputSource::Ledger);
  EXPECT_TRUE(text == big) << "got " << text.size() << " bytes of " << big.size();
  text.clear();
  auto err = other->read_attempt_output(a, AttemptStream::Stderr, sink);
  ASSERT_TRUE(err) << err.error().message;
  EXPECT_EQ(text, "warning\n");
}

TEST_F(PgStoreTest, ALockIsPerLedgerNotPerServer) {
  auto store = open();
  ASSERT_TRUE(store);
  auto other_schema = testing::PgTestSchema::create();
  ASSERT_TRUE(other_schema) << other_schema.error().message;
  testing::TempDir other_dir;
  auto other = open_postgres_store((*other_schema)->url(), other_dir.path());
  ASSERT_TRUE(other) << other.error().message;
  auto held = store->lock("r");
  ASSERT_TRUE(held) << held.error().message;
  EXPECT_FALSE((*other)->locked("r"));
  EXPECT_TRUE((*other)->lock("r")) << "another ledger's run r is another run";
}

TEST_F(PgStoreTest, ALockHeldByAKilledProcessIsReleased) {
  auto store = open();
  ASSERT_TRUE(store);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child holds the lock on connections of its own, until it is killed.
    close(ready[0]);
    auto mine = open_postgres_store(schema_->url(), dir_.path());
    if (!mine) _exit(2);
    auto held = (*mine)->lock("r");
    if (!held) _exit(3);
    if (write(ready[1], "x", 1) != 1) _exit(4);
    for (;;) pause();
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the child took the lock";
  close(ready[0]);
  EXPECT_TRUE(store->locked("r"));
  auto busy = store->lock("r", [](const std::string& holder) { return "held by " + holder; });
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, ErrorCode::Busy);
  EXPECT_EQ(busy.error().message, "held by " + std::to_string(child)) << "the holder's pid is named";

  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(testing::wait_for([&] { return !store->locked("r"); }, 10000))
      << "the server releases a dead session's lock";
  auto mine = store->lock("r");
  ASSERT_TRUE(mine) << mine.error().message;
}

}  // namespace
}  // namespace orch
