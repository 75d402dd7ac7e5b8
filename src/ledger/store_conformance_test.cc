// The Store contract (orch/store.h), checked on every implementation: the
// SQLite ledger, the PostgreSQL store (each test in a fresh schema of the
// server ORCH_TEST_PG_URL_FILE names: testing/pg_test_schema.h; without one the
// postgres tests fail) and the in-memory store of the tests
// (testing/in_memory_store.h). A new backend is one more entry in kBackends and
// must pass all.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>

#include "orch/postgres_store.h"
#include "orch/store.h"
#include "testing/in_memory_store.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch {
namespace {

struct Backend {
  const char* name;
  // A fresh, empty store. `database` keeps what it lives in (a PostgreSQL
  // schema) until after the store is closed.
  std::function<Expected<std::unique_ptr<Store>>(const std::filesystem::path& dir,
                                                 std::shared_ptr<void>& database)>
      open;
};

const Backend kBackends[] = {
    {"sqlite", [](const std::filesystem::path& dir,
                  std::shared_ptr<void>&) { return open_sqlite_store(dir / "orch.db"); }},
    {"postgres",
     [](const std::filesystem::path& dir,
        std::shared_ptr<void>& database) -> Expected<std::unique_ptr<Store>> {
       std::shared_ptr<testing::PgTestSchema> schema = ORCH_TRY(testing::PgTestSchema::create());
       database = schema;
       return open_postgres_store(schema->url(), dir);
     }},
    {"memory",
     [](const std::filesystem::path& dir, std::shared_ptr<void>&) -> Expected<std::unique_ptr<Store>> {
       return std::unique_ptr<Store>(std::make_unique<testing::InMemoryStore>(dir));
     }},
};

class StoreContract : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    auto opened = GetParam().open(dir_.path(), database_);
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
  }

  static RunRecord run(const std::string& id, std::int64_t created_at, RunOwner owner = {}) {
    RunRecord r;
    r.id = id;
    r.name = "plan " + id;
    r.workspace = "/w";
    r.created_at = r.updated_at = created_at;
    r.owner = std::move(owner);
    return r;
  }
  static StepRecord step(const std::string& run_id, const std::string& id, int idx,
                         StepStatus status = StepStatus::Pending) {
    StepRecord s;
    s.run_id = run_id;
    s.step_id = id;
    s.idx = idx;
    s.status = status;
    return s;
  }
  static AttemptRecord attempt(const std::string& run_id, const std::string& step_id, int number) {
    AttemptRecord a;
    a.run_id = run_id;
    a.step_id = step_id;
    a.number = number;
    return a;
  }
  static EventRecord event(const std::string& run_id, const std::string& kind) {
    EventRecord e;
    e.run_id = run_id;
    e.kind = kind;
    e.data_json = "{}";
    return e;
  }

  // Writes as the engine does: inside a transaction.
  void write(const std::function<void()>& writes) {
    ASSERT_TRUE(store_->begin());
    writes();
    ASSERT_TRUE(store_->commit());
  }

  testing::TempDir dir_;
  std::shared_ptr<void> database_;  // destroyed after store_
  std::unique_ptr<Store> store_;
};

TEST_P(StoreContract, RunsRoundTripAndAreListedNewestFirst) {
  write([&] {
    ASSERT_TRUE(store_->insert_run(run("r-old", 1000)));
    ASSERT_TRUE(store_->insert_run(run("r-new", 3000)));
    ASSERT_TRUE(store_->insert_run(run("r-tie-1", 2000)));
    ASSERT_TRUE(store_->insert_run(run("r-tie-2", 2000)));
  });
  auto runs = store_->list_runs();
  ASSERT_TRUE(runs);
  std::vector<std::string> ids;
  for (const auto& r : *runs) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"r-new", "r-tie-2", "r-tie-1", "r-old"}))
      << "newest first; of two in one millisecond, the later insert first";
  EXPECT_FALSE(store_->insert_run(run("r-old", 5))) << "a run id is inserted once";

  RunRecord changed = run("r-old", 1000);
  changed.status = RunStatus::Failed;
  changed.reason = "step 'b' failed";
  changed.spent_tokens = 42;
  changed.budget_json = R"({"tokens":100})";
  ASSERT_TRUE(store_->update_run(changed));
  auto found = store_->find_run("r-old");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->status, RunStatus::Failed);
  EXPECT_EQ((*found)->reason, "step 'b' failed");
  EXPECT_EQ((*found)->spent_tokens, 42);
  EXPECT_EQ((*found)->budget_json, R"({"tokens":100})");
  auto missing = store_->find_run("nope");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->has_value());
}

