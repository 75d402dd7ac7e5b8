// Round trips and contract of the SQLite Store, on real files in temp dirs.
#include "ledger/sqlite_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "ledger/ledger_test_support.h"
#include "ledger/schema.h"
#include "orch/ledger.h"
#include "testing/testing.h"

namespace orch {
namespace {

using ledger_test::expect_same;
namespace lt = ledger_test;

std::unique_ptr<Store> open_or_die(const std::filesystem::path& path) {
  auto store = open_sqlite_store(path);
  EXPECT_TRUE(store) << store.error().message;
  return store ? std::move(*store) : nullptr;
}

// A store with run `r1`, steps a (idx 0) and b (idx 1).
struct Fixture {
  testing::TempDir dir;
  std::filesystem::path db = dir / ".orch/orch.db";
  std::unique_ptr<Store> store = open_or_die(db);
  Fixture() {
    EXPECT_TRUE(store->insert_run(lt::sample_run("r1")));
    EXPECT_TRUE(store->upsert_step(lt::sample_step("r1", "b", 1)));
    EXPECT_TRUE(store->upsert_step(lt::sample_step("r1", "a", 0)));
  }
};

TEST(SqliteStore, CreatesItsFolderAndKeepsDataAcrossReopen) {
  testing::TempDir dir;
  const auto db = dir / "deep/er/.orch/orch.db";
  {
    auto store = open_or_die(db);
    ASSERT_TRUE(store);
    EXPECT_EQ(store->folder(), dir / "deep/er/.orch");
    ASSERT_TRUE(store->insert_run(lt::sample_run("r1")));
  }
  EXPECT_TRUE(std::filesystem::exists(db));
  auto store = open_or_die(db);
  auto run = store->find_run("r1");
  ASSERT_TRUE(run && *run);
  expect_same(**run, lt::sample_run("r1"));
}

TEST(SqliteStore, RunRoundTripsEveryFieldAndUpdates) {
  Fixture f;
  RunRecord run = lt::sample_run("r1");
  run.status = RunStatus::Interrupted;
  run.reason = "";
  run.name = std::string(100000, 'n');
  run.spent_cost_usd = 123456789.123456789;
  run.cancel_requested = true;
  run.exit_code = -1;
  run.finished_at = 0;
  ASSERT_TRUE(f.store->update_run(run));
  f.store.reset();
  auto store = open_or_die(f.db);
  auto found = store->find_run("r1");
  ASSERT_TRUE(found && *found);
  expect_same(**found, run);

  auto missing = store->find_run("nope");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
  auto update = store->update_run(lt::sample_run("nope"));
  ASSERT_FALSE(update);
  EXPECT_EQ(update.error().code, ErrorCode::NotFound);
  EXPECT_NE(update.error().message.find("'nope'"), std::string::npos) << update.error().message;
}

TEST(SqliteStore, EveryStatusNameIsAcceptedByTheSchema) {
  Fixture f;
  for (auto status : {RunStatus::Running, RunStatus::Succeeded, RunStatus::Failed, RunStatus::Cancelled,
                      RunStatus::BudgetExhausted, RunStatus::Escalated, RunStatus::Interrupted}) {
    RunRecord run = lt::sample_run("r1");
    run.status = status;
    ASSERT_TRUE(f.store->update_run(run)) << run_status_name(status);
    EXPECT_EQ((*f.store->find_run("r1"))->status, status);
  }
  for (auto status : {StepStatus::Pending, StepStatus::Running, StepStatus::Done, StepStatus::Failed,
                      StepStatus::Skipped, StepStatus::Cancelled}) {
    StepRecord step = lt::sample_step("r1", "a", 0);
    step.status = status;
    ASSERT_TRUE(f.store->upsert_step(step)) << step_status_name(status);
    EXPECT_EQ(f.store->steps("r1")->front().status, status);
  }
  int number = 1;
  for (auto status : {AttemptStatus::Succeeded, AttemptStatus::Failed, AttemptStatus::TimedOut,
                      AttemptStatus::Cancelled, AttemptStatus::Interrupted}) {
    ASSERT_TRUE(f.store->insert_attempt(lt::started_attempt("r1", "a", number)));
    AttemptRecord done = lt::finished_attempt("r1", "a", number);
    done.status = status;
    ASSERT_TRUE(f.store->finish_attempt(done)) << attempt_status_name(status);
    EXPECT_EQ(f.store->attempts("r1", "a")->back().status, status);
    ++number;
  }
}

TEST(SqliteStore, PlanVersionsRoundTripAndTheLatestWins) {
  Fixture f;
  PlanVersion v1{"r1", 1, "/p/plan.yaml", "steps: []\n", 10};
  PlanVersion v2{"r1", 2, "/p/plan2.yaml", std::string(2 << 20, 'x') + lt::binary_bytes(), 20};
  ASSERT_TRUE(f.store->insert_plan_version(v1));
  ASSERT_TRUE(f.store->insert_plan_version(v2));
  auto latest = f.store->latest_plan("r1");
  ASSERT_TRUE(latest) << latest.error().message;
  expect_same(*latest, v2);
  EXPECT_FALSE(f.store->insert_plan_version(v1)) << "a plan version is written once";
  auto none = f.store->latest_plan("nope");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::NotFound);
}

TEST(SqliteStore, StepsRoundTripUpsertAndComeByIndex) {
  Fixture f;
  auto steps = f.store->steps("r1");
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 2u);
  expect_same((*steps)[0], lt::sample_step("r1", "a", 0));
  expect_same((*steps)[1], lt::sample_step("r1", "b", 1));

