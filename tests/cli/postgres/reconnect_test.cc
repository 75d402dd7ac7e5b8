// `orch run --store postgresql://...` while its server restarts (issue 34): the
// driver reconnects with back-off, takes its run's lock again, writes again a
// turn the restart cut, and the run finishes, every step run and recorded
// once, saying on stderr that it reconnected; a server gone for longer than
// ORCH_PG_RECONNECT_S ends the run with an error that says so. Each test has a
// server of its own (scripts/pg.sh start in its folder, stopped at the end):
// the fixture's server is shared with the tests that run beside these, and
// must not restart under them.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/testing.h"

namespace orch::pg_cli_test {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::run_command;
using orch::testing::TempDir;
using orch::testing::write_file;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class PgRestart : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = pg("start", 180);
    ASSERT_EQ(started.exit_code, 0) << started.out << started.err;
    const auto said = lines_of(started.out);
    ASSERT_FALSE(said.empty()) << started.err;
    url_ = said.back();
    ASSERT_TRUE(url_.starts_with("postgresql://")) << started.out;
  }
  void TearDown() override { (void)pg("stop", 180); }

  // scripts/pg.sh COMMAND on the test's own server.
  orch::testing::CommandResult pg(const std::string& command, int timeout_s = 120) {
    return run_command({"/bin/bash", (orch::testing::source_dir() / "scripts" / "pg.sh").string(), command,
                        (d_ / "pg").string()},
                       d_.path(), {}, timeout_s);
  }
  // `orch ARGS --store URL` in the test's folder.
  orch::testing::CommandResult orch(std::vector<std::string> args) {
    args.insert(args.end(), {"--store", url_});
    return orch::testing::run_orch(args, d_.path());
  }
  // Starts `orch run p.yaml -j 2 --store URL` in the background, output to out.txt.
  pid_t start_run() {
    return orch::testing::spawn_orch({"run", "p.yaml", "-j", "2", "--store", url_}, d_.path(),
                                     d_ / "out.txt");
  }
  int ran() const {
    return fs::exists(d_ / "ran.txt") ? static_cast<int>(lines_of(read_file(d_ / "ran.txt")).size()) : 0;
  }

  TempDir d_;
  std::string url_;
};

