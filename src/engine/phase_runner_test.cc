// PhaseRunner tests: real plans, a real SQLite ledger, real processes.
#include "engine/phase_runner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine/snapshot.h"
#include "orch/clock.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/engine_fixture.h"
#include "testing/in_memory_store.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::write_file;

// A fresh ledger and workspace per test (testing/engine_fixture.h), and phases run on them.
class PhaseRunnerTest : public orch::testing::EngineFixture {
 protected:
  // A request for `key` whose plan is `plan_text` (JSON), counting the
  // plans it builds and keeping the token budget each was built with.
  PhaseRequest request(RunOwner key, std::string plan_text) {
    PhaseRequest r;
    r.key = std::move(key);
    r.build = [this, text = std::move(plan_text)](std::int64_t tokens_left) -> Expected<BuiltPlan> {
      ++builds_;
      built_with_.push_back(tokens_left);
      LoadResult loaded = parse_plan(text, "");
      if (!loaded.diagnostics.empty())
        return fail(ErrorCode::InvalidInput, loaded.diagnostics[0].to_string());
      auto registry = ExecutorRegistry::with_builtins();
      Diagnostics bad = validate_plan(loaded.plan, validate_options_for(ws(), "", registry));
      if (!bad.empty()) return fail(ErrorCode::InvalidInput, bad[0].to_string());
      return BuiltPlan{std::move(loaded.plan), text};
    };
    return r;
  }

  PhaseResult run_phase(const PhaseRequest& r) {
    EngineOptions options;
    options.workspace = ws();
    PhaseRunner runner(*store_, options);
    auto out = runner.run(r);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? *out : PhaseResult{};
  }

  int attempts_of(const std::string& run_id) {
    auto a = store_->attempts(run_id);
    EXPECT_TRUE(a);
    return a ? static_cast<int>(a->size()) : -1;
  }

  int builds_ = 0;
  std::vector<std::int64_t> built_with_;
};

const char* const kEchoPlan = R"({"name": "phase", "steps": [{"id": "a", "run": ["true"]}]})";

TEST_P(PhaseRunnerTest, APhaseRunsOnceAndIsFoundAgainByItsKey) {
  const RunOwner key{OwnerKind::Review, "rv-1", 1, "judge"};
  const PhaseResult first = run_phase(request(key, kEchoPlan));
  EXPECT_EQ(first.start, PhaseStart::Started);
  EXPECT_EQ(first.status, RunStatus::Succeeded);
  auto row = store_->find_run(first.run_id);
  ASSERT_TRUE(row && *row);
  EXPECT_EQ((*row)->owner, key) << "the run is owned by the phase's key";

  const PhaseResult again = run_phase(request(key, kEchoPlan));
  EXPECT_EQ(again.start, PhaseStart::Ended) << "an ended phase is reported, not run again";
  EXPECT_EQ(again.run_id, first.run_id);
  EXPECT_EQ(again.status, RunStatus::Succeeded);
  EXPECT_EQ(builds_, 1);
  EXPECT_EQ(built_with_, (std::vector<std::int64_t>{-1})) << "no cap: -1";
  EXPECT_EQ(attempts_of(first.run_id), 1);
}

TEST_P(PhaseRunnerTest, EachRoundAndPhaseHasItsOwnRunAndARunNamedLikeOneIsNobodys) {
  // A plan of `orch run` whose name reads like a review's phase owns nothing.
  const PhaseResult user = run_phase(request(RunOwner{OwnerKind::Task, "t", 0, ""}, kEchoPlan));
  ASSERT_EQ(user.start, PhaseStart::Started);
  {
    LoadResult loaded =
        parse_plan(R"({"name": "review rv-1 round 1 judge", "steps": [{"id": "a", "run": ["true"]}]})", "");
    ASSERT_TRUE(loaded.diagnostics.empty());
    EngineOptions options;
    options.workspace = ws();
    Engine engine(*store_, options);
    ASSERT_TRUE(engine.run(loaded.plan, "{}"));
  }
  const PhaseResult judge1 = run_phase(request(RunOwner{OwnerKind::Review, "rv-1", 1, "judge"}, kEchoPlan));
  const PhaseResult judge2 = run_phase(request(RunOwner{OwnerKind::Review, "rv-1", 2, "judge"}, kEchoPlan));
  const PhaseResult fix1 = run_phase(request(RunOwner{OwnerKind::Review, "rv-1", 1, "fix"}, kEchoPlan));
  for (const PhaseResult* r : {&judge1, &judge2, &fix1}) EXPECT_EQ(r->start, PhaseStart::Started);
  EXPECT_NE(judge1.run_id, judge2.run_id);
  EXPECT_NE(judge1.run_id, fix1.run_id);
  auto owned = store_->owned_runs(OwnerKind::Review, "rv-1");
  ASSERT_TRUE(owned);
  ASSERT_EQ(owned->size(), 3u) << "the run named like a phase is not the review's";
  EXPECT_EQ((*owned)[0].id, fix1.run_id) << "newest first";
  auto task = store_->owned_runs(OwnerKind::Task, "t");
  ASSERT_TRUE(task && task->size() == 1u);
  EXPECT_EQ((*task)[0].id, user.run_id);
}

