// The driver's side of a workers run on a real PostgreSQL server (each test in
// a fresh schema): an attempt queued in the transaction that records it running
// (Executor::record) is claimable only once that commits, and never when its
// commit fails; one that is not started after all is withdrawn; a worker's
// completion reaches the driver in its notification, which the driver
// acknowledges with its next statement. The end-to-end behaviour (real workers,
// a run cancelled, kill -9) is tests/cli/postgres/workers_test.cc's.
#include "distrib/remote_executor.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "distrib/attempt_wire.h"
#include "postgres/pg_connection.h"
#include "postgres/pg_store.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch::distrib {
namespace {

using detail::PgConnection;

class RemoteDispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = testing::PgTestSchema::create();
    ASSERT_TRUE(schema) << schema.error().message;
    schema_ = std::move(*schema);
    auto store = PgStore::open(schema_->url(), dir_.path());
    ASSERT_TRUE(store) << store.error().message;
    store_ = std::move(*store);
    auto conn = PgConnection::open(schema_->url());
    ASSERT_TRUE(conn) << conn.error().message;
    conn_ = std::make_unique<PgConnection>(std::move(*conn));
    queue_ = std::make_unique<WorkQueue>(*conn_);
    auto dispatch = RemoteDispatch::open(schema_->url(), RemoteDispatch::Options{});
    ASSERT_TRUE(dispatch) << dispatch.error().message;
    dispatch_ = std::move(*dispatch);
    // A run whose steps a and b each have attempt 1 running, as a driver's
    // turn leaves them.
    RunRecord run;
    run.id = "r";
    run.name = "plan";
    run.created_at = run.updated_at = 1;
    ASSERT_TRUE(store_->begin());
    ASSERT_TRUE(store_->insert_run(run));
    for (const char* id : {"a", "b"}) {
      StepRecord s;
      s.run_id = "r";
      s.step_id = id;
      s.status = StepStatus::Running;
      ASSERT_TRUE(store_->insert_step(s));
      ASSERT_TRUE(store_->insert_attempt(attempt("r", id)));
    }
    ASSERT_TRUE(store_->commit());
    WorkerRow w;
    w.name = "w1";
    w.host = "here";
    w.slots = 4;
    w.lease_ms = 30000;
    ASSERT_TRUE(queue_->register_worker(w));
  }

  static AttemptRecord attempt(const char* run, const char* step) {
    AttemptRecord a;
    a.run_id = run;
    a.step_id = step;
    a.number = 1;
    return a;
  }
  static AttemptSpec spec(const char* run, const char* step) {
    AttemptSpec s;
    s.run_id = run;
    s.step_id = step;
    s.attempt = 1;
    s.executor = "shell";
    s.argv = {"/bin/sh", "-c", "true"};
    return s;
  }
  std::string state(const char* step) const {
    return schema_->query(std::string("SELECT state FROM work_items WHERE step_id = '") + step + "'");
  }
  std::size_t claim() {
    auto claimed = queue_->claim("w1", "here", {}, 4, 30000);
    EXPECT_TRUE(claimed) << claimed.error().message;
    return claimed ? claimed->size() : 0;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::PgTestSchema> schema_;
  std::unique_ptr<PgStore> store_;
  std::unique_ptr<PgConnection> conn_;
  std::unique_ptr<WorkQueue> queue_;
  std::shared_ptr<RemoteDispatch> dispatch_;
};

TEST_F(RemoteDispatchTest, AnAttemptRecordedWithItsTurnIsClaimableOnlyOnceTheTurnCommits) {
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(dispatch_->record(spec("r", "a"), *store_));
  EXPECT_EQ(state("a"), "") << "not before the commit";
  EXPECT_EQ(claim(), 0u);
  ASSERT_TRUE(store_->commit());
  EXPECT_EQ(state("a"), "queued");
  EXPECT_EQ(schema_->query("SELECT count(*) FROM work_items"), "1");
  EXPECT_EQ(claim(), 1u);
}