TEST_F(PgRestart, TheDriverReconnectsAndTheRunFinishesWithEveryStepDoneOnce) {
  constexpr int kSteps = 60;
  std::string plan = "steps:\n";
  for (int i = 0; i < kSteps; ++i)
    plan += fmt::format("  - {{id: s{}, run: [sh, -c, 'sleep 0.15; echo s{} >> ran.txt']}}\n", i, i);
  write_file(d_ / "p.yaml", plan);
  const pid_t pid = start_run();
  ASSERT_TRUE(orch::testing::wait_for([&] { return ran() >= 10; }, 60000)) << read_file(d_ / "out.txt");
  auto restarted = pg("restart");
  ASSERT_EQ(restarted.exit_code, 0) << restarted.out << restarted.err;
  const int ran_by_restart = ran();
  const int exit_code = orch::testing::wait_exit(pid);
  const std::string out = read_file(d_ / "out.txt");
  ASSERT_EQ(exit_code, 0) << out;
  ASSERT_LT(ran_by_restart, kSteps) << "the run ended before the server restarted: nothing was tested";
  EXPECT_HAS(out, "orch: lost the connection to postgresql://127.0.0.1:");
  EXPECT_HAS(out, "reconnected after");
  EXPECT_HAS(out, "and took the lock again");

  // Every step's command ran once: no step was run again after the restart.
  std::vector<std::string> ran_lines = lines_of(read_file(d_ / "ran.txt"));
  std::sort(ran_lines.begin(), ran_lines.end());
  std::vector<std::string> want;
  for (int i = 0; i < kSteps; ++i) want.push_back(fmt::format("s{}", i));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ran_lines, want);

  // And the ledger says so: every step done, by one attempt.
  const std::string id = orch::testing::run_id_in(out);
  ASSERT_FALSE(id.empty()) << out;
  auto status = orch({"status", id, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto report = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << status.out;
  EXPECT_EQ(report["run"]["status"], "succeeded") << status.out;
  EXPECT_EQ(report["counts"]["done"], kSteps) << status.out;
  for (const auto& step : report["steps"]) EXPECT_EQ(step["attempts"].size(), 1u) << step.dump();
  auto events = orch({"events", id, "--kind", "step_done", "--json"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_EQ(nlohmann::json::parse(events.out, nullptr, false).size(), static_cast<std::size_t>(kSteps))
      << "each event written once";
}

TEST_F(PgRestart, AServerGoneLongerThanOrchPgReconnectSEndsTheRunWithAnErrorSayingSo) {
  write_file(d_ / "p.yaml", R"(steps:
  - {id: a, run: [sh, -c, 'echo a >> ran.txt']}
  - {id: b, run: [sh, -c, 'touch b.started; sleep 2; echo b >> ran.txt'], deps: [a]}
)");
  ::setenv("ORCH_PG_RECONNECT_S", "2", 1);
  const pid_t pid = start_run();
  ::unsetenv("ORCH_PG_RECONNECT_S");
  ASSERT_TRUE(orch::testing::wait_for([&] { return fs::exists(d_ / "b.started"); }, 60000))
      << read_file(d_ / "out.txt");
  auto stopped = pg("stop");
  ASSERT_EQ(stopped.exit_code, 0) << stopped.out << stopped.err;
  const int exit_code = orch::testing::wait_exit(pid);
  const std::string out = read_file(d_ / "out.txt");
  EXPECT_EQ(exit_code, 1) << out;
  EXPECT_HAS(out, "orch: postgresql://127.0.0.1:");
  EXPECT_HAS(out, "could not connect again in 2.");
  EXPECT_HAS(out, "ORCH_PG_RECONNECT_S sets how long orch tries");
}

// The same restart under a run executed by `orch worker`s: the workers and the
// driver's queue connection reconnect and LISTEN again, and the run finishes,
// each step's command run once and each step done by one attempt.
TEST_F(PgRestart, WorkersAndTheirDriverReconnectAndTheRunFinishes) {
  constexpr int kSteps = 40;
  std::string plan = "steps:\n";
  for (int i = 0; i < kSteps; ++i)
    plan += fmt::format("  - {{id: s{}, run: [sh, -c, 'sleep 0.15; echo s{} >> ran.txt']}}\n", i, i);
  write_file(d_ / "p.yaml", plan);
  std::vector<pid_t> workers;
  for (const char* name : {"wa", "wb"})
    workers.push_back(
        orch::testing::spawn_orch({"worker", "--store", url_, "--name", name, "--slots", "2", "--poll-s",
                                   "0.2", "--no-drive", "--workdir", (d_ / name).string()},
                                  d_.path(), d_ / (std::string(name) + ".log")));
  const pid_t pid = orch::testing::spawn_orch({"run", "p.yaml", "--on-workers", "--store", url_}, d_.path(),
                                              d_ / "out.txt");
  ASSERT_TRUE(orch::testing::wait_for([&] { return ran() >= 8; }, 60000)) << read_file(d_ / "out.txt");
  auto restarted = pg("restart");
  ASSERT_EQ(restarted.exit_code, 0) << restarted.out << restarted.err;
  const int ran_by_restart = ran();
  const int exit_code = orch::testing::wait_exit(pid);
  const std::string out = read_file(d_ / "out.txt");
  for (pid_t w : workers) {
    ::kill(w, SIGTERM);
    orch::testing::wait_exit(w);
  }
  ASSERT_EQ(exit_code, 0) << out << read_file(d_ / "wa.log") << read_file(d_ / "wb.log");
  ASSERT_LT(ran_by_restart, kSteps) << "the run ended before the server restarted: nothing was tested";
  EXPECT_HAS(out, "reconnected after");
  EXPECT_HAS(read_file(d_ / "wa.log") + read_file(d_ / "wb.log"), "listening again after reconnecting");
  std::vector<std::string> ran_lines = lines_of(read_file(d_ / "ran.txt"));
  std::sort(ran_lines.begin(), ran_lines.end());
  std::vector<std::string> want;
  for (int i = 0; i < kSteps; ++i) want.push_back(fmt::format("s{}", i));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ran_lines, want) << "every command ran once";
  auto status = orch({"status", orch::testing::run_id_in(out), "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto report = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << status.out;
  EXPECT_EQ(report["counts"]["done"], kSteps) << status.out;
  for (const auto& step : report["steps"]) EXPECT_EQ(step["attempts"].size(), 1u) << step.dump();
}

}  // namespace
}  // namespace orch::pg_cli_test
