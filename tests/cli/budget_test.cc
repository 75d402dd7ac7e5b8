// Black-box tests of budgets across kill -9: what an attempt reported spending
// before its driver died is charged by the resume or cancel that closes it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "testing/testing.h"

namespace orch {
namespace {

using orch::testing::read_file;
using orch::testing::run_id_in;
using orch::testing::run_orch;
using orch::testing::spawn_orch;
using orch::testing::TempDir;
using orch::testing::wait_exit;
using orch::testing::wait_for;
using orch::testing::write_file;

// A plan whose first step reports 500 tokens and $5, then (its first attempt)
// waits to be killed.
constexpr const char* kReportsThenWaits = R"(budget: {tokens: 300}
steps:
  - id: spender
    sh: 'echo "{\"tokens_in\":400,\"tokens_out\":100,\"cost_usd\":5}" > "$ORCH_USAGE_FILE"; echo $$ > spender.pid; if [ "$ORCH_ATTEMPT" = 1 ]; then sleep 60; fi'
  - {id: after, deps: [spender], run: ["true"]}
)";

// Runs kReportsThenWaits in `d` and kills orch -9 once the step has reported;
// returns the run's id.
std::string run_and_kill_after_the_report(const TempDir& d) {
  write_file(d / "p.yaml", kReportsThenWaits);
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  EXPECT_TRUE(wait_for([&] { return read_file(d / "spender.pid").size() > 1; }, 10000));
  EXPECT_TRUE(wait_for([&] { return !run_id_in(read_file(d / "out.txt")).empty(); }, 5000));
  kill(pid, SIGKILL);
  wait_exit(pid);
  return run_id_in(read_file(d / "out.txt"));
}

TEST(CliBudget, UsageReportedBeforeAKillIsChargedByTheResume) {
  TempDir d;
  const std::string id = run_and_kill_after_the_report(d);
  ASSERT_FALSE(id.empty());
  auto r = run_orch({"resume", id, "--json"}, d.path());
  // 500 of 300 tokens are spent: nothing more may start.
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.out << r.err;
  EXPECT_EQ(report["budget"]["spent"]["tokens"], 500) << report["budget"].dump();
  EXPECT_EQ(report["budget"]["spent"]["cost_usd"], 5.0) << report["budget"].dump();
  const auto& spender = report["steps"][0];
  EXPECT_EQ(spender["tokens_in"], 400);
  EXPECT_EQ(spender["tokens_out"], 100);
  ASSERT_EQ(spender["attempts"].size(), 1u) << spender.dump();
  EXPECT_EQ(spender["attempts"][0]["status"], "interrupted");
  EXPECT_EQ(spender["attempts"][0]["tokens_in"], 400);
  const std::string reason = report["run"]["reason"];
  // The figure once: the budget that ran out is the one overspent.
  EXPECT_EQ(reason.rfind("budget exhausted: tokens: 500 spent of 300 ", 0), 0u) << reason;
  EXPECT_NE(reason.find("; over the plan's budget (an attempt reserves"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("over the plan's budget: tokens"), std::string::npos) << reason;
  // It could start nothing: the way on is said.
  EXPECT_NE(reason.find("(to go on, raise the plan's budget: orch resume " + id + " --replan PLAN)"),
            std::string::npos)
      << reason;
}

// `orch cancel` of a run whose driver was killed writes the run's final row: its
// spent totals are summed from the attempts (the killed driver's row lagged
// them), with what the interrupted attempt reported, and its wall time runs to
// the driver's last sign of life, not to the cancel.
TEST(CliBudget, CancelAfterAKillSumsWhatTheAttemptsSpent) {
  TempDir d;
  // Attempt 1 reports 100 tokens and fails; attempt 2 reports 500 and waits to be killed.
  write_file(d / "p.yaml", R"(budget: {tokens: 300}
steps:
  - id: spender
    attempts: 2
    retry_delay: 10ms
    sh: 'if [ "$ORCH_ATTEMPT" = 1 ]; then echo "{\"tokens_in\":100}" > "$ORCH_USAGE_FILE"; exit 1; fi; echo "{\"tokens_in\":400,\"tokens_out\":100}" > "$ORCH_USAGE_FILE"; echo $$ > spender.pid; sleep 60'
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return read_file(d / "spender.pid").size() > 1; }, 10000));
  ASSERT_TRUE(wait_for([&] { return !run_id_in(read_file(d / "out.txt")).empty(); }, 5000));
  kill(pid, SIGKILL);
  wait_exit(pid);
  const std::string id = run_id_in(read_file(d / "out.txt"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // dead time, not the run's
  auto c = run_orch({"cancel", id}, d.path());
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  auto report = nlohmann::json::parse(run_orch({"status", id, "--json"}, d.path()).out, nullptr, false);
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["run"]["status"], "cancelled");
  const auto& spent = report["budget"]["spent"];
  EXPECT_EQ(spent["tokens"], 600) << spent.dump();
  EXPECT_EQ(spent["attempts"], 1) << spent.dump();  // the interrupted attempt is not counted
  const std::int64_t wall = spent["wall_ms"];
  EXPECT_GT(wall, 0) << spent.dump();
  EXPECT_LT(wall, report["run"]["elapsed_ms"].get<std::int64_t>() - 1000) << report["run"].dump();
  const std::string reason = report["run"]["reason"];
  EXPECT_NE(reason.find("over the plan's budget: tokens: 600 spent of 300"), std::string::npos) << reason;
  EXPECT_EQ(report["steps"][0]["tokens_in"], 500) << report["steps"][0].dump();
}

// A wall budget that runs out while an aborted run waits for its running steps
// does not turn the failure into a budget stop: the run ends as the failed step
// made it end (exit 1), naming it, and what did not start says why.
TEST(CliBudget, AWallBudgetDoesNotHideTheStepThatAbortedTheRun) {
  TempDir d;
  write_file(d / "p.yaml", R"(budget: {wall: 2s}
steps:
  - {id: slow, run: [sleep, "30"]}
  - {id: bad, sh: "exit 1"}
  - {id: later, run: ["true"]}
)");
  const auto began = std::chrono::steady_clock::now();
  auto r = run_orch({"run", "p.yaml", "-j", "2", "--json"}, d.path());
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(20))
      << "the wall budget stops slow";
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.out << r.err;
  EXPECT_EQ(report["run"]["status"], "failed");
  const std::string reason = report["run"]["reason"];
  EXPECT_NE(reason.find("step 'bad' failed"), std::string::npos) << reason;
  for (const auto& s : report["steps"]) {
    if (s["id"] == "later") {
      EXPECT_EQ(s["status"], "skipped");
      EXPECT_NE(s["reason"].get<std::string>().find("run aborted (step 'bad' failed)"), std::string::npos)
          << s.dump();
    }
    if (s["id"] == "slow") {
      EXPECT_NE(s["status"], "done") << s.dump();
    }
  }
}

