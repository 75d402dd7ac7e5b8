// A transaction's writes answered together (pg_pipeline.cc), statements
// prepared once per session, and notifications that come with a statement's
// answer (pg_connection.h) — on the real server of ORCH_TEST_PG_URL_FILE, each
// test in a fresh schema.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "postgres/pg_connection.h"
#include "postgres/pg_store.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch {
namespace {

using detail::PgConnection;
using detail::PgParams;

class PgPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = testing::PgTestSchema::create();
    ASSERT_TRUE(schema) << schema.error().message;
    schema_ = std::move(*schema);
    auto store = PgStore::open(schema_->url(), dir_.path());
    ASSERT_TRUE(store) << store.error().message;
    store_ = std::move(*store);
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
  static EventRecord event(const std::string& run_id, const std::string& kind, std::string data = "{}") {
    return EventRecord{0, run_id, 1, kind, "", 0, std::move(data)};
  }
  std::string count(const char* table) const {
    return schema_->query(fmt::format("SELECT count(*) FROM {}", table));
  }
  // The statements the server has seen parsed on `conn`'s session, by name.
  std::string prepared_on(PgConnection& conn) {
    auto r = conn.exec("listing prepared statements",
                       "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE $1",
                       PgParams().text("orch\\_%"));
    return r ? r->text(0, 0) : r.error().message;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::PgTestSchema> schema_;  // dropped after the store
  std::unique_ptr<PgStore> store_;
};

TEST_F(PgPipelineTest, ATransactionsWritesAllLandAtItsCommitPastTheBatchSize) {
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->insert_run(run("r")));
  // More writes than one batch holds (kMaxLater, 512): answered as they go.
  for (int i = 0; i < 1300; ++i) ASSERT_TRUE(store_->insert_step(step("r", fmt::format("s{}", i))));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store_->record_event(event("r", "step_ready")));
  RunRecord r = run("r");
  r.status = RunStatus::Succeeded;
  ASSERT_TRUE(store_->update_run(r));
  EXPECT_EQ(count("steps"), "0") << "nothing is visible before the commit";
  auto committed = store_->commit();
  ASSERT_TRUE(committed) << committed.error().message;
  EXPECT_EQ(count("steps"), "1300");
  EXPECT_EQ(count("events"), "3");
  EXPECT_EQ((*store_->find_run("r"))->status, RunStatus::Succeeded);
}

TEST_F(PgPipelineTest, AReadInTheTransactionSeesTheWritesSentBeforeIt) {
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->insert_run(run("r")));
  StepRecord s = step("r", "a");
  s.status = StepStatus::Running;
  ASSERT_TRUE(store_->upsert_step(s));
  auto read = store_->find_step("r", "a");
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->status, StepStatus::Running);
  s.status = StepStatus::Done;
  ASSERT_TRUE(store_->upsert_step(s)) << "an upsert of a row it has: an update";
  ASSERT_TRUE(store_->commit());
  EXPECT_EQ((*store_->find_step("r", "a"))->status, StepStatus::Done);
}

TEST_F(PgPipelineTest, AWriteWhoseCheckFailsFailsTheCommitByNameAndNothingOfItLands) {
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->insert_run(run("r")));
  ASSERT_TRUE(store_->commit());

  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->record_event(event("r", "attempt_finished")));
  AttemptRecord never_started;
  never_started.run_id = "r";
  never_started.step_id = "a";
  never_started.number = 1;
  never_started.status = AttemptStatus::Succeeded;
  ASSERT_TRUE(store_->finish_attempt(never_started)) << "answered later, with the others";
  ASSERT_TRUE(store_->upsert_step(step("r", "a")));
  auto committed = store_->commit();
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().code, ErrorCode::Store);
  EXPECT_HAS(committed.error().message, "finishing attempt 1 of step 'a' in run 'r': no running attempt");
  EXPECT_EQ(count("events"), "0") << "rolled back whole";
  EXPECT_EQ(count("steps"), "0");

  ASSERT_TRUE(store_->begin()) << "and the store goes on";
  ASSERT_TRUE(store_->record_event(event("r", "run_started")));
  ASSERT_TRUE(store_->commit());
  EXPECT_EQ(count("events"), "1");
}