TEST_P(PhaseRunnerTest, WithNothingLeftOfTheCapNothingStarts) {
  PhaseRequest r = request(RunOwner{OwnerKind::Review, "rv-2", 1, "reviewers"}, kEchoPlan);
  r.tokens_left = 0;
  const PhaseResult out = run_phase(r);
  EXPECT_EQ(out.start, PhaseStart::NoBudget);
  EXPECT_EQ(out.status, RunStatus::BudgetExhausted);
  EXPECT_EQ(out.run_id, "");
  EXPECT_EQ(builds_, 0);
  auto owned = store_->owned_runs(OwnerKind::Review, "rv-2");
  ASSERT_TRUE(owned);
  EXPECT_TRUE(owned->empty());
}

// A phase the owner's cap stopped goes on when the cap was raised: its run is
// resumed under a budget of what it spent plus what is left, and every token
// its attempts spent counts against the owner.
TEST_P(PhaseRunnerTest, APhaseTheCapStoppedGoesOnUnderTheRaisedCap) {
  const std::string spend40 = R"(echo '{\"tokens_in\": 40}' > \"$ORCH_USAGE_FILE\")";
  const std::string plan =
      fmt::format(R"({{"name": "p", "budget": {{"tokens": 50}}, "steps": [)"
                  R"({{"id": "a", "sh": "{0}"}}, {{"id": "b", "deps": ["a"], "sh": "{0}"}},)"
                  R"({{"id": "c", "deps": ["b"], "sh": "{0}"}}]}})",
                  spend40);
  const RunOwner key{OwnerKind::Review, "rv-3", 1, "fix"};
  PhaseRequest r = request(key, plan);
  r.tokens_left = 50;
  const PhaseResult stopped = run_phase(r);
  ASSERT_EQ(stopped.start, PhaseStart::Started);
  EXPECT_EQ(built_with_, (std::vector<std::int64_t>{50})) << "the plan is built with what is left of the cap";
  ASSERT_EQ(stopped.status, RunStatus::BudgetExhausted) << stopped.reason;
  auto spent = owner_spent_tokens(*store_, OwnerKind::Review, "rv-3");
  ASSERT_TRUE(spent);
  ASSERT_GT(*spent, 0);

  // The same cap: nothing is left, the stopped run is reported as it ended.
  r.tokens_left = 50 - *spent;
  EXPECT_EQ(run_phase(r).start, PhaseStart::Ended);

  r.tokens_left = 200 - *spent;  // the cap raised to 200
  const PhaseResult raised = run_phase(r);
  EXPECT_EQ(raised.start, PhaseStart::ResumedUnderRaisedCap);
  EXPECT_EQ(raised.run_id, stopped.run_id);
  EXPECT_EQ(raised.status, RunStatus::Succeeded) << raised.reason;
  EXPECT_EQ(builds_, 1) << "the stored plan goes on; nothing is built again";
  auto total = owner_spent_tokens(*store_, OwnerKind::Review, "rv-3");
  ASSERT_TRUE(total);
  EXPECT_EQ(*total, 120) << "three steps of 40 tokens, over both runs of the phase";
}