  StepRecord changed = lt::sample_step("r1", "b", 1);
  changed.status = StepStatus::Failed;
  changed.reason = "check 'exit_zero' failed";
  changed.result = "";
  changed.cost_usd = 0.125;
  ASSERT_TRUE(f.store->upsert_step(changed));
  steps = f.store->steps("r1");
  ASSERT_EQ(steps->size(), 2u);
  expect_same((*steps)[1], changed);
  EXPECT_TRUE(f.store->steps("nope")->empty());
  // One step by its id, as steps() has it.
  auto one = f.store->find_step("r1", "b");
  ASSERT_TRUE(one && *one);
  expect_same(**one, changed);
  EXPECT_FALSE(f.store->find_step("r1", "zz")->has_value());
  EXPECT_FALSE(f.store->find_step("nope", "a")->has_value());
}

// A step written again has every column replaced (the UPDATE by its key), and
// insert_step records a step the ledger does not have.
TEST(SqliteStore, AStepWrittenAgainHasEveryColumnReplaced) {
  Fixture f;
  StepRecord fresh = lt::sample_step("r1", "new", 7);
  ASSERT_TRUE(f.store->insert_step(fresh));
  StepRecord all;
  all.run_id = "r1";
  all.step_id = "new";
  all.idx = 8;
  all.goal = "another goal";
  all.executor = "builtin:echo";
  all.status = StepStatus::Skipped;
  all.reason = "skipped: 'a' failed";
  all.result = "r";
  all.fingerprint = "fp-2";
  all.attempts_counted = 4;
  all.last_attempt = 5;
  all.tokens_in = 6;
  all.tokens_out = 7;
  all.cost_usd = 0.5;
  all.wall_ms = 9;
  all.started_at = 10;
  all.finished_at = 11;
  ASSERT_TRUE(f.store->upsert_step(all));
  auto steps = f.store->steps("r1");
  ASSERT_TRUE(steps);
  auto it =
      std::find_if(steps->begin(), steps->end(), [](const StepRecord& s) { return s.step_id == "new"; });
  ASSERT_NE(it, steps->end());
  expect_same(*it, all);
  EXPECT_EQ(
      std::count_if(steps->begin(), steps->end(), [](const StepRecord& s) { return s.step_id == "new"; }), 1);
}

// The query's counts agree with counting what steps() returns (the Store default).
TEST(SqliteStore, StepStatusCountsAgreeWithTheSteps) {
  Fixture f;
  StepRecord c = lt::sample_step("r1", "c", 2);
  c.status = StepStatus::Failed;
  ASSERT_TRUE(f.store->upsert_step(c));
  ASSERT_TRUE(f.store->insert_run(lt::sample_run("r2")));
  ASSERT_TRUE(f.store->upsert_step(lt::sample_step("r2", "x", 0)));
  auto counts = f.store->step_status_counts("r1");
  ASSERT_TRUE(counts) << counts.error().message;
  std::map<StepStatus, int> expected;
  auto steps = f.store->steps("r1");
  ASSERT_TRUE(steps);
  for (const auto& s : *steps) ++expected[s.status];
  EXPECT_EQ(*counts, expected);
  EXPECT_EQ((*counts)[StepStatus::Failed], 1);
  int total = 0;
  for (const auto& [status, n] : *counts) total += n;
  EXPECT_EQ(total, 3) << "another run's steps were counted";
  EXPECT_TRUE(f.store->step_status_counts("nope")->empty());
}