TEST_P(StoreContract, AnOwnersRunsAreFoundByOwnerAndTheOwnerNeverChanges) {
  const RunOwner judge{OwnerKind::Review, "rv", 1, "judge"};
  const RunOwner fix{OwnerKind::Review, "rv", 1, "fix"};
  write([&] {
    ASSERT_TRUE(store_->insert_run(run("a", 1, judge)));
    ASSERT_TRUE(store_->insert_run(run("b", 2)));
    ASSERT_TRUE(store_->insert_run(run("c", 3, fix)));
    ASSERT_TRUE(store_->insert_run(run("d", 4, RunOwner{OwnerKind::Task, "rv", 0, ""})));
  });
  auto owned = store_->owned_runs(OwnerKind::Review, "rv");
  ASSERT_TRUE(owned);
  ASSERT_EQ(owned->size(), 2u) << "the task with the same id is another owner";
  EXPECT_EQ((*owned)[0].id, "c");
  EXPECT_EQ((*owned)[0].owner, fix);
  EXPECT_EQ((*owned)[1].id, "a");
  auto none = store_->owned_runs(OwnerKind::Cycle, "rv");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());

  RunRecord moved = run("a", 1, fix);
  EXPECT_FALSE(store_->update_run(moved)) << "a run's owner never changes";
  RunRecord same = run("a", 1, judge);
  same.status = RunStatus::Succeeded;
  EXPECT_TRUE(store_->update_run(same));
  auto found = store_->find_run("a");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->owner, judge);
  EXPECT_EQ((*found)->status, RunStatus::Succeeded);
}

TEST_P(StoreContract, ThePlanIsItsLatestVersionAndVersionsNeverChange) {
  write([&] {
    ASSERT_TRUE(store_->insert_run(run("r", 1)));
    ASSERT_TRUE(store_->insert_plan_version(PlanVersion{"r", 1, "/p.yaml", "v1", 1}));
    ASSERT_TRUE(store_->insert_plan_version(PlanVersion{"r", 2, "/p.yaml", "v2", 2}));
  });
  auto latest = store_->latest_plan("r");
  ASSERT_TRUE(latest) << latest.error().message;
  EXPECT_EQ(latest->version, 2);
  EXPECT_EQ(latest->text, "v2");
  EXPECT_FALSE(store_->insert_plan_version(PlanVersion{"r", 2, "/p.yaml", "other", 3}));
  EXPECT_EQ(store_->latest_plan("r")->text, "v2");
  EXPECT_FALSE(store_->latest_plan("no-such-run"));
  auto versions = store_->plan_versions("r");
  ASSERT_TRUE(versions) << versions.error().message;
  ASSERT_EQ(versions->size(), 2u);
  EXPECT_EQ((*versions)[0].version, 1);
  EXPECT_EQ((*versions)[0].text, "v1");
  EXPECT_EQ((*versions)[1].text, "v2");
  EXPECT_TRUE(store_->plan_versions("no-such-run")->empty());
}

TEST_P(StoreContract, StepsAreKeptByIdxAndUpdatedInPlace) {
  write([&] {
    ASSERT_TRUE(store_->insert_run(run("r", 1)));
    ASSERT_TRUE(store_->insert_step(step("r", "c", 2)));
    ASSERT_TRUE(store_->insert_step(step("r", "a", 0)));
    ASSERT_TRUE(store_->insert_step(step("r", "b", 1)));
  });
  StepRecord done = step("r", "a", 0, StepStatus::Done);
  done.result = "ok";
  done.last_attempt = 1;
  write([&] { ASSERT_TRUE(store_->upsert_step(done)); });
  auto steps = store_->steps("r");
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[0].step_id, "a");
  EXPECT_EQ((*steps)[0].status, StepStatus::Done);
  EXPECT_EQ((*steps)[0].result, "ok");
  EXPECT_EQ((*steps)[1].step_id, "b");
  EXPECT_EQ((*steps)[2].step_id, "c");
  auto b = store_->find_step("r", "b");
  ASSERT_TRUE(b && *b);
  EXPECT_EQ((*b)->idx, 1);
  auto counts = store_->step_status_counts("r");
  ASSERT_TRUE(counts);
  EXPECT_EQ((*counts)[StepStatus::Done], 1);
  EXPECT_EQ((*counts)[StepStatus::Pending], 2);
}

