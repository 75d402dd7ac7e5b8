// The risk guard: every level, the durable pause, approve then resume.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exec/tool_executor.h"
#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/report.h"
#include "orch/validate.h"
#include "testing/engine_fixture.h"

namespace orch {
namespace {

using orch::testing::read_file;
namespace fs = std::filesystem;

using RiskGuard = orch::testing::EngineFixture;

// A medium and a high step, each writing a marker file; `after` depends on high.
constexpr const char* kPlan = R"(name: risky
steps:
  - id: low
    run: [touch, low.txt]
  - id: medium
    risk: medium
    run: [touch, medium.txt]
  - id: high
    risk: HIGH
    run: [sh, -c, "echo deploying ${inputs.target} > high.txt"]
    inputs: {target: prod}
  - id: after
    deps: [high]
    run: [touch, after.txt]
)";

TEST_P(RiskGuard, UnapprovedStepsPauseTheRunDurablyAndTheRestRuns) {
  RunOutcome out = run(kPlan);
  EXPECT_EQ(out.status, RunStatus::AwaitingApproval) << out.reason;
  EXPECT_EQ(out.exit_code(), 3);
  EXPECT_NE(out.reason.find("orch approve " + out.run_id), std::string::npos) << out.reason;
  EXPECT_TRUE(fs::exists(ws() / "low.txt"));
  EXPECT_FALSE(fs::exists(ws() / "medium.txt"));
  EXPECT_FALSE(fs::exists(ws() / "high.txt"));
  EXPECT_FALSE(fs::exists(ws() / "after.txt"));
  EXPECT_EQ(step(out.run_id, "medium").status, StepStatus::AwaitingApproval);
  EXPECT_EQ(step(out.run_id, "high").status, StepStatus::AwaitingApproval);
  EXPECT_EQ(step(out.run_id, "after").status, StepStatus::Pending);
  EXPECT_TRUE(store_->attempts(out.run_id, "high")->empty()) << "nothing ran before approval";
  auto run_row = store_->find_run(out.run_id);
  ASSERT_TRUE(run_row && *run_row);
  EXPECT_EQ((*run_row)->status, RunStatus::AwaitingApproval);
  EXPECT_EQ((*run_row)->exit_code, 3);
  // The request shows the exact command, rendered, and its inputs.
  auto requests = events(out.run_id, "approval_requested");
  ASSERT_EQ(requests.size(), 2u);
  const EventRecord& high = requests[0].step_id == "high" ? requests[0] : requests[1];
  auto data = nlohmann::json::parse(high.data_json);
  EXPECT_EQ(data["risk"], "high");
  EXPECT_NE(data["command"].get<std::string>().find("'echo deploying prod > high.txt'"), std::string::npos)
      << data.dump();
  EXPECT_NE(data["command"].get<std::string>().find("\"target\":\"prod\""), std::string::npos) << data.dump();
  // The report counts the paused steps.
  auto report = build_run_report(*store_, out.run_id);
  ASSERT_TRUE(report);
  EXPECT_EQ((*report)["counts"]["awaiting_approval"], 2);
}

// A run that fails, or runs out of budget, while a step waits for approval says
// so in its reason too, with what to do, next to the steps that failed.
TEST_P(RiskGuard, ARunThatEndsOtherwiseStillNamesTheStepWaitingForApproval) {
  RunOutcome failed = run(R"(on_failure: continue
steps:
  - {id: bad, sh: "exit 1", attempts: 1}
  - {id: deploy, risk: high, run: ["true"]}
)");
  EXPECT_EQ(failed.status, RunStatus::Failed) << failed.reason;
  EXPECT_EQ(step(failed.run_id, "deploy").status, StepStatus::AwaitingApproval);
  EXPECT_EQ(failed.reason,
            "1 step failed: bad; 1 step awaiting approval: deploy (approve with `orch approve " +
                failed.run_id + " STEP`)");
  RunOutcome spent = run(R"(on_failure: continue
concurrency: 1
budget: {tokens: 10}
steps:
  - {id: bad, sh: "exit 1", attempts: 1}
  - {id: deploy, risk: high, run: ["true"]}
  - {id: spends, sh: 'echo "{\"tokens_in\": 15}" > "$ORCH_USAGE_FILE"'}
  - {id: later, deps: [spends], run: ["true"]}
)");
  EXPECT_EQ(spent.status, RunStatus::BudgetExhausted) << spent.reason;
  // The budget that ran out, the step that failed, the one waiting, and the
  // overspend, its figure not said twice.
  EXPECT_EQ(spent.reason.rfind("budget exhausted: tokens: 15 spent of 10 (1 step failed: bad); "
                               "1 step awaiting approval: deploy (approve with `orch approve ",
                               0),
            0u)
      << spent.reason;
  EXPECT_NE(spent.reason.find(" STEP`); over the plan's budget (an attempt reserves"), std::string::npos)
      << spent.reason;
  auto over = events(spent.run_id, "budget_overspent");
  ASSERT_EQ(over.size(), 1u);
  EXPECT_NE(over[0].data_json.find("over the plan's budget: tokens: 15 spent of 10"), std::string::npos)
      << over[0].data_json;
}

// What the process gets in its environment is shown too: an `sh` script's
// placeholders and the step's `env:` would otherwise read "${ORCH_P0}" and
// "$TARGET". A secret among them is masked before it is recorded.
TEST_P(RiskGuard, TheRequestShowsTheEnvironmentsValuesWithSecretsMasked) {
  RunOutcome out = run(R"(steps:
  - {id: pick, sh: 'echo /home'}
  - id: wipe
    risk: high
    deps: [pick]
    env: {TARGET: "${steps.pick.result}", API_TOKEN: "s3cr3t-value-9f2k"}
    sh: 'echo rm -rf "$TARGET" "${steps.pick.result}"'
)");
  EXPECT_EQ(out.status, RunStatus::AwaitingApproval) << out.reason;
  auto requests = events(out.run_id, "approval_requested");
  ASSERT_EQ(requests.size(), 1u);
  const std::string command = nlohmann::json::parse(requests[0].data_json)["command"].get<std::string>();
  EXPECT_NE(command.find("\nenv: "), std::string::npos) << command;
  EXPECT_NE(command.find("TARGET=/home"), std::string::npos) << command;
  EXPECT_NE(command.find("ORCH_P0=/home"), std::string::npos) << command;
  EXPECT_NE(command.find("API_TOKEN="), std::string::npos) << command;
  EXPECT_EQ(command.find("s3cr3t-value-9f2k"), std::string::npos) << command;
}

TEST_P(RiskGuard, ApproveThenResumeRunsExactlyTheApprovedStep) {
  RunOutcome out = run(kPlan);
  ASSERT_EQ(out.status, RunStatus::AwaitingApproval);
  auto refused = approve_step(*store_, out.run_id, "low", 1);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not awaiting approval (it is done)"), std::string::npos);
  auto typo = approve_step(*store_, out.run_id, "hihg", 1);
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("did you mean 'high'"), std::string::npos) << typo.error().message;

