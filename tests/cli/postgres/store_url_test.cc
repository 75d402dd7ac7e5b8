// The orch binary on a PostgreSQL ledger: `--store postgresql://...` (and
// ORCH_STORE) for run, runs, status, logs, events, resume after kill -9 and
// `orch cycle run`. Each test has a fresh schema of the server that
// ORCH_TEST_PG_URL_FILE names (testing/pg_test_schema.h; without one these
// tests fail, they never skip), named in the URL's search_path.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch::pg_cli_test {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::TempDir;
using orch::testing::write_file;

class StoreUrl : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = orch::testing::PgTestSchema::create();
    ASSERT_TRUE(schema) << schema.error().message;
    schema_ = std::move(*schema);
    url_ = schema_->url();
  }
  void TearDown() override { schema_.reset(); }

  // `orch ARGS --store URL` in the test's folder.
  orch::testing::CommandResult orch(std::vector<std::string> args, int timeout_s = 120) {
    args.push_back("--store");
    args.push_back(url_);
    return run_orch(args, d_.path(), {}, timeout_s);
  }
  static nlohmann::json parse(const std::string& text) {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << text;
    return doc;
  }

  TempDir d_;
  std::unique_ptr<orch::testing::PgTestSchema> schema_;
  std::string url_;
};