TEST_P(StoreContract, AFinishedAttemptNeverChangesAndARetryIsANewRow) {
  write([&] {
    ASSERT_TRUE(store_->insert_run(run("r", 1)));
    ASSERT_TRUE(store_->insert_step(step("r", "late", 1)));
    ASSERT_TRUE(store_->insert_step(step("r", "early", 0)));
    ASSERT_TRUE(store_->insert_attempt(attempt("r", "late", 1)));
    ASSERT_TRUE(store_->insert_attempt(attempt("r", "early", 1)));
  });
  AttemptRecord failed = attempt("r", "early", 1);
  failed.status = AttemptStatus::Failed;
  failed.reason = "exit 1";
  failed.ending = AttemptEnding::Interrupted;
  failed.host = "build-7.example";
  failed.model = "anthropic/claude-test";
  failed.tokens_in = 10;
  failed.tokens_out = 5;
  failed.cost_usd = 0.5;
  failed.started_at = 100;
  failed.finished_at = 200;
  write([&] { ASSERT_TRUE(store_->finish_attempt(failed)); });
  AttemptRecord again = failed;
  again.status = AttemptStatus::Succeeded;
  EXPECT_FALSE(store_->finish_attempt(again)) << "a finished attempt never changes";
  AttemptRecord still_running = attempt("r", "late", 1);
  EXPECT_FALSE(store_->finish_attempt(still_running)) << "'running' is not a final status";
  EXPECT_FALSE(store_->insert_attempt(attempt("r", "early", 1))) << "numbers are never reused";
  write([&] { ASSERT_TRUE(store_->insert_attempt(attempt("r", "early", 2))); });

  auto all = store_->attempts("r");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].step_id, "early") << "by the step's place in the plan, then number";
  EXPECT_EQ((*all)[0].number, 1);
  EXPECT_EQ((*all)[0].status, AttemptStatus::Failed);
  EXPECT_EQ((*all)[0].reason, "exit 1");
  EXPECT_EQ((*all)[0].ending, AttemptEnding::Interrupted);
  EXPECT_EQ((*all)[0].host, "build-7.example");
  EXPECT_EQ((*all)[0].model, "anthropic/claude-test");
  EXPECT_EQ((*all)[1].step_id, "early");
  EXPECT_EQ((*all)[1].number, 2);
  EXPECT_EQ((*all)[2].step_id, "late");
  auto early = store_->attempts("r", "early");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->size(), 2u);

  auto totals = store_->attempt_totals("r");
  ASSERT_TRUE(totals);
  EXPECT_EQ(totals->tokens, 15);
  EXPECT_DOUBLE_EQ(totals->cost_usd, 0.5);
  EXPECT_EQ(totals->counted, 3);
  EXPECT_EQ(totals->last_ms, 200);
}

TEST_P(StoreContract, EventsAreNumberedInOrderAndReadBySeqAndKind) {
  std::vector<std::int64_t> seqs;
  write([&] {
    ASSERT_TRUE(store_->insert_run(run("r", 1)));
    ASSERT_TRUE(store_->insert_run(run("other", 2)));
    for (const char* kind : {"run_started", "step_ready", "step_approved", "step_ready"}) {
      auto seq = store_->append_event(event("r", kind));
      ASSERT_TRUE(seq);
      seqs.push_back(*seq);
    }
    ASSERT_TRUE(store_->append_event(event("other", "step_ready")));
  });
  for (std::size_t i = 1; i < seqs.size(); ++i) EXPECT_GT(seqs[i], seqs[i - 1]);
  auto all = store_->events("r");
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].kind, "run_started");
  auto after = store_->events("r", seqs[1], 1);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].kind, "step_approved");
  auto ready = store_->events_of_kind("r", "step_ready");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->size(), 2u) << "the other run's are not this run's";
}

TEST_P(StoreContract, ARolledBackTurnLeavesNothingAndACommittedSeqIsNeverGivenAgain) {
  write([&] { ASSERT_TRUE(store_->insert_run(run("kept", 1))); });
  std::int64_t committed = 0;
  write([&] { committed = *store_->append_event(event("kept", "run_started")); });
  ASSERT_TRUE(store_->begin());
  ASSERT_TRUE(store_->insert_run(run("gone", 2)));
  ASSERT_TRUE(store_->insert_step(step("gone", "a", 0)));
  ASSERT_TRUE(store_->insert_attempt(attempt("gone", "a", 1)));
  ASSERT_TRUE(store_->append_event(event("kept", "step_ready")));
  ASSERT_TRUE(store_->rollback());
  auto gone = store_->find_run("gone");
  ASSERT_TRUE(gone);
  EXPECT_FALSE(gone->has_value());
  EXPECT_TRUE(store_->attempts("gone")->empty());
  EXPECT_EQ(store_->events("kept")->size(), 1u);
  std::int64_t next = 0;
  write([&] { next = *store_->append_event(event("kept", "step_ready")); });
  EXPECT_GT(next, committed);
}

