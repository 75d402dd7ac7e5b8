// The PostgreSQL store after its server went away (pg_reconnect.h): the
// back-off's waits, ORCH_PG_RECONNECT_S, a statement sent again, a transaction
// failed whole, a COMMIT whose answer was lost settled by asking the server,
// giving up, and the run locks taken again or lost to another process. The
// server goes away by pg_terminate_backend or through a PgProxy that cuts the
// connections (testing/pg_proxy.h): the fixture's server is shared with the
// tests running beside these, so it is never stopped here (the CLI test
// tests/cli/postgres/reconnect_test.cc restarts a server of its own).
#include "postgres/pg_reconnect.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "postgres/pg_store.h"
#include "testing/pg_proxy.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch {
namespace {

using detail::PgReconnectPolicy;
using std::chrono::milliseconds;

TEST(PgReconnectPolicy, WaitsDoubleFromATenthOfASecondToTwoSecondsLessAtMostHalf) {
  const PgReconnectPolicy policy;
  const int expected[] = {100, 200, 400, 800, 1600, 2000, 2000};
  for (int tries = 1; tries <= 7; ++tries)
    EXPECT_EQ(policy.wait_after(tries, 0.0), milliseconds(expected[tries - 1])) << tries;
  EXPECT_EQ(policy.wait_after(40, 0.0), milliseconds(2000)) << "no overflow";
  EXPECT_EQ(policy.wait_after(6, 0.5), milliseconds(1500));
  EXPECT_EQ(policy.wait_after(1, 0.999), milliseconds(51));
}

TEST(PgReconnectPolicy, OrchPgReconnectSSaysHowLongToTry) {
  ::unsetenv("ORCH_PG_RECONNECT_S");
  EXPECT_EQ(PgReconnectPolicy::from_environment()->give_up_after, milliseconds(60'000));
  ::setenv("ORCH_PG_RECONNECT_S", "5", 1);
  EXPECT_EQ(PgReconnectPolicy::from_environment()->give_up_after, milliseconds(5000));
  ::setenv("ORCH_PG_RECONNECT_S", "0", 1);
  EXPECT_EQ(PgReconnectPolicy::from_environment()->give_up_after, milliseconds(0));
  for (const char* bad : {"x", "-1", "1.5", "5s", " 5"}) {
    ::setenv("ORCH_PG_RECONNECT_S", bad, 1);
    auto policy = PgReconnectPolicy::from_environment();
    ASSERT_FALSE(policy) << bad;
    EXPECT_EQ(policy.error().code, ErrorCode::InvalidInput);
    EXPECT_HAS(policy.error().message, fmt::format("ORCH_PG_RECONNECT_S='{}'", bad));
  }
  ::unsetenv("ORCH_PG_RECONNECT_S");
}

class PgReconnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = testing::PgTestSchema::create();
    ASSERT_TRUE(schema) << schema.error().message;
    schema_ = std::move(*schema);
    detail::set_pg_reporter([this](const std::string& line) { said_.push_back(line); });
  }
  void TearDown() override { detail::set_pg_reporter({}); }

  std::unique_ptr<PgStore> open(const std::string& url) {
    auto store = PgStore::open(url, dir_.path());
    EXPECT_TRUE(store) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }
  // The store on a proxy to the test's server, which cuts when told.
  std::unique_ptr<PgStore> open_through_proxy() {
    auto proxy = testing::PgProxy::start(schema_->server_url());
    EXPECT_TRUE(proxy) << proxy.error().message;
    if (!proxy) return nullptr;
    proxy_ = std::move(*proxy);
    return open(proxy_->through(schema_->url()));
  }
  // Ends the server process of `store`'s connection, and waits until it is gone.
  void kill_backend(PgStore& store) {
    const int pid = store.connection().backend_pid();
    ASSERT_EQ(schema_->exec(fmt::format("SELECT pg_terminate_backend({})", pid)), "");
    ASSERT_TRUE(testing::wait_for(
        [&] {
          return schema_->query(fmt::format("SELECT count(*) FROM pg_stat_activity WHERE pid = {}", pid)) ==
                 "0";
        },
        10000));
  }
  std::string runs() const { return schema_->query("SELECT count(*) FROM runs"); }
  static RunRecord run(const std::string& id) {
    RunRecord r;
    r.id = id;
    r.name = "plan " + id;
    r.created_at = r.updated_at = 1;
    return r;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::PgTestSchema> schema_;
  std::unique_ptr<testing::PgProxy> proxy_;
  std::vector<std::string> said_;  // what the store told stderr
};

TEST_F(PgReconnectTest, AStatementOutsideATransactionConnectsAgainAndIsSentAgain) {
  auto store = open(schema_->url());
  ASSERT_TRUE(store);
  kill_backend(*store);
  auto inserted = store->insert_run(run("r1"));
  ASSERT_TRUE(inserted) << inserted.error().message;
  EXPECT_EQ(runs(), "1") << "sent again once, after the connection came back";
  ASSERT_EQ(said_.size(), 1u);
  EXPECT_HAS(said_[0], "lost the connection to postgresql://");
  EXPECT_HAS(said_[0], "(terminating connection due to administrator command); reconnected after 1 try");
  EXPECT_TRUE(store->find_run("r1").value_or(std::nullopt).has_value());
}

TEST_F(PgReconnectTest, ATransactionTheConnectionWasLostInFailsWholeAndTheNextBeginConnectsAgain) {
  auto store = open(schema_->url());
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r1")));
  kill_backend(*store);
  for (const char* id : {"r2", "r3"}) {
    auto lost = store->insert_run(run(id));
    ASSERT_FALSE(lost) << "a statement of the lost transaction is never sent on its own";
    EXPECT_EQ(lost.error().code, ErrorCode::Disconnected);
    EXPECT_HAS(lost.error().message, "which the server rolled back");
  }
  auto committed = store->commit();
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().code, ErrorCode::Disconnected);
  EXPECT_EQ(runs(), "0") << "nothing of it landed";
  EXPECT_TRUE(said_.empty()) << "not connected again inside the transaction";

  ASSERT_TRUE(store->rollback());
  auto began = store->begin();
  ASSERT_TRUE(began) << began.error().message;
  EXPECT_EQ(said_.size(), 1u) << "begin() connected again";
  ASSERT_TRUE(store->insert_run(run("r1")));
  ASSERT_TRUE(store->commit());
  EXPECT_EQ(runs(), "1");
}

TEST_F(PgReconnectTest, WritesSentTogetherInATransactionTheConnectionWasLostInAreDisconnectedAtCommit) {
  auto store = open(schema_->url());
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->insert_run(run("r1")));
  ASSERT_TRUE(store->begin());
  // Answered at the commit (pg_pipeline.cc): the server goes between.
  ASSERT_TRUE(store->record_event(EventRecord{0, "r1", 1, "run_started", "", 0, "{}"}));
  RunRecord r = run("r1");
  r.status = RunStatus::Succeeded;
  ASSERT_TRUE(store->update_run(r));
  kill_backend(*store);
  (void)store->record_event(EventRecord{0, "r1", 2, "step_ready", "", 0, "{}"});
  auto committed = store->commit();
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().code, ErrorCode::Disconnected) << committed.error().message;
  EXPECT_HAS(committed.error().message, "which the server rolled back");
  EXPECT_EQ(schema_->query("SELECT count(*) FROM events"), "0");

  ASSERT_TRUE(store->rollback());
  ASSERT_TRUE(store->begin()) << "connects again";
  ASSERT_TRUE(store->record_event(EventRecord{0, "r1", 1, "run_started", "", 0, "{}"}));
  ASSERT_TRUE(store->update_run(r));
  auto again = store->commit();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(schema_->query("SELECT count(*) FROM events"), "1");
  EXPECT_EQ((*store->find_run("r1"))->status, RunStatus::Succeeded) << "its statements prepared again";
}