  auto approved = approve_step(*store_, out.run_id, "high", 1);
  ASSERT_TRUE(approved) << approved.error().message;
  EXPECT_EQ(approved->risk, "high");
  RunOutcome second = resume(out.run_id);
  // medium is still not approved: the run pauses again, with high and after done.
  EXPECT_EQ(second.status, RunStatus::AwaitingApproval) << second.reason;
  EXPECT_EQ(read_file(ws() / "high.txt"), "deploying prod\n");
  EXPECT_TRUE(fs::exists(ws() / "after.txt"));
  EXPECT_FALSE(fs::exists(ws() / "medium.txt"));
  EXPECT_EQ(step(out.run_id, "medium").status, StepStatus::AwaitingApproval);

  ASSERT_TRUE(approve_step(*store_, out.run_id, "medium", 2));
  RunOutcome third = resume(out.run_id);
  EXPECT_EQ(third.status, RunStatus::Succeeded) << third.reason;
  EXPECT_TRUE(fs::exists(ws() / "medium.txt"));
  EXPECT_EQ(store_->attempts(out.run_id, "low")->size(), 1u) << "a done step never re-runs";
  EXPECT_EQ(events(out.run_id, "step_approved").size(), 2u);
}

TEST_P(RiskGuard, FlagsApproveUpFrontAndApproveMediumDoesNotCoverHigh) {
  EngineOptions options;
  options.approve_medium = true;
  RunOutcome out = run(kPlan, options);
  EXPECT_EQ(out.status, RunStatus::AwaitingApproval);
  EXPECT_TRUE(fs::exists(ws() / "medium.txt"));
  EXPECT_FALSE(fs::exists(ws() / "high.txt"));

  EngineOptions named;
  named.approve_steps = {"high"};
  RunOutcome second = resume(out.run_id, named);
  EXPECT_EQ(second.status, RunStatus::Succeeded) << second.reason;
  auto approvals = events(out.run_id, "step_approved");
  ASSERT_EQ(approvals.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(approvals[0].data_json)["by"], "--approve-medium");
  EXPECT_EQ(nlohmann::json::parse(approvals[1].data_json)["by"], "--approve");
}

TEST_P(RiskGuard, CriticalIsRefusedAlwaysEvenWhenNamed) {
  EngineOptions options;
  options.approve_steps = {"drop"};
  options.approve_medium = true;
  int asked = 0;
  options.ask_approval = [&](const ApprovalRequest&) {
    ++asked;
    return true;
  };
  RunOutcome out = run(R"(name: critical
on_failure: continue
steps:
  - id: drop
    risk: critical
    run: [touch, dropped.txt]
  - id: other
    run: [touch, other.txt]
)",
                       options);
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(out.exit_code(), 1);
  EXPECT_FALSE(fs::exists(ws() / "dropped.txt"));
  EXPECT_TRUE(fs::exists(ws() / "other.txt"));
  EXPECT_EQ(asked, 0) << "nobody is asked about a critical step";
  StepRecord drop = step(out.run_id, "drop");
  EXPECT_EQ(drop.status, StepStatus::Failed);
  EXPECT_NE(drop.reason.find("refused by the risk guard: critical"), std::string::npos) << drop.reason;
  EXPECT_EQ(events(out.run_id, "step_refused").size(), 1u);
  EXPECT_TRUE(store_->attempts(out.run_id, "drop")->empty());
}