// An ended run the owner wants again (a task whose set-up failed, now fixed) is
// resumed: its failed steps run again, its done ones do not.
TEST_P(PhaseRunnerTest, AnEndedRunTheOwnerWantsAgainIsResumed) {
  const std::string flag = (dir_ / "fixed").string();
  const std::string plan =
      fmt::format(R"({{"name": "p", "steps": [{{"id": "a", "sh": "echo a >> {0}.log"}}, )"
                  R"({{"id": "b", "deps": ["a"], "sh": "test -e {0}"}}]}})",
                  flag);
  const RunOwner key{OwnerKind::Task, "t-9", 0, ""};
  PhaseRequest r = request(key, plan);
  const PhaseResult failed = run_phase(r);
  ASSERT_EQ(failed.status, RunStatus::Failed);
  EXPECT_EQ(run_phase(r).start, PhaseStart::Ended) << "without rerun_ended a failed run is reported";

  write_file(flag, "");
  int asked = 0;
  r.rerun_ended = [&](const RunRecord& ended) -> Expected<bool> {
    ++asked;
    EXPECT_EQ(ended.id, failed.run_id);
    return true;
  };
  const PhaseResult again = run_phase(r);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(again.start, PhaseStart::Resumed);
  EXPECT_EQ(again.run_id, failed.run_id);
  EXPECT_EQ(again.status, RunStatus::Succeeded) << again.reason;
  EXPECT_EQ(orch::testing::read_file(flag + ".log"), "a\n") << "the done step did not run again";
}

// The engine and the phase runner need only the Store contract: the same phase
// on the in-memory store, with no database file anywhere.
TEST_P(PhaseRunnerTest, APhaseRunsOnAStoreWithNoDatabaseFile) {
  testing::InMemoryStore memory(dir_ / "memory-store");
  EngineOptions options;
  options.workspace = ws();
  PhaseRunner runner(memory, options);
  const std::string plan = R"({"name": "p", "steps": [{"id": "a", "sh": "echo hi"}, )"
                           R"({"id": "b", "deps": ["a"], "sh": "exit 3", "attempts": 2}]})";
  const RunOwner key{OwnerKind::Cycle, "c-1", 2, "implement"};
  auto first = runner.run(request(key, plan));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->status, RunStatus::Failed);
  auto attempts = memory.attempts(first->run_id, "");
  ASSERT_TRUE(attempts);
  ASSERT_EQ(attempts->size(), 3u) << "a once, b twice";
  EXPECT_EQ((*attempts)[2].status, AttemptStatus::Failed);
  EXPECT_GT(memory.transactions_committed(), 0);
  auto again = runner.run(request(key, plan));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->start, PhaseStart::Ended);
  EXPECT_EQ(again->run_id, first->run_id);
  // The outputs were the store's once each attempt was final: the log files may go.
  fs::remove_all(dir_ / "memory-store" / "runs");
  std::string said;
  auto out = memory.read_attempt_output((*attempts)[0], AttemptStream::Stdout,
                                        [&](std::string_view bytes) { said += bytes; });
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->source, OutputSource::Ledger);
  EXPECT_EQ(said, "hi\n");
  for (const fs::path& root : {dir_ / "memory-store", ws()})
    for (const auto& entry : fs::recursive_directory_iterator(root))
      EXPECT_EQ(entry.path().string().find(".db"), std::string::npos) << entry.path();
  auto on_disk = store_->list_runs();
  ASSERT_TRUE(on_disk);
  EXPECT_TRUE(on_disk->empty()) << "the fixture's SQLite ledger saw nothing";
}

// A phase whose driver was killed in attempt 2 of step a, which writes out.txt:
// the ledger as the dead driver left it (attempt 2 running, its snapshot of
// out.txt taken, the file half written). Returns the run id.
std::string killed_in_attempt_2(Store& store, const fs::path& ws, const PhaseRequest& r) {
  write_file(ws / "out.txt", "old\n");
  write_file(ws / "fail-a", "");
  EngineOptions options;
  options.workspace = ws;
  PhaseRunner runner(store, options);
  auto first = runner.run(r);
  EXPECT_TRUE(first && first->status == RunStatus::Failed);
  const fs::path snapshot = store.folder() / "runs" / first->run_id / "a.2.snapshot";
  EXPECT_TRUE(take_snapshot({fs::canonical(ws) / "out.txt"}, snapshot, ws));
  const std::int64_t now = Clock::system().wall_ms();
  EXPECT_TRUE(store.begin());
  AttemptRecord a;
  a.run_id = first->run_id;
  a.step_id = "a";
  a.number = 2;
  a.started_at = now - 1000;
  a.snapshot_dir = snapshot.string();
  EXPECT_TRUE(store.insert_attempt(a));
  StepRecord row = store.find_step(first->run_id, "a")->value();
  row.status = StepStatus::Running;
  row.last_attempt = 2;
  row.reason.clear();
  row.finished_at = 0;
  EXPECT_TRUE(store.upsert_step(row));
  RunRecord run = store.find_run(first->run_id)->value();
  run.status = RunStatus::Running;
  run.finished_at = 0;
  run.updated_at = now - 1000;
  EXPECT_TRUE(store.update_run(run));
  EXPECT_TRUE(store.commit());
  write_file(ws / "out.txt", "half written by attempt 2\n");
  return first->run_id;
}