TEST_F(PgReconnectTest, ACommitWhoseAnswerWasLostIsAskedAboutAndHadLanded) {
  auto store = open_through_proxy();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r1")));
  proxy_->next_commit(testing::PgProxy::Commit::LoseAnswer);
  auto committed = store->commit();
  ASSERT_TRUE(committed) << committed.error().message;
  EXPECT_EQ(proxy_->dropped(), 1) << "the answer was lost";
  EXPECT_EQ(runs(), "1");
  EXPECT_EQ(said_.size(), 1u);
  EXPECT_TRUE(store->find_run("r1").value_or(std::nullopt).has_value());
}

TEST_F(PgReconnectTest, ACommitSentBehindItsWritesWhoseAnswerWasLostIsAskedAboutAndHadLanded) {
  auto store = open_through_proxy();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->insert_run(run("r1")));
  // BEGIN, the writes and COMMIT in the pipeline, nothing read in between
  // (pg_pipeline.cc): the transaction's id came back while the writes were
  // made, and settles the COMMIT whose answer the proxy drops.
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->record_event(EventRecord{0, "r1", 1, "run_started", "", 0, "{}"}));
  ASSERT_TRUE(store->record_event(EventRecord{0, "r1", 2, "step_ready", "", 0, "{}"}));
  proxy_->next_commit(testing::PgProxy::Commit::LoseAnswer);
  auto committed = store->commit();
  ASSERT_TRUE(committed) << committed.error().message;
  EXPECT_EQ(proxy_->dropped(), 1) << "the answer was lost";
  EXPECT_EQ(schema_->query("SELECT count(*) FROM events"), "2");
}