TEST_P(RiskGuard, TheQuestionIsAskedWithTheCommandAndItsAnswerIsRecorded) {
  std::vector<ApprovalRequest> asked;
  EngineOptions options;
  options.ask_approval = [&](const ApprovalRequest& r) {
    asked.push_back(r);
    return r.step_id == "high";  // yes to high, no to medium
  };
  RunOutcome out = run(kPlan, options);
  EXPECT_EQ(out.status, RunStatus::AwaitingApproval) << out.reason;
  ASSERT_EQ(asked.size(), 2u);
  for (const auto& r : asked) {
    EXPECT_EQ(r.run_id, out.run_id);
    if (r.step_id == "high") {
      EXPECT_EQ(r.risk, RiskLevel::High);
      EXPECT_NE(r.command.find("deploying prod"), std::string::npos) << r.command;
    } else {
      EXPECT_EQ(r.risk, RiskLevel::Medium);
    }
  }
  EXPECT_TRUE(fs::exists(ws() / "high.txt"));
  EXPECT_TRUE(fs::exists(ws() / "after.txt"));
  EXPECT_FALSE(fs::exists(ws() / "medium.txt"));
  EXPECT_EQ(events(out.run_id, "approval_declined").size(), 1u);
  auto approvals = events(out.run_id, "step_approved");
  ASSERT_EQ(approvals.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(approvals[0].data_json)["by"], "prompt");
}

TEST_P(RiskGuard, AnApprovalIsBoundToTheCommandThatWasShown) {
  RunOutcome out = run(kPlan);
  ASSERT_EQ(out.status, RunStatus::AwaitingApproval);
  ASSERT_TRUE(approve_step(*store_, out.run_id, "high", 1));
  // The plan is replaced: the high step now does something else. The approval
  // given for "deploying prod" does not carry over to it.
  std::string changed = kPlan;
  changed.replace(changed.find("target: prod"), 12, "target: all-regions");
  fs::path replan = dir_ / "plan2.yaml";
  orch::testing::write_file(replan, changed);
  Engine engine(*store_, EngineOptions{});
  auto second = engine.resume(out.run_id, replan.string());
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->status, RunStatus::AwaitingApproval);
  EXPECT_FALSE(fs::exists(ws() / "high.txt"));
  auto requests = events(out.run_id, "approval_requested");
  EXPECT_NE(requests.back().data_json.find("all-regions"), std::string::npos) << requests.back().data_json;
}

// A registry tool's command comes from the registry, not the plan: an approval
// given for one command does not cover another the registry now names, though
// the step itself did not change.
TEST_P(RiskGuard, AnApprovalIsVoidedWhenTheRegistryChangesTheToolsCommand) {
  auto executors_with = [&](const std::string& argv) {
    auto registry = parse_tool_registry(fmt::format(R"(tools:
  deploy:
    command: {}
    status: prod_ready
    safe_for_agents: true
    risk: high
    output_schema: {{}}
    commands: {{go: {{}}}}
)",
                                                    argv),
                                        "registry.yml");
    EXPECT_TRUE(registry) << registry.error().message;
    auto executors = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
    executors->add("tool:",
                   std::make_shared<ToolExecutor>(std::make_shared<ToolRegistry>(std::move(*registry))));
    return executors;
  };
  const std::string plan = "steps:\n  - {id: ship, executor: \"tool:deploy\", inputs: {command: go}}\n";
  EngineOptions first;
  first.executors = executors_with(R"([sh, -c, 'echo x > shipped.txt; echo "{}"'])");
  RunOutcome out = run(plan, first);
  ASSERT_EQ(out.status, RunStatus::AwaitingApproval) << out.reason;
  ASSERT_TRUE(approve_step(*store_, out.run_id, "ship", 1));

  EngineOptions second;
  second.executors = executors_with(R"([sh, -c, 'echo x > everywhere.txt; echo "{}"'])");
  auto resumed = resume(out.run_id, second);
  EXPECT_EQ(resumed.status, RunStatus::AwaitingApproval) << resumed.reason;
  EXPECT_FALSE(fs::exists(ws() / "everywhere.txt"));
  auto requests = events(out.run_id, "approval_requested");
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests.back().data_json.find("everywhere.txt"), std::string::npos) << requests.back().data_json;

  // Approved again, for the command it now shows, it runs.
  ASSERT_TRUE(approve_step(*store_, out.run_id, "ship", 1));
  auto last = resume(out.run_id, second);
  EXPECT_EQ(last.status, RunStatus::Succeeded) << last.reason;
  EXPECT_TRUE(fs::exists(ws() / "everywhere.txt"));
}

INSTANTIATE_TEST_SUITE_P(Backends, RiskGuard, ::testing::ValuesIn(orch::testing::kEngineBackends),
                         orch::testing::engine_backend_name);

}  // namespace
}  // namespace orch