TEST_F(PgPipelineTest, AStatementTheServerRefusesIsTheCommitsErrorAndTheWritesAfterItAreNotDone) {
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->insert_run(run("r")));
  ASSERT_TRUE(store_->commit());
  RunRecord missing = run("no-such-run");
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->record_event(event("r", "step_ready", "not json")));
  ASSERT_TRUE(store_->update_run(missing));
  ASSERT_TRUE(store_->insert_step(step("r", "a")));
  auto committed = store_->commit();
  ASSERT_FALSE(committed);
  EXPECT_HAS(committed.error().message, "appending event 'step_ready' to run 'r'");
  EXPECT_EQ(count("events"), "0");
  EXPECT_EQ(count("steps"), "0");

  // Alone, the update of a run the ledger does not have is its own error.
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->update_run(missing));
  committed = store_->commit();
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().code, ErrorCode::NotFound);
  EXPECT_HAS(committed.error().message, "updating run 'no-such-run': no such run");
}

TEST_F(PgPipelineTest, OutsideATransactionAWriteIsAnsweredAtOnce) {
  auto refused = store_->update_run(run("no-such-run"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::NotFound);
  ASSERT_TRUE(store_->insert_run(run("r")));
  EXPECT_TRUE(store_->record_event(event("r", "run_started")));
  EXPECT_EQ(count("events"), "1");
}

TEST_F(PgPipelineTest, AStatementIsPreparedOnceForItsSession) {
  auto conn = PgConnection::open(schema_->url());
  ASSERT_TRUE(conn) << conn.error().message;
  EXPECT_EQ(prepared_on(*conn), "1") << "the listing itself";
  for (int i = 0; i < 3; ++i) {
    auto r = conn->exec("adding", "SELECT $1::int + 1", PgParams().integer(i));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->text(0, 0), std::to_string(i + 1));
  }
  EXPECT_EQ(prepared_on(*conn), "2") << "three calls, one statement parsed";
  // A statement the server refuses to parse is an error each time, never a
  // name that stays behind unprepared.
  for (int i = 0; i < 2; ++i) {
    auto bad = conn->exec("a typo", "SELEC $1", PgParams().integer(1));
    ASSERT_FALSE(bad);
    EXPECT_HAS(bad.error().message, "a typo: syntax error");
  }
  EXPECT_EQ(prepared_on(*conn), "2");
}

TEST_F(PgPipelineTest, AStatementThatFailsToPrepareInThePipelineLeavesNoNameBehind) {
  auto conn = PgConnection::open(schema_->url());
  ASSERT_TRUE(conn) << conn.error().message;
  ASSERT_TRUE(conn->begin());
  ASSERT_TRUE(conn->exec_later("first", "SELECT $1::int", PgParams().integer(1)));
  // First seen inside the pipeline: prepared there, and the server refuses it.
  ASSERT_TRUE(conn->exec_later("a typo", "SELEC $1", PgParams().integer(1)));
  auto committed = conn->commit();
  ASSERT_FALSE(committed);
  EXPECT_HAS(committed.error().message, "a typo: syntax error");
  auto again = conn->exec("a typo", "SELEC $1", PgParams().integer(1));
  ASSERT_FALSE(again);
  EXPECT_HAS(again.error().message, "a typo: syntax error") << "parsed again, not a name that is not there";
  ASSERT_TRUE(conn->begin());
  ASSERT_TRUE(conn->exec_later("first", "SELECT $1::int", PgParams().integer(2)));
  ASSERT_TRUE(conn->exec_later("second", "SELECT $1::int * 2", PgParams().integer(2)));
  auto fine = conn->commit();
  EXPECT_TRUE(fine) << fine.error().message;
}

TEST_F(PgPipelineTest, ANotificationThatCameWithAnAnswerIsKeptForTheListener) {
  auto listener = PgConnection::open(schema_->url());
  auto sender = PgConnection::open(schema_->url());
  ASSERT_TRUE(listener && sender);
  ASSERT_TRUE(listener->exec_script("listening", "LISTEN orch_test"));
  ASSERT_TRUE(sender->exec("notifying", "SELECT pg_notify($1, 'x')", PgParams().text("orch_test")));
  EXPECT_FALSE(listener->notifications_waiting()) << "not read off the socket yet";
  // A statement's answer brings it in with it: no poll of the socket would see it now.
  ASSERT_TRUE(listener->exec("anything", "SELECT $1::int", PgParams().integer(1)));
  ASSERT_TRUE(testing::wait_for(
      [&] {
        if (listener->notifications_waiting()) return true;
        (void)listener->exec("anything", "SELECT $1::int", PgParams().integer(1));
        return false;
      },
      5000));
  auto channels = listener->notifications();
  ASSERT_TRUE(channels) << channels.error().message;
  ASSERT_EQ(channels->size(), 1u);
  EXPECT_EQ((*channels)[0].channel, "orch_test");
  EXPECT_EQ((*channels)[0].payload, "x");
  EXPECT_FALSE(listener->notifications_waiting());
}

}  // namespace
}  // namespace orch