TEST_F(PgReconnectTest, ACommitThatNeverReachedTheServerIsDisconnectedAndTheStoreGoesOn) {
  auto store = open_through_proxy();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r1")));
  proxy_->next_commit(testing::PgProxy::Commit::Lose);
  auto committed = store->commit();
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().code, ErrorCode::Disconnected) << committed.error().message;
  EXPECT_HAS(committed.error().message, "which the server rolled back");
  EXPECT_EQ(runs(), "0");
  ASSERT_TRUE(store->begin());
  ASSERT_TRUE(store->insert_run(run("r1")));
  ASSERT_TRUE(store->commit());
  EXPECT_EQ(runs(), "1");
}

TEST_F(PgReconnectTest, AServerThatStaysAwayIsAClearErrorOnceOrchPgReconnectSHavePassed) {
  ::setenv("ORCH_PG_RECONNECT_S", "1", 1);
  auto store = open_through_proxy();
  ::unsetenv("ORCH_PG_RECONNECT_S");
  ASSERT_TRUE(store);
  proxy_->set_down(true);
  proxy_->drop_all();
  ASSERT_TRUE(testing::wait_for([&] { return proxy_->dropped() == 1; }, 5000));
  const auto began = std::chrono::steady_clock::now();
  auto listed = store->list_runs();
  const auto took = std::chrono::steady_clock::now() - began;
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().code, ErrorCode::Store);
  EXPECT_HAS(listed.error().message, "postgresql://127.0.0.1:");
  EXPECT_HAS(listed.error().message, "lost the connection (");
  EXPECT_HAS(listed.error().message, "could not connect again in 1.");
  EXPECT_HAS(listed.error().message, "ORCH_PG_RECONNECT_S sets how long orch tries");
  EXPECT_GE(took, milliseconds(1000));
  EXPECT_LT(took, milliseconds(4000));
  auto began_tx = store->begin();
  ASSERT_FALSE(began_tx);
  EXPECT_EQ(began_tx.error().code, ErrorCode::Store) << "not Disconnected: nothing to write again";
  EXPECT_TRUE(said_.empty());

  proxy_->set_down(false);  // the server is back
  auto again = store->list_runs();
  EXPECT_TRUE(again) << again.error().message;
  EXPECT_EQ(said_.size(), 1u);
}

TEST_F(PgReconnectTest, ALockLostWithTheServerIsTakenAgainBeforeTheNextTransaction) {
  auto store = open_through_proxy();
  auto other = open(schema_->url());
  ASSERT_TRUE(store && other);
  auto held = store->lock("r");
  ASSERT_TRUE(held) << held.error().message;
  proxy_->drop_all();
  ASSERT_TRUE(testing::wait_for([&] { return !other->locked("r"); }, 10000)) << "the server let it go";
  auto began = store->begin();
  ASSERT_TRUE(began) << began.error().message;
  EXPECT_TRUE(other->locked("r"));
  ASSERT_TRUE(store->commit());
  std::string all;
  for (const std::string& line : said_) all += line + "\n";
  EXPECT_HAS(all, "holding the lock of 'r'");
  EXPECT_HAS(all, "and took the lock again");
  auto busy = other->lock("r");
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, ErrorCode::Busy);
  held->reset();
  EXPECT_FALSE(other->locked("r"));
}

TEST_F(PgReconnectTest, ALockAnotherProcessTookMeanwhileStopsItsHolderForGood) {
  auto store = open_through_proxy();
  auto other = open(schema_->url());
  ASSERT_TRUE(store && other);
  auto held = store->lock("r");
  ASSERT_TRUE(held) << held.error().message;
  proxy_->drop_all();
  ASSERT_TRUE(testing::wait_for([&] { return !other->locked("r"); }, 10000));
  auto taken = other->lock("r");
  ASSERT_TRUE(taken) << taken.error().message;
  for (int i = 0; i < 2; ++i) {
    auto began = store->begin();
    ASSERT_FALSE(began) << "the holder writes nothing more";
    EXPECT_EQ(began.error().code, ErrorCode::Busy);
    EXPECT_HAS(began.error().message, "lost the lock of 'r' with its connection");
    EXPECT_HAS(began.error().message, "another orch process");
  }
  held->reset();
  EXPECT_TRUE(other->locked("r")) << "the lost lock's end takes nothing of the new holder's";
  EXPECT_EQ(schema_->query("SELECT count(*) FROM lock_holders WHERE name = 'r'"), "1");
}

}  // namespace
}  // namespace orch