TEST(SqliteStore, AttemptsRoundTripEveryFieldIncludingBinaryOutput) {
  Fixture f;
  ASSERT_TRUE(f.store->insert_attempt(lt::started_attempt("r1", "b", 1)));
  auto running = f.store->attempts("r1", "b");
  ASSERT_TRUE(running);
  ASSERT_EQ(running->size(), 1u);
  expect_same(running->front(), lt::started_attempt("r1", "b", 1));

  AttemptRecord done = lt::finished_attempt("r1", "b", 1);
  done.output_tail += std::string(1 << 20, '\0');  // megabytes of NULs survive too
  ASSERT_TRUE(f.store->finish_attempt(done));
  f.store.reset();
  auto store = open_or_die(f.db);
  auto attempts = store->attempts("r1", "b");
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), 1u);
  expect_same(attempts->front(), done);
  EXPECT_EQ(attempts->front().output_tail.size(), done.output_tail.size());
}

TEST(SqliteStore, AttemptsOfARunComeByStepIndexThenNumber) {
  Fixture f;
  for (auto [step, number] : {std::pair{"b", 1}, {"a", 2}, {"b", 2}, {"a", 1}})
    ASSERT_TRUE(f.store->insert_attempt(lt::started_attempt("r1", step, number)));
  auto all = f.store->attempts("r1");
  ASSERT_TRUE(all);
  std::vector<std::string> order;
  for (const auto& a : *all) order.push_back(a.step_id + std::to_string(a.number));
  EXPECT_EQ(order, (std::vector<std::string>{"a1", "a2", "b1", "b2"}));
  EXPECT_EQ(f.store->attempts("r1", "a")->size(), 2u);
  EXPECT_TRUE(f.store->attempts("r1", "zzz")->empty());
}

TEST(SqliteStore, FinishingAnAttemptTwiceFails) {
  Fixture f;
  ASSERT_TRUE(f.store->insert_attempt(lt::started_attempt("r1", "a", 1)));
  ASSERT_TRUE(f.store->finish_attempt(lt::finished_attempt("r1", "a", 1)));
  AttemptRecord again = lt::finished_attempt("r1", "a", 1);
  again.status = AttemptStatus::Succeeded;
  auto second = f.store->finish_attempt(again);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::Store);
  const std::string& message = second.error().message;
  EXPECT_NE(message.find(f.db.string()), std::string::npos) << message;
  EXPECT_NE(message.find("attempt 1 of step 'a' in run 'r1'"), std::string::npos) << message;
  EXPECT_EQ(f.store->attempts("r1", "a")->front().status, AttemptStatus::TimedOut)
      << "the row did not change";

  auto never_started = f.store->finish_attempt(lt::finished_attempt("r1", "a", 9));
  ASSERT_FALSE(never_started);
  EXPECT_EQ(never_started.error().code, ErrorCode::Store);
  auto not_final = f.store->finish_attempt(lt::started_attempt("r1", "a", 1));
  ASSERT_FALSE(not_final);
  EXPECT_EQ(not_final.error().code, ErrorCode::Internal);
  EXPECT_FALSE(f.store->insert_attempt(lt::started_attempt("r1", "a", 1))) << "numbers are never reused";
}

TEST(SqliteStore, EventsHaveIncreasingSeqAndFilterByAfterSeqAndLimit) {
  Fixture f;
  ASSERT_TRUE(f.store->insert_run(lt::sample_run("r2")));
  std::vector<std::int64_t> seqs_of_r1;
  std::int64_t last = 0;
  for (int i = 0; i < 10; ++i) {
    auto seq = f.store->append_event(lt::sample_event(i % 2 ? "r2" : "r1", "step_ready", i));
    ASSERT_TRUE(seq) << seq.error().message;
    EXPECT_GT(*seq, last);
    last = *seq;
    if (i % 2 == 0) seqs_of_r1.push_back(*seq);
  }
  auto all = f.store->events("r1");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 5u);
  for (std::size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].seq, seqs_of_r1[i]);
    expect_same((*all)[i], lt::sample_event("r1", "step_ready", static_cast<std::int64_t>(2 * i)));
  }
  auto after = f.store->events("r1", seqs_of_r1[1]);
  ASSERT_EQ(after->size(), 3u);
  EXPECT_EQ(after->front().seq, seqs_of_r1[2]);
  auto limited = f.store->events("r1", seqs_of_r1[1], 2);
  ASSERT_EQ(limited->size(), 2u);
  EXPECT_EQ(limited->back().seq, seqs_of_r1[3]);
  EXPECT_TRUE(f.store->events("r1", last)->empty());
  EXPECT_TRUE(f.store->events("r1", 0, 0)->empty());
}