// The reason a budget stop gives is what was spent when the run ended, not what
// the first attempt over the budget had left spent.
TEST(CliBudget, TheBudgetStopSaysWhatWasSpentInTheEnd) {
  TempDir d;
  write_file(d / "p.yaml", R"(budget: {tokens: 100}
steps:
  - {id: a, sh: 'echo "{\"tokens_in\":60}" > "$ORCH_USAGE_FILE"'}
  - {id: b, sh: 'sleep 0.2; echo "{\"tokens_in\":60}" > "$ORCH_USAGE_FILE"'}
  - {id: c, sh: 'sleep 0.4; echo "{\"tokens_in\":60}" > "$ORCH_USAGE_FILE"'}
  - {id: d, deps: [c], run: ["true"]}
)");
  auto r = run_orch({"run", "p.yaml", "-j", "3", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.out << r.err;
  EXPECT_EQ(report["budget"]["spent"]["tokens"], 180) << report["budget"].dump();
  const std::string reason = report["run"]["reason"];
  EXPECT_NE(reason.find("budget exhausted: tokens: 180 spent of 100"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("120 spent"), std::string::npos) << reason;
  const auto& last = report["steps"][3];
  EXPECT_EQ(last["id"], "d");
  EXPECT_EQ(last["reason"], "not started: budget exhausted: tokens: 180 spent of 100") << last.dump();
}

}  // namespace
}  // namespace orch
