// The work_items queue's statements on a real PostgreSQL server (each test in a
// fresh schema): a completion sent twice (its first answer lost with the
// connection) is accepted once and never taken for a refusal; a late or
// foreign one is refused; the driver's acknowledgements ride on its next read
// or enqueue. The end-to-end behaviour (real workers, kill -9, a paused
// worker) is tests/cli/postgres/workers_test.cc's.
#include "distrib/work_queue.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "postgres/pg_connection.h"
#include "postgres/pg_store.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch::distrib {
namespace {

using detail::PgConnection;

class WorkQueueTest : public ::testing::Test {
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
    // A run whose steps a, b and c each have attempt 1 running.
    RunRecord run;
    run.id = "r";
    run.name = "plan";
    run.created_at = run.updated_at = 1;
    ASSERT_TRUE(store_->begin());
    ASSERT_TRUE(store_->insert_run(run));
    for (const char* id : {"a", "b", "c"}) {
      StepRecord s;
      s.run_id = "r";
      s.step_id = id;
      s.status = StepStatus::Running;
      ASSERT_TRUE(store_->insert_step(s));
      AttemptRecord a;
      a.run_id = "r";
      a.step_id = id;
      a.number = 1;
      ASSERT_TRUE(store_->insert_attempt(a));
    }
    ASSERT_TRUE(store_->commit());
    WorkerRow w;
    w.name = "w1";
    w.host = "here";
    w.slots = 4;
    w.lease_ms = 30000;
    ASSERT_TRUE(queue_->register_worker(w));
  }

  static WorkKey key(const char* step) { return WorkKey{"r", step, 1}; }
  std::string state(const char* step) const {
    return schema_->query(std::string("SELECT state FROM work_items WHERE step_id = '") + step + "'");
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::PgTestSchema> schema_;
  std::unique_ptr<PgStore> store_;
  std::unique_ptr<PgConnection> conn_;
  std::unique_ptr<WorkQueue> queue_;
};

TEST_F(WorkQueueTest, ACompletionSentAgainIsAcceptedOnceAndALateOrForeignOneIsRefused) {
  ASSERT_TRUE(queue_->enqueue(key("a"), "shell", {}, "spec"));
  auto claimed = queue_->claim("w1", "here", {}, 4, 30000);
  ASSERT_TRUE(claimed) << claimed.error().message;
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].spec, "spec");

  auto foreign = queue_->complete("w2", key("a"), "outcome", {});
  ASSERT_TRUE(foreign) << foreign.error().message;
  EXPECT_FALSE(*foreign) << "not claimed by w2";
  auto first = queue_->complete("w1", key("a"), "outcome", {});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(*first);
  // The same statement again, as after a lost answer: accepted, nothing changed.
  auto again = queue_->complete("w1", key("a"), "outcome", {});
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(*again) << "its own completion, already recorded";
  auto other = queue_->complete("w1", key("a"), "another outcome", {});
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_FALSE(*other) << "an attempt ends once";
  EXPECT_EQ(schema_->query("SELECT encode(outcome, 'escape') FROM work_items"), "outcome");
}

TEST_F(WorkQueueTest, ACompletionForAnAttemptTheLedgerClosedIsRefused) {
  ASSERT_TRUE(queue_->enqueue(key("b"), "shell", {}, "spec"));
  ASSERT_EQ(queue_->claim("w1", "here", {}, 4, 30000)->size(), 1u);
  AttemptRecord closed;
  closed.run_id = "r";
  closed.step_id = "b";
  closed.number = 1;
  closed.status = AttemptStatus::Interrupted;
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->finish_attempt(closed));
  ASSERT_TRUE(store_->commit());
  auto late = queue_->complete("w1", key("b"), "outcome", {});
  ASSERT_TRUE(late) << late.error().message;
  EXPECT_FALSE(*late);
  EXPECT_EQ(state("b"), "claimed");
}

TEST_F(WorkQueueTest, TheDriversAcknowledgementRidesOnItsNextReadOrEnqueue) {
  for (const char* step : {"a", "b"}) ASSERT_TRUE(queue_->enqueue(key(step), "shell", {}, "spec"));
  ASSERT_EQ(queue_->claim("w1", "here", {}, 4, 30000)->size(), 2u);
  ASSERT_TRUE(*queue_->complete("w1", key("a"), "A", {}));
  ASSERT_TRUE(*queue_->complete("w1", key("b"), "B", {}));

  auto read = queue_->finished("r");
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ(state("a"), "finished") << "read, not acknowledged yet";
  // Read again, with a acknowledged: b alone comes back.
  read = queue_->finished("r", {key("a")});
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].key, key("b"));
  EXPECT_EQ((*read)[0].outcome, "B");
  EXPECT_EQ(state("a"), "settled");
  // b acknowledged by the next enqueue.
  ASSERT_TRUE(queue_->enqueue(key("c"), "shell", {}, "spec", {key("b")}));
  EXPECT_EQ(state("b"), "settled");
  EXPECT_EQ(state("c"), "queued");
  EXPECT_TRUE(queue_->finished("r")->empty());
}

}  // namespace
}  // namespace orch::distrib