TEST(SqliteStore, EventDataIsJson) {
  Fixture f;
  EventRecord bare = lt::sample_event("r1", "run_started");
  bare.step_id = "";
  bare.attempt = 0;
  bare.data_json = "";
  ASSERT_TRUE(f.store->append_event(bare));
  EXPECT_EQ(f.store->events("r1")->back().data_json, "{}");
  EventRecord broken = lt::sample_event("r1", "run_started");
  broken.data_json = "{not json";
  auto refused = f.store->append_event(broken);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::Store);
  EXPECT_NE(refused.error().message.find("appending event 'run_started' to run 'r1'"), std::string::npos)
      << refused.error().message;
}

TEST(SqliteStore, ListRunsNewestFirst) {
  Fixture f;
  ASSERT_TRUE(f.store->insert_run(lt::sample_run("old", 5)));
  ASSERT_TRUE(f.store->insert_run(lt::sample_run("new", 1800000000000)));
  ASSERT_TRUE(f.store->insert_run(lt::sample_run("same-ms-later", 1800000000000)));
  auto runs = f.store->list_runs();
  ASSERT_TRUE(runs);
  std::vector<std::string> ids;
  for (const auto& r : *runs) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"same-ms-later", "new", "r1", "old"}));
}

TEST(SqliteStore, CancelRequestReachesTheDrivingStore) {
  Fixture f;
  EXPECT_FALSE(*f.store->cancel_requested("r1"));
  {
    auto other = open_or_die(f.db);  // `orch cancel` in another process
    ASSERT_TRUE(other->request_cancel("r1"));
    auto unknown = other->request_cancel("nope");
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().code, ErrorCode::NotFound);
  }
  EXPECT_TRUE(*f.store->cancel_requested("r1"));
  EXPECT_TRUE((*f.store->find_run("r1"))->cancel_requested);
  auto unknown = f.store->cancel_requested("nope");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ErrorCode::NotFound);
}

TEST(SqliteStore, RollbackDiscardsAndIsHarmlessOutsideATransaction) {
  Fixture f;
  EXPECT_TRUE(f.store->rollback());
  ASSERT_TRUE(f.store->begin());
  ASSERT_TRUE(f.store->insert_run(lt::sample_run("r2")));
  ASSERT_TRUE(f.store->append_event(lt::sample_event("r2", "run_started")));
  ASSERT_TRUE(f.store->rollback());
  EXPECT_FALSE(*f.store->find_run("r2"));
  EXPECT_TRUE(f.store->events("r2")->empty());
  ASSERT_TRUE(f.store->begin());
  ASSERT_TRUE(f.store->insert_run(lt::sample_run("r2")));
  ASSERT_TRUE(f.store->commit());
  EXPECT_TRUE(*f.store->find_run("r2"));
}

TEST(SqliteStore, AFailedCommitRollsBackAndTheStoreStaysUsable) {
  Fixture f;
  ASSERT_TRUE(f.store->begin());
  // Foreign keys are checked at COMMIT: a step of a run that does not exist.
  ASSERT_TRUE(f.store->upsert_step(lt::sample_step("ghost", "a", 0)));
  auto committed = f.store->commit();
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().code, ErrorCode::Store);
  EXPECT_NE(committed.error().message.find("FOREIGN KEY"), std::string::npos) << committed.error().message;
  EXPECT_TRUE(f.store->steps("ghost")->empty());
  ASSERT_TRUE(f.store->begin());
  ASSERT_TRUE(f.store->insert_run(lt::sample_run("r2")));
  ASSERT_TRUE(f.store->commit());
}

TEST(SqliteStore, ErrorsNameTheFileAndTheOperation) {
  Fixture f;
  auto duplicate = f.store->insert_run(lt::sample_run("r1"));
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, ErrorCode::Store);
  EXPECT_EQ(duplicate.error().message.rfind(f.db.string() + ": inserting run 'r1': ", 0), 0u)
      << duplicate.error().message;
  EXPECT_NE(duplicate.error().message.find("UNIQUE"), std::string::npos) << duplicate.error().message;
  auto nested = f.store->begin();
  ASSERT_TRUE(nested);
  auto twice = f.store->begin();
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("starting a transaction"), std::string::npos);
  EXPECT_TRUE(f.store->rollback());
}

TEST(SqliteStore, SchemaVersionIsTheLastMigration) {
  EXPECT_EQ(store_schema_version(), 15);
  EXPECT_EQ(store_schema_version(), schema_migrations().back().version);
}

}  // namespace
}  // namespace orch
