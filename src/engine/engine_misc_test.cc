// Engine tests: batching, the spawn journal, secrets, reports and executor warm-up. On each backend of the
// ledger (testing/engine_fixture.h: EngineTest), with real plans and real processes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <sstream>
#include <thread>
#include <utility>

#include "engine/orphans.h"
#include "engine/snapshot.h"
#include "orch/clock.h"
#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/report.h"
#include "orch/validate.h"
#include "testing/engine_fixture.h"
#include "testing/testing.h"
#include "util/secrets.h"

namespace orch {
namespace {

using orch::testing::CountingStore;
using orch::testing::EngineSqliteTest;
using orch::testing::EngineTest;
using orch::testing::read_file;
using orch::testing::TempDir;
using orch::testing::write_file;
namespace fs = std::filesystem;

// In-process steps start and settle inside one turn's transaction: a chain of
// builtins costs a handful of commits, and each step row is written once per
// commit however often it changed, while the ledger still ends up complete.
TEST_P(EngineTest, ABuiltinChainIsSettledInFewTransactions) {
  constexpr int kSteps = 300;
  std::string yaml = "steps:\n  - {id: c0, executor: builtin:echo, inputs: {text: x}}\n";
  for (int i = 1; i < kSteps; ++i)
    yaml += fmt::format(
        "  - {{id: c{}, deps: [c{}], executor: builtin:echo, inputs: {{text: "
        "\"${{steps.c{}.result}}x\"}}}}\n",
        i, i - 1, i - 1);
  Plan plan = load(yaml);
  CountingStore counting(*store_);
  EngineOptions options;
  options.workspace = ws();
  Engine engine(counting, options);
  auto out = engine.run(plan, text_);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Succeeded) << out->reason;
  EXPECT_EQ(step(out->run_id, fmt::format("c{}", kSteps - 1)).result, std::string(kSteps, 'x'));
  EXPECT_EQ(counting.attempts_inserted, kSteps);
  // A builtin attempt that starts and ends in one transaction is written once, finished;
  // only one still in flight when a batch hits its time limit is inserted running at
  // that commit and finished by an update later (at most one per commit in a chain).
  EXPECT_LE(counting.attempts_finished, counting.commits);
  EXPECT_LT(counting.commits, kSteps / 10) << "one commit per builtin step: the turn did not batch them";
  // prepare_new writes every row once; after that, at most one write per step per commit.
  EXPECT_LE(counting.step_writes, kSteps + kSteps + counting.commits);
  auto all = *store_->attempts(out->run_id);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kSteps));
  for (const auto& a : all) EXPECT_EQ(a.status, AttemptStatus::Succeeded) << a.step_id;
  auto events = *store_->events(out->run_id);
  int done = 0;
  for (const auto& e : events) done += e.kind == "step_done";
  EXPECT_EQ(done, kSteps);
}

// A shell step is not started inside a batch: its attempt row is committed
// before its process runs, so the process can see itself in the ledger. It
// reads the ledger as another client would: Python's sqlite3 on the ledger's
// file, or psql on the PostgreSQL schema.
TEST_P(EngineTest, AProcessStepStartsOnlyAfterItsAttemptIsCommitted) {
  fs::path db = dir_ / "store" / "orch.db";
  const std::string look =
      on_postgres()
          ? fmt::format(
                R"Y([psql, -XtAq, -c, "select count(*) from attempts where step_id in ('a','b','look')", "{}"])Y",
                ledger_.url())
          : fmt::format(
                R"Y([python3, -c, "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute(\"select count(*) from attempts where step_id in ('a','b','look')\").fetchone()[0])", "{}"])Y",
                db.string());
  auto out = run(fmt::format(R"YAML(
steps:
  - {{id: a, executor: builtin:echo, inputs: {{text: x}}}}
  - {{id: b, deps: [a], executor: builtin:echo, inputs: {{text: y}}}}
  - id: look
    deps: [b]
    run: {}
)YAML",
                             look));
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "look").result, "3");
}