TEST_P(StoreContract, CancelIsAFlagAnyWriterMaySet) {
  write([&] { ASSERT_TRUE(store_->insert_run(run("r", 1))); });
  EXPECT_FALSE(*store_->cancel_requested("r"));
  ASSERT_TRUE(store_->request_cancel("r"));
  EXPECT_TRUE(*store_->cancel_requested("r"));
  EXPECT_TRUE((*store_->find_run("r"))->cancel_requested);
}

TEST_P(StoreContract, ALockHasOneHolderAtATimeAndIsFreeOnceReleased) {
  EXPECT_FALSE(store_->locked("r"));
  auto held = store_->lock("r");
  ASSERT_TRUE(held) << held.error().message;
  EXPECT_TRUE(store_->locked("r"));
  auto second = store_->lock("r");
  ASSERT_FALSE(second) << "one holder at a time";
  EXPECT_EQ(second.error().code, ErrorCode::Busy);
  EXPECT_NE(second.error().message.find("run r is already being driven"), std::string::npos)
      << second.error().message;
  auto named = store_->lock("r", [](const std::string& holder) { return "review busy, held by " + holder; });
  ASSERT_FALSE(named);
  EXPECT_EQ(named.error().message, "review busy, held by " + std::to_string(getpid()));
  EXPECT_FALSE(store_->locked("other")) << "a lock is on its name only";
  held->reset();
  EXPECT_FALSE(store_->locked("r"));
  EXPECT_TRUE(store_->lock("r")) << "free once released";
}

TEST_P(StoreContract, AnAttemptsOutputIsReadFromWhereverItIsKept) {
  auto read = [&](const AttemptRecord& a, AttemptStream stream, std::string& text) {
    text.clear();
    return store_->read_attempt_output(a, stream, [&](std::string_view bytes) { text += bytes; });
  };
  std::string text;
  AttemptRecord in_row = attempt("r", "llm", 1);
  in_row.stdout_text = "an answer kept in the record";
  in_row.stdout_bytes = 28;
  auto row = read(in_row, AttemptStream::Stdout, text);
  ASSERT_TRUE(row) << row.error().message;
  EXPECT_EQ(row->source, OutputSource::Ledger);
  EXPECT_EQ(text, "an answer kept in the record");

  const auto file = store_->folder() / "runs" / "r" / "sh.1.stderr";
  std::filesystem::create_directories(file.parent_path());
  testing::write_file(file, "warning: x\n");
  AttemptRecord in_file = attempt("r", "sh", 1);
  in_file.stderr_path = "/a/project/that/moved/.orch/runs/r/sh.1.stderr";
  in_file.stderr_bytes = 11;
  in_file.status = AttemptStatus::Failed;
  auto logged = read(in_file, AttemptStream::Stderr, text);
  ASSERT_TRUE(logged) << logged.error().message;
  EXPECT_EQ(logged->source, OutputSource::File) << "found under the store's own runs/RUN/ folder";
  EXPECT_EQ(text, "warning: x\n");

  AttemptRecord silent = attempt("r", "sh", 2);
  silent.stdout_path = (store_->folder() / "runs" / "r" / "sh.2.stdout").string();
  silent.status = AttemptStatus::Succeeded;
  auto none = read(silent, AttemptStream::Stdout, text);
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->source, OutputSource::None) << "it wrote nothing, so no file was made";

  AttemptRecord lost = silent;
  lost.stdout_bytes = 5;
  auto gone = read(lost, AttemptStream::Stdout, text);
  ASSERT_FALSE(gone) << "bytes recorded but no file: an error, not silence";
  EXPECT_NE(gone.error().message.find("5 bytes recorded"), std::string::npos) << gone.error().message;
}

TEST_P(StoreContract, AFinishedAttemptsOutputIsTheStoresToGiveBack) {
  const auto out = store_->folder() / "runs" / "r" / "a.1.stdout";
  std::filesystem::create_directories(out.parent_path());
  testing::write_file(out, "done\n");
  AttemptRecord a = attempt("r", "a", 1);
  a.stdout_path = out.string();
  a.stdout_bytes = 5;
  write([&] {
    ASSERT_TRUE(store_->insert_run(run("r", 1)));
    ASSERT_TRUE(store_->insert_step(step("r", "a", 0)));
    ASSERT_TRUE(store_->insert_attempt(a));
  });
  a.status = AttemptStatus::Succeeded;
  a.ending = AttemptEnding::Exited;
  write([&] { ASSERT_TRUE(store_->finish_attempt(a)); });
  std::string text;
  auto read = store_->read_attempt_output(a, AttemptStream::Stdout, [&](std::string_view b) { text += b; });
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_NE(read->source, OutputSource::None);
  EXPECT_EQ(text, "done\n");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreContract, ::testing::ValuesIn(kBackends),
                         [](const ::testing::TestParamInfo<Backend>& param) { return param.param.name; });

}  // namespace
}  // namespace orch
