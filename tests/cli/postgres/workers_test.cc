// `orch worker` and `orch run --on-workers` on a real PostgreSQL server: real
// worker processes claim the steps (SKIP LOCKED, leases, LISTEN/NOTIFY), and
// the ledger says what happened — including when a worker is killed with -9,
// paused past its lease, or cannot take a step at all. Each test has a fresh
// schema (testing/pg_test_schema.h); without a server these tests fail.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/fake_llm.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch::pg_workers_test {
namespace {

namespace fs = std::filesystem;
using orch::testing::process_alive;
using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::spawn_orch;
using orch::testing::TempDir;
using orch::testing::wait_exit;
using orch::testing::wait_for;
using orch::testing::write_file;

class Workers : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = orch::testing::PgTestSchema::create();
    ASSERT_TRUE(schema) << schema.error().message;
    schema_ = std::move(*schema);
    url_ = schema_->url();
  }
  void TearDown() override {
    for (auto& [name, pid] : workers_)
      if (process_alive(pid)) {
        ::kill(pid, SIGCONT);
        ::kill(pid, SIGKILL);
      }
    for (auto& [name, pid] : workers_) wait_exit(pid);
    // The drivers a worker may have started (in sessions of their own).
    (void)orch::testing::run_command({"pkill", "-KILL", "-f", "resume .* --store " + url_}, d_.path(), {},
                                     30);
    schema_.reset();
  }

  orch::testing::CommandResult orch(std::vector<std::string> args, int timeout_s = 120) {
    args.push_back("--store");
    args.push_back(url_);
    return run_orch(args, d_.path(), {}, timeout_s);
  }
  // `orch worker --name NAME EXTRA...` in the background, its output in NAME.log.
  pid_t start_worker(const std::string& name, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"worker", "--store",   url_,
                                  "--name", name,        "--poll-s",
                                  "0.2",    "--workdir", (d_ / ("wd-" + name)).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_t pid = spawn_orch(args, d_.path(), d_ / (name + ".log"));
    workers_[name] = pid;
    return pid;
  }
  std::string log_of(const std::string& name) { return read_file(d_ / (name + ".log")); }
  std::string q(const std::string& sql) { return schema_->query(sql); }
  static nlohmann::json parse(const std::string& text) {
    auto doc = nlohmann::json::parse(text, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << text;
    return doc;
  }
  // `doc` follows schemas/NAME (what json_schema_test.cc does for the commands
  // that need no server).
  static void expect_schema(const nlohmann::json& doc, const std::string& name) {
    auto schema = JsonSchema::load_file((orch::testing::source_dir() / "schemas" / name).string());
    ASSERT_TRUE(schema) << schema.error().message;
    const auto problems = schema->validate(doc);
    EXPECT_TRUE(problems.empty()) << name << ": " << (problems.empty() ? "" : problems[0]) << "\n"
                                  << doc.dump(2);
  }
  // Waits until a live worker is registered under each name.
  bool live(const std::vector<std::string>& names) {
    return wait_for(
        [&] {
          auto listed = orch({"workers", "--json"});
          if (listed.exit_code != 0) return false;
          auto doc = nlohmann::json::parse(listed.out, nullptr, false);
          if (doc.is_discarded()) return false;
          std::size_t found = 0;
          for (const auto& w : doc)
            for (const auto& n : names)
              if (w["name"] == n && w["live"] == true) ++found;
          return found == names.size();
        },
        20000);
  }

  TempDir d_;
  std::unique_ptr<orch::testing::PgTestSchema> schema_;
  std::string url_;
  std::map<std::string, pid_t> workers_;
};