TEST_F(RemoteDispatchTest, ATurnWhoseCommitFailsLeavesNothingToClaim) {
  // The turn queues b's attempt, and one of a run the ledger does not have:
  // its commit fails (the deferred foreign key), and b's item goes with it.
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(dispatch_->record(spec("r", "b"), *store_));
  ASSERT_TRUE(dispatch_->record(spec("no-such-run", "x"), *store_));
  auto committed = store_->commit();
  ASSERT_FALSE(committed) << "the foreign keys hold at the commit";
  EXPECT_EQ(schema_->query("SELECT count(*) FROM work_items"), "0");
  EXPECT_EQ(claim(), 0u);
}

TEST_F(RemoteDispatchTest, AnAttemptRecordedButNotStartedIsWithdrawn) {
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(dispatch_->record(spec("r", "a"), *store_));
  ASSERT_TRUE(store_->commit());
  // Cancelled at its commit: the engine never starts it.
  dispatch_->withdraw(WorkKey{"r", "a", 1}, "cancelled by `orch cancel`");
  EXPECT_EQ(state("a"), "expired");
  EXPECT_EQ(schema_->query("SELECT reason FROM work_items WHERE step_id = 'a'"),
            "cancelled by `orch cancel`");
  EXPECT_EQ(claim(), 0u) << "no worker starts it";
}

TEST_F(RemoteDispatchTest, AnOutcomeComesInItsNotificationAndIsAcknowledgedByTheNextStatement) {
  EventLoop loop;
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(dispatch_->record(spec("r", "a"), *store_));
  ASSERT_TRUE(store_->commit());
  std::optional<AttemptOutcome> got;
  ASSERT_TRUE(dispatch_->start(spec("r", "a"), loop, [&](AttemptOutcome o) { got = std::move(o); }));
  EXPECT_EQ(schema_->query("SELECT count(*) FROM work_items"), "1") << "start() queued it no second time";
  ASSERT_EQ(claim(), 1u);
  AttemptOutcome outcome;
  outcome.ending = AttemptEnding::Exited;
  outcome.exit_code = 0;
  outcome.result = "the result";
  ASSERT_TRUE(*queue_->complete("w1", WorkKey{"r", "a", 1}, encode_outcome(outcome), {}));
  // Delivered from the notification: the row was not read, so it is still
  // finished (a read would acknowledge nothing before it)...
  ASSERT_TRUE(testing::wait_for(
      [&] {
        loop.run_once(std::chrono::milliseconds(50));
        return got.has_value();
      },
      5000));
  EXPECT_EQ(got->result, "the result");
  EXPECT_EQ(got->ending, AttemptEnding::Exited);
  EXPECT_EQ(state("a"), "finished");
  // ...and acknowledged by the run's next statement: the next attempt queued.
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(dispatch_->record(spec("r", "b"), *store_));
  ASSERT_TRUE(store_->commit());
  EXPECT_EQ(state("a"), "settled");
  EXPECT_EQ(state("b"), "queued");
}

TEST(DoneNote, ReadsTheOutcomeANotificationCarriesAndNothingElse) {
  auto note = done_note(R"(["r", "a", 2, "w1", "6869"])");
  ASSERT_TRUE(note);
  EXPECT_EQ(note->key, (WorkKey{"r", "a", 2}));
  EXPECT_EQ(note->worker, "w1");
  EXPECT_EQ(note->outcome, "hi");
  EXPECT_FALSE(done_note("r")) << "a run's id alone: the driver reads the row";
  EXPECT_FALSE(done_note(R"(["r", "a", 2, "w1", "6"])"));
  EXPECT_FALSE(done_note(R"(["r", "a", 2, "w1", "zz"])"));
  EXPECT_FALSE(done_note(R"(["r", "a", "2", "w1", "68"])"));
  EXPECT_FALSE(done_note("[not json"));
}

}  // namespace
}  // namespace orch::distrib