// Once the ledger has every group a run started (attempt_spawned), its spawn
// journal may be emptied, and is once it has grown: 600 processes' lines would
// be more than that.
TEST_P(EngineTest, TheSpawnJournalIsEmptiedOnceItHasGrown) {
  std::string plan = "concurrency: 4\nsteps:\n";
  for (int i = 0; i < 600; ++i) plan += fmt::format("  - {{id: s{}, run: [\"true\"]}}\n", i);
  auto out = run(plan);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  const fs::path journal = spawn_journal_path(dir_ / "store", out.run_id);
  ASSERT_TRUE(fs::exists(journal));
  EXPECT_LT(fs::file_size(journal), static_cast<std::uintmax_t>(SpawnJournal::kClearAbove) + 4096);
}

// A secret from orch's environment, or from a step's secret-looking env, never
// reaches the ledger, the log files or the results: each is "***" there.
TEST_P(EngineTest, SecretsAreMaskedEverywhereTheyAreStoredOrShown) {
  const std::string key = "sk-live-0123456789";
  setenv("ORCH_TEST_PROVIDER_API_KEY", key.c_str(), 1);  // read by the default masker and the steps
  auto out = run(R"YAML(
on_failure: continue
steps:
  - {id: leak, sh: 'echo "key=$ORCH_TEST_PROVIDER_API_KEY"; echo "err $ORCH_TEST_PROVIDER_API_KEY" >&2'}
  - id: plan_env
    env: {SERVICE_TOKEN: tok-plan-abcdef}
    sh: 'echo "token $SERVICE_TOKEN"'
  - id: passed_on
    deps: [leak]
    executor: builtin:echo
    inputs: {text: "got ${steps.leak.result}"}
  - id: fails
    attempts: 1
    sh: 'echo "dying with $ORCH_TEST_PROVIDER_API_KEY"; exit 3'
)YAML");
  unsetenv("ORCH_TEST_PROVIDER_API_KEY");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "leak").result, "key=***");
  EXPECT_EQ(step(out.run_id, "plan_env").result, "token ***");
  EXPECT_EQ(step(out.run_id, "passed_on").result, "got key=***");
  auto leak = attempts(out.run_id, "leak");
  ASSERT_EQ(leak.size(), 1u);
  EXPECT_EQ(read_file(leak[0].stdout_path), "key=***\n");
  EXPECT_EQ(read_file(leak[0].stderr_path), "err ***\n");
  auto fails = attempts(out.run_id, "fails");
  ASSERT_EQ(fails.size(), 1u);
  EXPECT_NE(fails[0].output_tail.find("dying with ***"), std::string::npos) << fails[0].output_tail;
  // The environment's secret is nowhere under the store folder: not in the
  // ledger file, its WAL, or any log.
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "store")) {
    if (!entry.is_regular_file()) continue;
    ++files;
    EXPECT_EQ(read_file(entry.path()).find(key), std::string::npos) << entry.path();
  }
  EXPECT_GE(files, 4);
  // The plan's own literal is stored with the plan (resume needs it), and nowhere else.
  auto steps = store_->steps(out.run_id);
  ASSERT_TRUE(steps);
  for (const auto& s : *steps) EXPECT_EQ(s.result.find("tok-plan"), std::string::npos);
  auto all = store_->attempts(out.run_id);
  ASSERT_TRUE(all);
  for (const auto& a : *all) {
    EXPECT_EQ(a.output_tail.find("tok-plan"), std::string::npos) << a.step_id;
    if (!a.stdout_path.empty() && fs::exists(a.stdout_path)) {
      EXPECT_EQ(read_file(a.stdout_path).find("tok-plan"), std::string::npos) << a.stdout_path;
    }
  }
}

TEST_P(EngineTest, ReportIsBuiltFromTheLedger) {
  auto out = run("steps:\n  - {id: a, run: [echo, hi]}\n  - {id: b, deps: [a], run: [\"false\"]}\n");
  auto report = build_run_report(*store_, out.run_id);
  ASSERT_TRUE(report);
  EXPECT_EQ((*report)["run"]["status"], "failed");
  EXPECT_EQ((*report)["counts"]["done"], 1);
  EXPECT_EQ((*report)["counts"]["failed"], 1);
  EXPECT_EQ((*report)["steps"][1]["attempts"][0]["exit_code"], 1);
  // A stream with output names its log file, which exists; one that wrote nothing
  // has no file, and the report names none.
  const auto& a_out = (*report)["steps"][0]["attempts"][0]["stdout"];
  EXPECT_TRUE(fs::exists(a_out["path"].get<std::string>())) << a_out.dump();
  const auto& b_out = (*report)["steps"][1]["attempts"][0]["stdout"];
  EXPECT_EQ(b_out["bytes"], 0);
  EXPECT_EQ(b_out["path"], "") << b_out.dump();
  EXPECT_FALSE(b_out["in_ledger"].get<bool>());
  std::string table = format_report_table(*report);
  EXPECT_NE(table.find("exit_zero"), std::string::npos) << table;
}