TEST_F(Workers, ARunOnWorkersIsExecutedByThemAndRecordedAsAnyRun) {
  write_file(d_ / "p.yaml", R"(name: dist
steps:
  - {id: a, sh: 'echo a >> effects; echo "from $ORCH_WORKER"'}
  - {id: b, deps: [a], sh: 'echo b >> effects; echo "b saw ${steps.a.result}"; echo to-stderr >&2'}
  - {id: c, deps: [a], sh: 'echo c >> effects', runs-on: [gpu]}
  - {id: d, deps: [b, c], executor: 'builtin:echo', inputs: {text: joined}}
)");
  start_worker("plain");
  start_worker("gpubox", {"--labels", "gpu,linux"});
  ASSERT_TRUE(live({"plain", "gpubox"}));
  auto ran = orch({"run", "p.yaml", "--on-workers", "--json"});
  ASSERT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  const auto report = parse(ran.out);
  const std::string id = report["run"]["id"];
  EXPECT_EQ(report["run"]["status"], "succeeded");
  // Each command ran once, on a worker (b and c at once: in either order).
  const std::string effects = read_file(d_ / "effects");
  EXPECT_TRUE(effects == "a\nb\nc\n" || effects == "a\nc\nb\n") << effects;
  EXPECT_EQ(q(fmt::format("SELECT dispatch FROM runs WHERE id = '{}'", id)), "workers");
  // c needed the gpu label: only gpubox could claim it.
  EXPECT_EQ(q(fmt::format("SELECT data::json->>'worker' FROM events WHERE run_id = '{}' AND kind = "
                          "'attempt_claimed' AND step_id = 'c'",
                          id)),
            "gpubox");
  EXPECT_EQ(
      q(fmt::format("SELECT count(*) FROM events WHERE run_id = '{}' AND kind = 'attempt_claimed'", id)), "3")
      << "the builtin ran in the driver, the three commands on workers";
  // The result passed between steps through the ledger.
  auto logs = orch({"logs", id, "b"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_NE(logs.out.find("b saw from "), std::string::npos) << logs.out;
  // stderr too, from the ledger (the worker's log file is gone).
  auto err = orch({"logs", id, "b", "--stderr"});
  EXPECT_NE(err.out.find("to-stderr"), std::string::npos) << err.out << err.err;
  EXPECT_FALSE(fs::exists(d_ / "wd-plain" / "runs" / id / "b.1.stdout"));
  auto workers = orch({"workers", "--json"});
  ASSERT_EQ(workers.exit_code, 0) << workers.err;
  const auto list = parse(workers.out);
  expect_schema(list, "workers.schema.json");
  ASSERT_EQ(list.size(), 2u) << workers.out;
  EXPECT_EQ(list[0]["name"], "gpubox");
  EXPECT_EQ(list[0]["labels"], nlohmann::json::array({"gpu", "linux"}));
}

TEST_F(Workers, ASQLiteStoreIsRefusedWithTheReason) {
  write_file(d_ / "p.yaml", "steps:\n  - {id: a, sh: 'true'}\n");
  auto ran = run_orch({"run", "p.yaml", "--on-workers"}, d_.path());
  EXPECT_EQ(ran.exit_code, 2) << ran.err;
  EXPECT_NE(ran.err.find("--on-workers needs a PostgreSQL ledger"), std::string::npos) << ran.err;
  EXPECT_FALSE(fs::exists(d_ / ".orch/orch.db")) << "nothing was recorded";
  auto worker = run_orch({"worker", "--store", (d_ / "x.db").string()}, d_.path());
  EXPECT_EQ(worker.exit_code, 2) << worker.err;
  EXPECT_NE(worker.err.find("orch worker needs a PostgreSQL ledger"), std::string::npos) << worker.err;
  // --detach alone starts a local driver in the background (json_schema_test);
  // with --on-workers it needs PostgreSQL as --on-workers does.
  auto detach = run_orch({"run", "p.yaml", "--on-workers", "--detach"}, d_.path());
  EXPECT_EQ(detach.exit_code, 2) << detach.err;
  EXPECT_NE(detach.err.find("--on-workers needs a PostgreSQL ledger"), std::string::npos) << detach.err;
  EXPECT_FALSE(fs::exists(d_ / ".orch/orch.db")) << "nothing was recorded";
}

TEST_F(Workers, ATakenNameIsRefused) {
  start_worker("w");
  ASSERT_TRUE(live({"w"}));
  auto second = run_orch({"worker", "--store", url_, "--name", "w"}, d_.path(), {}, 30);
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("a worker named 'w' is running on"), std::string::npos) << second.err;
}

// A step no live worker can take is said, in the ledger and on stderr, and
// runs once a worker with its labels comes.
TEST_F(Workers, AStepNoWorkerCanTakeIsReportedWaitingThenRuns) {
  write_file(d_ / "p.yaml", "steps:\n  - {id: train, sh: 'echo trained', runs-on: gpu}\n");
  start_worker("cpu");
  ASSERT_TRUE(live({"cpu"}));
  const pid_t driver =
      spawn_orch({"run", "p.yaml", "--on-workers", "--store", url_}, d_.path(), d_ / "driver.log");
  ASSERT_TRUE(
      wait_for([&] { return q("SELECT count(*) FROM events WHERE kind = 'attempt_waiting'") == "1"; }, 20000))
      << read_file(d_ / "driver.log");
  EXPECT_EQ(q("SELECT data::json->>'reason' FROM events WHERE kind = 'attempt_waiting'"),
            "no live worker has the labels gpu");
  EXPECT_NE(
      read_file(d_ / "driver.log").find("step 'train' (attempt 1) waits: no live worker has the labels gpu"),
      std::string::npos);
  EXPECT_TRUE(process_alive(driver));
  auto status = parse(orch({"status", "--json"}).out);
  EXPECT_EQ(status["steps"][0]["reason"], "waiting: no live worker has the labels gpu") << status.dump();
  start_worker("gpu", {"--labels", "gpu"});
  EXPECT_EQ(wait_exit(driver), 0) << read_file(d_ / "driver.log");
  EXPECT_EQ(q("SELECT data::json->>'worker' FROM events WHERE kind = 'attempt_claimed'"), "gpu");
}

// kill -9 of the worker running a step: its process dies with it, its lease
// expires, and another worker runs the step as a new attempt told why. The
// step's side effect happens once: the killed worker's command never finished.
TEST_F(Workers, AKilledWorkersStepIsRunAgainElsewhereAfterItsLease) {
  write_file(d_ / "p.yaml", "steps:\n  - {id: slow, sh: 'sleep 3; echo \"$ORCH_WORKER\" >> effects'}\n");
  const pid_t doomed = start_worker("doomed", {"--lease-s", "1"});
  ASSERT_TRUE(live({"doomed"}));
  const pid_t driver =
      spawn_orch({"run", "p.yaml", "--on-workers", "--store", url_}, d_.path(), d_ / "driver.log");
  ASSERT_TRUE(
      wait_for([&] { return q("SELECT count(*) FROM work_items WHERE state = 'claimed'") == "1"; }, 20000));
  ::kill(doomed, SIGKILL);
  wait_exit(doomed);
  start_worker("heir");
  ASSERT_EQ(wait_exit(driver), 0) << read_file(d_ / "driver.log");
  auto attempts = parse(orch({"status", "--json"}).out)["steps"][0]["attempts"];
  ASSERT_EQ(attempts.size(), 2u) << attempts.dump();
  EXPECT_EQ(attempts[0]["status"], "interrupted");
  EXPECT_EQ(attempts[0]["reason"], "lease expired on doomed");
  EXPECT_EQ(attempts[0]["counted"], false);
  EXPECT_EQ(attempts[1]["status"], "succeeded");
  ::sleep(3);  // had the killed worker's command lived on, it would have written by now
  EXPECT_EQ(read_file(d_ / "effects"), "heir\n") << "the killed worker's command died with it";
}

// A worker paused (SIGSTOP) past its lease: the step is handed on; when the
// worker goes on, its completion is refused, and the step is done once.
TEST_F(Workers, APausedWorkersLateCompletionIsRefused) {
  write_file(d_ / "p.yaml", "steps:\n  - {id: s, sh: 'sleep 1.5; echo \"$ORCH_WORKER\"'}\n");
  const pid_t sleepy = start_worker("sleepy", {"--lease-s", "0.5"});
  ASSERT_TRUE(live({"sleepy"}));
  const pid_t driver =
      spawn_orch({"run", "p.yaml", "--on-workers", "--store", url_}, d_.path(), d_ / "driver.log");
  ASSERT_TRUE(
      wait_for([&] { return q("SELECT count(*) FROM work_items WHERE state = 'claimed'") == "1"; }, 20000));
  ::kill(sleepy, SIGSTOP);
  ASSERT_TRUE(
      wait_for([&] { return q("SELECT count(*) FROM work_items WHERE state = 'lost'") == "1"; }, 20000));
  start_worker("awake");
  ASSERT_EQ(wait_exit(driver), 0) << read_file(d_ / "driver.log");
  ::kill(sleepy, SIGCONT);
  ASSERT_TRUE(wait_for([&] { return log_of("sleepy").find("was refused") != std::string::npos; }, 20000))
      << log_of("sleepy");
  auto status = parse(orch({"status", "--json"}).out);
  auto attempts = status["steps"][0]["attempts"];
  ASSERT_EQ(attempts.size(), 2u) << attempts.dump();
  EXPECT_EQ(attempts[0]["reason"], "lease expired on sleepy");
  EXPECT_EQ(attempts[1]["status"], "succeeded");
  EXPECT_EQ(q("SELECT convert_from(result, 'UTF8') FROM steps"), "awake") << "the second attempt's result";
  EXPECT_EQ(q("SELECT count(*) FROM work_items WHERE state = 'settled'"), "1") << "one outcome taken";
}

// The submitter may go: --detach records the run, and a worker drives it.
TEST_F(Workers, ADetachedRunIsDrivenByAWorker) {
  write_file(d_ / "p.yaml", R"(steps:
  - {id: a, sh: 'echo one'}
  - {id: b, deps: [a], sh: 'echo "${steps.a.result} two"'}
)");
  auto submitted = orch({"run", "p.yaml", "--on-workers", "--detach", "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  expect_schema(parse(submitted.out), "run-submitted.schema.json");
  const std::string id = parse(submitted.out)["run_id"];
  EXPECT_EQ(q(fmt::format("SELECT owner_pid FROM runs WHERE id = '{}'", id)), "0");
  start_worker("w");
  ASSERT_TRUE(wait_for(
      [&] { return q(fmt::format("SELECT status FROM runs WHERE id = '{}'", id)) == "succeeded"; }, 60000))
      << log_of("w");
  EXPECT_NE(log_of("w").find("had no driver; started `orch resume " + id), std::string::npos) << log_of("w");
  EXPECT_EQ(q("SELECT convert_from(result, 'UTF8') FROM steps WHERE step_id = 'b'"), "one two");
}

// Two drivers for one run: the second refuses, and the run is not disturbed.
TEST_F(Workers, ASecondDriverIsRefused) {
  write_file(d_ / "p.yaml", "steps:\n  - {id: s, sh: 'sleep 2; echo done'}\n");
  start_worker("w", {"--no-drive"});
  ASSERT_TRUE(live({"w"}));
  const pid_t driver =
      spawn_orch({"run", "p.yaml", "--on-workers", "--store", url_}, d_.path(), d_ / "driver.log");
  ASSERT_TRUE(
      wait_for([&] { return q("SELECT count(*) FROM work_items WHERE state = 'claimed'") == "1"; }, 20000));
  const std::string id = q("SELECT id FROM runs");
  auto second = orch({"resume", id});
  EXPECT_EQ(second.exit_code, 2) << second.out << second.err;
  EXPECT_NE(second.err.find("is already being driven by another orch process"), std::string::npos)
      << second.err;
  EXPECT_EQ(wait_exit(driver), 0) << read_file(d_ / "driver.log");
  EXPECT_EQ(q("SELECT count(*) FROM attempts"), "1");
}

// orch cancel reaches a step running on a worker: the worker stops it.
TEST_F(Workers, CancelStopsAStepOnAWorker) {
  write_file(d_ / "p.yaml", "steps:\n  - {id: s, sh: 'sleep 60'}\n");
  start_worker("w");
  ASSERT_TRUE(live({"w"}));
  const pid_t driver =
      spawn_orch({"run", "p.yaml", "--on-workers", "--store", url_}, d_.path(), d_ / "driver.log");
  ASSERT_TRUE(
      wait_for([&] { return q("SELECT count(*) FROM work_items WHERE state = 'claimed'") == "1"; }, 20000));
  auto cancel = orch({"cancel", q("SELECT id FROM runs"), "--wait", "30"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out << cancel.err;
  EXPECT_NE(wait_exit(driver), 0);
  EXPECT_EQ(q("SELECT status FROM runs"), "cancelled");
  EXPECT_EQ(q("SELECT status FROM attempts"), "cancelled");
  EXPECT_EQ(q("SELECT state FROM work_items"), "settled") << "the worker reported the attempt it stopped";
}

// Budgets hold across workers: 4 workers, 24 llm calls that could all run at
// once against our OpenAI-compatible server, a token budget that pays for
// some. The driver reserves each call before any worker can claim it, so what
// the run spent stays within the budget, and no call is made that it could
// not pay for.
TEST_F(Workers, ATokenBudgetHoldsAcrossFourWorkers) {
  orch::testing::FakeLlmServer llm("sk-workers-budget-123456");
  ASSERT_TRUE(llm.started());
  ::setenv("ORCH_TEST_WORKERS_KEY", llm.api_key().c_str(), 1);
  write_file(d_ / "models.yaml",
             fmt::format(
                 "providers:\n  fake: {{api: openai, base_url: \"{}/v1\", api_key_env: "
                 "ORCH_TEST_WORKERS_KEY, timeout: 10s}}\nmodels:\n  m: {{provider: fake, model: budget-test, "
                 "max_tokens: 60}}\ndefault_model: m\n",
                 llm.url()));
  std::string plan = "budget: {tokens: 700}\nsteps:\n";
  for (int i = 0; i < 24; ++i)
    plan += fmt::format(
        "  - {{id: ask{}, executor: llm, inputs: {{prompt: 'q{} [[usage: 10 40]] [[sleep: 0.3]]'}}}}\n", i,
        i);
  write_file(d_ / "p.yaml", plan);
  for (int w = 0; w < 4; ++w)
    start_worker(fmt::format("w{}", w), {"--slots", "3", "--models", "models.yaml"});
  ASSERT_TRUE(live({"w0", "w1", "w2", "w3"}));
  auto ran = orch({"run", "p.yaml", "--on-workers", "--models", "models.yaml", "-j", "24", "--json"});
  EXPECT_EQ(ran.exit_code, 4) << ran.out << ran.err;
  const auto report = parse(ran.out);
  EXPECT_EQ(report["run"]["status"], "budget_exhausted") << ran.out;
  const std::int64_t spent = std::stoll(q("SELECT coalesce(sum(tokens_in + tokens_out), 0) FROM attempts"));
  const int calls = static_cast<int>(llm.requests().size());
  EXPECT_LE(spent, 700) << "spent within the budget, across 4 workers";
  EXPECT_EQ(spent, 50 * calls) << "every call charged what it reported";
  EXPECT_GE(calls, 5) << "calls ran";
  EXPECT_LT(calls, 24) << "the budget stopped the rest";
  EXPECT_GE(
      std::stoi(q("SELECT count(DISTINCT data::json->>'worker') FROM events WHERE kind = 'attempt_claimed'")),
      2)
      << "the calls were spread over the workers";
}

// A worker that cannot run a step (it was given no models file, so its llm
// executor knows no model) says so as the attempt's set-up failure, naming
// itself: the step fails, not retried, no call is made, nothing is charged.
TEST_F(Workers, AWorkerWithoutTheStepsExecutorReportsASetUpFailure) {
  orch::testing::FakeLlmServer llm("sk-workers-setup-123456");
  ASSERT_TRUE(llm.started());
  ::setenv("ORCH_TEST_WORKERS_KEY", llm.api_key().c_str(), 1);
  write_file(d_ / "models.yaml",
             fmt::format("providers:\n  fake: {{api: openai, base_url: \"{}/v1\", api_key_env: "
                         "ORCH_TEST_WORKERS_KEY, timeout: 10s}}\nmodels:\n  m: {{provider: fake, model: x}}\n"
                         "default_model: m\n",
                         llm.url()));
  write_file(d_ / "p.yaml", "steps:\n  - {id: ask, executor: llm, attempts: 3, inputs: {prompt: hello}}\n");
  // The worker runs in another folder, where no .orch/models.yaml is found.
  fs::create_directories(d_ / "elsewhere");
  std::vector<std::string> args{
      "worker", "--store", url_, "--name", "bare", "--poll-s", "0.2", "--workdir", (d_ / "wd-bare").string()};
  workers_["bare"] = spawn_orch(args, d_ / "elsewhere", d_ / "bare.log");
  ASSERT_TRUE(live({"bare"}));
  auto ran = orch({"run", "p.yaml", "--on-workers", "--models", "models.yaml", "--json"});
  EXPECT_EQ(ran.exit_code, 1) << ran.out << ran.err;
  const auto report = parse(ran.out);
  EXPECT_EQ(report["run"]["status"], "failed");
  const auto attempts = report["steps"][0]["attempts"];
  ASSERT_EQ(attempts.size(), 1u) << "a set-up failure is not retried: " << attempts.dump();
  EXPECT_EQ(attempts[0]["ending"], "setup_failed");
  EXPECT_NE(attempts[0]["reason"].get<std::string>().find("worker 'bare' on "), std::string::npos)
      << attempts.dump();
  EXPECT_NE(attempts[0]["reason"].get<std::string>().find("no model for executor 'llm' in the models file"),
            std::string::npos)
      << attempts.dump();
  EXPECT_EQ(llm.requests().size(), 0u) << "no call was made";
  EXPECT_EQ(report["steps"][0]["tokens_in"], 0);
}

}  // namespace
}  // namespace orch::pg_workers_test

namespace orch::pg_workers_test {
namespace {

TEST_F(Workers, OrchServesMetricsSayTheLiveWorkersTheirSlotsAndLeases) {
  start_worker("w1", {"--slots", "3"});
  ASSERT_TRUE(live({"w1"}));
  const pid_t server =
      spawn_orch({"serve", "--store", url_, "--listen", "127.0.0.1:0"}, d_.path(), d_ / "serve.log");
  std::string url;
  ASSERT_TRUE(wait_for(
      [&] {
        const std::string log = read_file(d_ / "serve.log");
        const auto at = log.find("http://127.0.0.1:");
        if (at == std::string::npos) return false;
        url = log.substr(at, log.find('/', at + 7) - at + 1);
        return true;
      },
      20000))
      << read_file(d_ / "serve.log");
  auto metrics = orch::testing::run_command({"curl", "-s", url + "metrics"}, d_.path(), {}, 30);
  ::kill(server, SIGTERM);
  wait_exit(server);
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_NE(metrics.out.find("orch_workers{state=\"live\"} 1\n"), std::string::npos) << metrics.out;
  EXPECT_NE(metrics.out.find("orch_worker_slots 3\n"), std::string::npos) << metrics.out;
  EXPECT_NE(metrics.out.find("orch_leases 0\n"), std::string::npos) << metrics.out;
  EXPECT_NE(metrics.out.find("orch_runs{status=\"running\"} 0\n"), std::string::npos) << metrics.out;
}

}  // namespace
}  // namespace orch::pg_workers_test

namespace orch::pg_workers_test {
namespace {

// A tool of an MCP server runs in the driver, where its server is (started once
// for the run and shared), even in a run whose other steps the workers execute.
TEST_F(Workers, AnMcpToolStepRunsInTheDriverBesideTheWorkersSteps) {
  write_file(d_ / "registry.yml",
             fmt::format(
                 "tools:\n  fx:\n    kind: mcp\n    command: [node, {}]\n    env: {{FIXTURE_STATE_DIR: {}}}\n"
                 "    status: prod_ready\n    safe_for_agents: true\n    risk: low\n",
                 (orch::testing::source_dir() / "tests" / "mcp" / "tool_fixture.mjs").string(),
                 d_.path().string()));
  write_file(d_ / "p.yaml", R"(steps:
  - {id: who, executor: tool:fx.whoami}
  - {id: cmd, deps: [who], sh: 'echo "pid ${steps.who.json.pid}"'}
)");
  start_worker("w1");
  ASSERT_TRUE(live({"w1"}));
  auto ran = orch({"run", "p.yaml", "--on-workers", "--registry", "registry.yml", "--json"});
  ASSERT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  const std::string id = parse(ran.out)["run"]["id"];
  EXPECT_EQ(q(fmt::format("SELECT string_agg(step_id, ',') FROM events WHERE run_id = '{}' AND kind = "
                          "'attempt_claimed'",
                          id)),
            "cmd")
      << "only the shell step went to a worker";
  // The fixture was started once, by the driver, and is gone with it.
  const std::string starts = read_file(d_ / "starts");
  EXPECT_EQ(std::count(starts.begin(), starts.end(), '\n'), 1) << starts;
  auto logs = orch({"logs", id, "cmd"});
  EXPECT_NE(logs.out.find(fmt::format("pid {}", starts.substr(0, starts.find('\n')))), std::string::npos)
      << logs.out << logs.err;
}

}  // namespace
}  // namespace orch::pg_workers_test