// A command that reads a ledger finds none in an empty schema, says so, and
// makes none there (as a missing SQLite file is not created by `orch status`).
TEST_F(StoreUrl, ReadingAnEmptySchemaIsRefusedAndCreatesNothing) {
  auto status = orch({"status"});
  EXPECT_EQ(status.exit_code, 2) << status.out << status.err;
  EXPECT_NE(status.err.find("no orch ledger at"), std::string::npos) << status.err;
  auto list = orch({"cycle", "list", "--json"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(parse(list.out), nlohmann::json::array());
  EXPECT_EQ(schema_->query("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"), "0")
      << "no table was made";
}

TEST_F(StoreUrl, RunRunsStatusLogsAndEventsReadTheServer) {
  write_file(d_ / "p.yaml", R"(steps:
  - {id: a, run: [sh, -c, 'echo hi']}
  - {id: b, run: [sh, -c, 'echo there >&2'], deps: [a]}
)");
  auto ran = orch({"run", "p.yaml", "--json"});
  ASSERT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  const std::string id = parse(ran.out)["run"]["id"];
  EXPECT_FALSE(fs::exists(d_ / ".orch/orch.db")) << "no SQLite ledger beside the server's";
  EXPECT_EQ(schema_->query("SELECT count(*) FROM runs"), "1") << "the run is in the server's schema";

  auto runs = orch({"runs", "--json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  const auto list = parse(runs.out);
  ASSERT_EQ(list.size(), 1u) << runs.out;
  EXPECT_EQ(list[0]["id"], id);

  auto status = orch({"status", id, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(parse(status.out)["counts"]["done"], 2) << status.out;
  auto human = orch({"status"});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find(id), std::string::npos) << human.out;

  // The logs come from the database once the local files are gone.
  fs::remove_all(d_ / ".orch/runs");
  auto logs = orch({"logs", id, "a"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "hi\n");
  auto err_log = orch({"logs", id, "b", "--stderr"});
  EXPECT_EQ(err_log.exit_code, 0) << err_log.err;
  EXPECT_EQ(err_log.out, "there\n");

  auto events = orch({"events", id, "--json"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_NE(events.out.find("run_finished"), std::string::npos) << events.out;
}

// ORCH_STORE names the ledger when --store is not given; --store wins over it.
TEST_F(StoreUrl, OrchStoreIsUsedWhenStoreIsNotGivenAndStoreWins) {
  write_file(d_ / "p.yaml", "steps:\n  - {id: a, run: [sh, -c, 'echo from-env']}\n");
  auto ran = run_orch({"run", "p.yaml"}, d_.path(), {{"ORCH_STORE", url_}});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_FALSE(fs::exists(d_ / ".orch/orch.db"));
  auto runs = run_orch({"runs", "--json"}, d_.path(), {{"ORCH_STORE", url_}});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_EQ(parse(runs.out).size(), 1u) << runs.out;
  auto local = run_orch({"runs", "--json", "--store", ".orch/orch.db"}, d_.path(), {{"ORCH_STORE", url_}});
  EXPECT_NE(local.exit_code, 0) << "--store wins: the SQLite ledger, which does not exist";
  EXPECT_NE(local.err.find("no orch store at .orch/orch.db"), std::string::npos) << local.err;
}

// A password in the URL is never printed: messages show the URL without it.
TEST_F(StoreUrl, APasswordIsNeverPrinted) {
  const std::string url = "postgresql://someone:s3cr3t-pw@127.0.0.1:1/nodb";
  for (const char* command : {"runs", "status"}) {
    auto r = run_orch({command, "--store", url}, d_.path());
    EXPECT_NE(r.exit_code, 0) << command;
    EXPECT_EQ((r.out + r.err).find("s3cr3t-pw"), std::string::npos) << r.out << r.err;
    EXPECT_NE(r.err.find("postgresql://someone@127.0.0.1:1/nodb"), std::string::npos) << r.err;
  }
  auto param =
      run_orch({"runs", "--store", "postgresql://someone@127.0.0.1:1/nodb?password=s3cr3t-pw"}, d_.path());
  EXPECT_NE(param.exit_code, 0);
  EXPECT_EQ((param.out + param.err).find("s3cr3t-pw"), std::string::npos) << param.err;
}

// kill -9 of the driver mid-run, then `orch resume RUN --store URL`: the run
// finishes from the server's ledger, and the step that was done is not run again.
TEST_F(StoreUrl, AKilledRunIsResumedFromTheServerWithoutRerunningDoneSteps) {
  write_file(d_ / "p.yaml", R"(steps:
  - {id: a, run: [sh, -c, 'echo a >> a.count']}
  - {id: b, run: [sh, -c, 'if [ -f go ]; then echo finished; else touch b.started; exec sleep 60; fi'], deps: [a]}
)");
  const pid_t pid = orch::testing::spawn_orch({"run", "p.yaml", "--store", url_}, d_.path(), d_ / "out.txt");
  ASSERT_TRUE(orch::testing::wait_for([&] { return fs::exists(d_ / "b.started"); }, 20000));
  // The attempt of b is recorded with the next turn's writes.
  ASSERT_TRUE(orch::testing::wait_for(
      [&] { return schema_->query("SELECT count(*) FROM attempts WHERE step_id = 'b'") == "1"; }, 5000));
  kill(pid, SIGKILL);
  orch::testing::wait_exit(pid);
  const std::string id = orch::testing::run_id_in(read_file(d_ / "out.txt"));
  ASSERT_FALSE(id.empty()) << read_file(d_ / "out.txt");
  write_file(d_ / "go", "");

  auto resumed = orch({"resume", id}, 120);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_EQ(read_file(d_ / "a.count"), "a\n") << "a was done: not run again";
  auto status = orch({"status", id, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto doc = parse(status.out);
  EXPECT_EQ(doc["counts"]["done"], 2) << status.out;
  EXPECT_EQ(doc["run"]["status"], "succeeded") << status.out;
  auto logs = orch({"logs", id, "b"});
  EXPECT_EQ(logs.out, "finished\n") << logs.err;
}

// `orch cycle run` of a one-item project: the cycle run, its phases' runs and its
// transitions are recorded on the server.
TEST_F(StoreUrl, ACycleRunIsRecordedOnTheServer) {
  write_file(d_ / "one.txt", "start\n");
  write_file(d_ / "status.yaml", "- {id: a, file: one.txt, state: todo}\n");
  write_file(d_ / "cycle.yaml", R"(name: t
status: {file: status.yaml}
lifecycle:
  states: [todo, done]
  stages:
    finish:
      move: todo -> done
      worker:
        command: |-
          for id in $ORCH_CYCLE_IDS; do echo "$id-done" >> "$ORCH_CYCLE_FILE"; done
      gate: grep -qx -e {id}-done {file}
max_iterations: 3
)");
  auto ran = orch({"cycle", "run", "cycle.yaml", "--json"}, 180);
  ASSERT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  EXPECT_EQ(parse(ran.out)["status"], "converged") << ran.out;
  EXPECT_FALSE(fs::exists(d_ / ".orch/orch.db"));
  EXPECT_EQ(schema_->query("SELECT count(*) FROM cycles"), "1");
  EXPECT_EQ(schema_->query("SELECT count(*) FROM cycle_transitions"), "1");
  EXPECT_NE(schema_->query("SELECT count(*) FROM runs WHERE owner_kind = 'cycle'"), "0");

  auto list = orch({"cycle", "list", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const auto runs = parse(list.out);
  ASSERT_EQ(runs.size(), 1u) << list.out;
  const std::string run = runs[0]["id"];
  auto audit = orch({"cycle", "audit", run, "--json"});
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  EXPECT_EQ(parse(audit.out)["transitions"].size(), 1u) << audit.out;
  auto status = orch({"cycle", "status", run, "--json"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
}

}  // namespace
}  // namespace orch::pg_cli_test