// The table's columns line up whatever the statuses: awaiting_approval is wider
// than the others.
TEST_P(EngineTest, ReportTableColumnsLineUpForEveryStatus) {
  auto out = run("steps:\n  - {id: a, sh: 'true'}\n  - {id: deploy, risk: high, deps: [a], sh: 'true'}\n");
  ASSERT_EQ(out.status, RunStatus::AwaitingApproval) << out.reason;
  auto report = build_run_report(*store_, out.run_id);
  ASSERT_TRUE(report);
  std::istringstream table(format_report_table(*report));
  std::string header, row_a, row_deploy;
  std::getline(table, header);
  std::getline(table, row_a);
  std::getline(table, row_deploy);
  const std::size_t try_end = header.find("TRY") + 2;
  ASSERT_GT(row_deploy.size(), try_end) << row_deploy;
  EXPECT_EQ(row_a[try_end], '1') << header << "\n" << row_a;
  EXPECT_EQ(row_deploy[try_end], '0') << header << "\n" << row_deploy;
}

// Counts warm_up() calls and checks that each came before the executor's first
// attempt; attempts succeed at once with the result "ok".
class WarmCounting final : public Executor {
 public:
  int warm_ups = 0;
  int starts = 0;
  int starts_before_warm_up = 0;
  void warm_up() override { ++warm_ups; }
  bool in_process() const override { return true; }
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec&, EventLoop& loop,
                                                  DoneCallback done) override {
    if (warm_ups == 0) ++starts_before_warm_up;
    ++starts;
    loop.defer([done = std::move(done)] {
      AttemptOutcome o;
      o.ending = AttemptEnding::Exited;
      o.exit_code = 0;
      o.result = "ok";
      done(std::move(o));
    });
    return nullptr;
  }
};

TEST_P(EngineTest, EachExecutorThePlanUsesIsWarmedUpOnceBeforeItsFirstAttempt) {
  const std::string yaml = R"(name: warm
steps:
  - {id: a, executor: "count:x"}
  - {id: b, executor: "count:y", deps: [a]}
  - {id: c, sh: "exit 1", deps: [b]}
)";
  auto used = std::make_shared<WarmCounting>();
  auto unused = std::make_shared<WarmCounting>();
  auto registry = [&](const std::shared_ptr<WarmCounting>& counting) {
    auto r = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
    r->add("count:", counting);
    r->add("idle", unused);
    return r;
  };
  LoadResult loaded = parse_plan(yaml, (dir_ / "plan.yaml").string());
  ASSERT_TRUE(loaded.diagnostics.empty()) << loaded.diagnostics.front().to_string();
  EngineOptions options;
  options.workspace = ws();
  options.executors = registry(used);
  Engine engine(*store_, options);
  auto out = engine.run(loaded.plan, yaml);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::Failed);
  EXPECT_EQ(used->warm_ups, 1);  // count:x and count:y are one executor
  EXPECT_EQ(used->starts, 2);
  EXPECT_EQ(used->starts_before_warm_up, 0);
  EXPECT_EQ(unused->warm_ups, 0);

  // A resume warms up the executors of the stored plan again (a new process).
  auto again = std::make_shared<WarmCounting>();
  EngineOptions resume_options;
  resume_options.executors = registry(again);
  Engine resumed(*store_, resume_options);
  auto second = resumed.resume(out->run_id, std::nullopt);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(again->warm_ups, 1);
  EXPECT_EQ(again->starts, 0);  // a and b are done; only c re-runs
  EXPECT_EQ(unused->warm_ups, 0);
}

}  // namespace
}  // namespace orch