const char* const kWritesPlan =
    R"({"name": "p", "steps": [{"id": "a", "attempts": 1, "writes": ["out.txt"], )"
    R"("sh": "echo new > out.txt; [ ! -e fail-a ]"}]})";

// The phase goes on after its driver died: the engine recovers the run (the
// attempt left running closed, out.txt put back) before resuming it, and says so.
TEST_P(PhaseRunnerTest, APhaseWhoseDriverDiedIsRecoveredThenResumed) {
  PhaseRequest r = request(RunOwner{OwnerKind::Review, "rv-k", 1, "fix"}, kWritesPlan);
  const std::string run_id = killed_in_attempt_2(*store_, ws(), r);
  fs::remove(ws() / "fail-a");
  std::vector<std::string> notes;
  r.on_note = [&](const std::string& line) { notes.push_back(line); };
  r.who = "review rv-k: the fix of round 1";
  const PhaseResult out = run_phase(r);
  EXPECT_EQ(out.start, PhaseStart::Resumed);
  EXPECT_EQ(out.run_id, run_id);
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("review rv-k: the fix of round 1: run " + run_id +
                          " recovered: 1 attempt left running closed as interrupted"),
            std::string::npos)
      << notes[0];
  auto attempts = store_->attempts(run_id, "a");
  ASSERT_TRUE(attempts && attempts->size() == 3u);
  EXPECT_EQ((*attempts)[1].status, AttemptStatus::Interrupted);
  EXPECT_EQ((*attempts)[2].status, AttemptStatus::Succeeded);
  EXPECT_EQ(read_file(ws() / "out.txt"), "new\n");
}

// A file changed after the dead driver's last sign of life is not put back
// without the user's word: Refuse names it and the commands that go on, with
// nothing run; Keep leaves it as it is now and runs the step again on it.
TEST_P(PhaseRunnerTest, AFileChangedAfterTheDriverDiedIsNotPutBackWithoutTheUsersWord) {
  PhaseRequest r = request(RunOwner{OwnerKind::Review, "rv-e", 1, "fix"}, kWritesPlan);
  const std::string run_id = killed_in_attempt_2(*store_, ws(), r);
  write_file(ws() / "out.txt", "the user's edit\n");
  fs::last_write_time(ws() / "out.txt", fs::file_time_type::clock::now() + std::chrono::seconds(30));
  r.who = "review rv-e: the fix of round 1";
  r.resume_command = "orch review --resume rv-e";
  r.later_edits = LaterEdits::Refuse;
  EngineOptions options;
  options.workspace = ws();
  PhaseRunner runner(*store_, options);
  auto refused = runner.run(r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(refused.error().message.find("this file changed: out.txt"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("`orch review --resume rv-e --keep-edits`"), std::string::npos);
  EXPECT_EQ(read_file(ws() / "out.txt"), "the user's edit\n") << "nothing was put back";
  EXPECT_EQ(store_->attempts(run_id, "a")->back().status, AttemptStatus::Running) << "nothing was closed";

  r.later_edits = LaterEdits::Keep;
  write_file(ws() / "fail-a", "");  // the step fails again, so out.txt is put back to what was kept
  std::vector<std::string> notes;
  r.on_note = [&](const std::string& line) { notes.push_back(line); };
  auto kept = runner.run(r);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->status, RunStatus::Failed);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("kept as they are now (--keep-edits): out.txt"), std::string::npos) << notes[0];
  EXPECT_EQ(read_file(ws() / "out.txt"), "the user's edit\n")
      << "kept, and the failed attempt rolled back to it, not to the old snapshot";
}

TEST_P(PhaseRunnerTest, APhaseNeedsAnOwner) {
  EngineOptions options;
  options.workspace = ws();
  PhaseRunner runner(*store_, options);
  auto out = runner.run(request(RunOwner{}, kEchoPlan));
  ASSERT_FALSE(out);
  EXPECT_EQ(builds_, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, PhaseRunnerTest, ::testing::ValuesIn(orch::testing::kEngineBackends),
                         orch::testing::engine_backend_name);

}  // namespace
}  // namespace orch
