// The planner against tests/fake_llm (a real HTTP server on loopback): which
// path a request takes, that the model is called only when it must be, and that
// a model's plan is validated, repaired once, or replaced by the fallback.
#include "flows/planner.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "exec/llm_executor.h"
#include "exec/tool_executor.h"
#include "orch/placeholder.h"
#include "testing/fake_llm.h"
#include "testing/testing.h"

namespace orch::flows {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using orch::testing::FakeLlmServer;
using orch::testing::TempDir;
using orch::testing::write_file;

constexpr const char* kKeyVar = "ORCH_TEST_PLANNER_API_KEY";

class PlannerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<FakeLlmServer>("sk-planner-abcdef123456"); }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(server_->started());
    setenv(kKeyVar, server_->api_key().c_str(), 1);
    fs::create_directories(dir_ / "ws");
    auto s = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
    auto catalog = parse_llm_catalog(fmt::format(R"(
providers:
  fake: {{api: openai, base_url: "{0}/v1", api_key_env: {1}, timeout: 10s}}
models:
  planner: {{provider: fake, model: plan-test, max_tokens: 512}}
default_model: planner
)",
                                                 server_->url(), kKeyVar),
                                     "models.yaml");
    ASSERT_TRUE(catalog) << catalog.error().message;
    auto registry = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
    auto llm = std::make_shared<LlmExecutor>(std::make_shared<LlmCatalog>(*catalog));
    registry->add("llm", llm);
    registry->add("llm:", llm);
    options_.store = [this]() -> Expected<Store*> { return store_.get(); };
    options_.executors = registry;
    options_.workspace = dir_ / "ws";
    options_.templates = &templates_;
  }
  void TearDown() override { unsetenv(kKeyVar); }

  // The chat requests the fake received since reset_requests(), in order.
  static void reset_requests() { server_->reset_requests(); }
  static json chat_requests() { return server_->requests(); }
  // The planner calls a model only through engine runs: no run, no call.
  bool no_planning_run() {
    auto runs = store_->list_runs();
    return runs && runs->empty();
  }
  static std::string user_message(const json& request) { return request["messages"].back()["content"]; }
  static std::string system_message(const json& request) { return request["messages"].front()["content"]; }

  PlannedRequest plan(const std::string& request) {
    auto out = plan_request(request, options_);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? std::move(*out) : PlannedRequest{};
  }

  static std::unique_ptr<FakeLlmServer> server_;
  TempDir dir_;
  std::unique_ptr<Store> store_;
  TemplateLibrary templates_ = TemplateLibrary::shipped();
  PlannerOptions options_;
};
std::unique_ptr<FakeLlmServer> PlannerTest::server_;

// A job with no template; the model's reply is a valid plan (a JSON one here).
constexpr const char* kJob = "For each module, lint it, document it and benchmark it";
constexpr const char* kValidJson =
    R"({"name": "modules", "steps": [{"id": "lint", "executor": "builtin:echo", "inputs": {"text": "linted"}}, )"
    R"({"id": "docs", "deps": ["lint"], "executor": "builtin:echo", "inputs": {"text": "${steps.lint.result}"}}]})";

TEST_F(PlannerTest, NotAJobIsOneStepAndCallsNoModel) {
  const std::string request = "Fix the flaky test in parser_test.cc (it says \"${HOME}\" somewhere)";
  PlannedRequest p = plan(request);
  EXPECT_EQ(p.path, PlanPath::SingleStep);
  EXPECT_EQ(p.trigger.signal, JobSignal::None);
  ASSERT_EQ(p.plan.steps.size(), 1u);
  EXPECT_EQ(p.plan.steps[0].executor, "llm");
  // The request is the prompt, as text: its "${HOME}" is escaped, not a placeholder.
  EXPECT_EQ(p.plan.steps[0].inputs["prompt"], escape_placeholders(request));
  EXPECT_NE(p.summary().find("single_step: no job signal"), std::string::npos) << p.summary();
  EXPECT_TRUE(no_planning_run()) << "the model was called";
}

TEST_F(PlannerTest, TheSingleStepExecutorCanBeChosen) {
  options_.single_step_executor = "shell";
  PlannedRequest p = plan("ls -la");
  ASSERT_EQ(p.plan.steps.size(), 1u);
  EXPECT_EQ(p.plan.steps[0].executor, "shell");
  EXPECT_EQ(p.plan.steps[0].sh, "ls -la");
  options_.single_step_executor = "tool:nope";
  auto bad = plan_request("ls -la", options_);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown executor 'tool:nope'"), std::string::npos) << bad.error().message;
}

TEST_F(PlannerTest, AMatchingTemplateIsUsedAndNoModelIsCalled) {
  reset_requests();
  PlannedRequest p = plan("Fix the failing tests, then run the linter and commit");
  EXPECT_EQ(p.path, PlanPath::Template);
  EXPECT_EQ(p.template_name, "fix-failing-tests");
  EXPECT_EQ(p.trigger.signal, JobSignal::CompoundVerbs);
  ASSERT_EQ(p.plan.steps.size(), 4u);
  EXPECT_NE(p.plan.steps[1].inputs["prompt"].get<std::string>().find("Fix the failing tests, then run the linter"),
            std::string::npos);
  EXPECT_NE(p.why.find("template 'fix-failing-tests' matched"), std::string::npos) << p.why;
  EXPECT_TRUE(no_planning_run()) << "the model was called";
  EXPECT_TRUE(chat_requests().empty()) << "the model was called";
}

TEST_F(PlannerTest, ResearchAndCompareIsATemplateJob) {
  reset_requests();
  PlannedRequest p = plan("research these five HTTP libraries and write me a comparison");
  EXPECT_EQ(p.path, PlanPath::Template) << p.why;
  EXPECT_EQ(p.template_name, "research-and-compare");
  EXPECT_EQ(p.trigger.signal, JobSignal::CountedItems);
  ASSERT_EQ(p.plan.steps.size(), 4u);
  EXPECT_TRUE(no_planning_run()) << "the model was called";
}

TEST_F(PlannerTest, ATemplateGivingAnInvalidPlanIsReportedWithItsFile) {
  TempDir user;
  write_file(user / "fix-failing-tests.yaml", R"(x-template:
  match: {phrases: [failing tests], keywords: [fix]}
steps:
  - id: a
    executor: builtin:echo
    inputs: {text: "{{request}}"}
  - id: b
    deps: [c]
    executor: builtin:echo
    inputs: {text: b}
)");
  auto lib = TemplateLibrary::load(user.path());
  ASSERT_TRUE(lib) << lib.error().message;
  options_.templates = &*lib;
  auto out = plan_request("Fix the failing tests, then run the linter and commit", options_);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, ErrorCode::InvalidInput);
  const std::string file = (user / "fix-failing-tests.yaml").string();
  EXPECT_NE(out.error().message.find(file + ":8: step 'b': "), std::string::npos) << out.error().message;
  EXPECT_NE(out.error().message.find("'c'"), std::string::npos) << out.error().message;
  EXPECT_TRUE(no_planning_run());
}

TEST_F(PlannerTest, AValidModelPlanIsUsedAfterOneCall) {
  reset_requests();
  PlannedRequest p = plan(fmt::format("{} [[json: {}]]", kJob, kValidJson));
  EXPECT_EQ(p.path, PlanPath::Model) << p.why;
  EXPECT_EQ(p.trigger.signal, JobSignal::JobPhrase);
  ASSERT_EQ(p.plan.steps.size(), 2u);
  EXPECT_EQ(p.plan.steps[1].deps, (std::vector<std::string>{"lint"}));
  EXPECT_EQ(p.planning_runs.size(), 1u);
  json requests = chat_requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_NE(user_message(requests[0]).find(kJob), std::string::npos);
  // The prompt carries the plan JSON Schema.
  EXPECT_NE(system_message(requests[0]).find("\"$schema\""), std::string::npos);
  EXPECT_NE(system_message(requests[0]).find("\"on_failure\""), std::string::npos);
  // The planning call is a run in the store, with its tokens.
  auto row = store_->find_run(p.planning_runs[0]);
  ASSERT_TRUE(row && *row);
  EXPECT_GT((*row)->spent_tokens, 0);
}

TEST_F(PlannerTest, AFencedYamlReplyIsRead) {
  PlannedRequest p = plan(std::string(kJob) +
                          " [[reply: Here it is:\n```yaml\nsteps:\n  - {id: one, executor: builtin:echo, "
                          "inputs: {text: x}}\n```\nDone.]]");
  EXPECT_EQ(p.path, PlanPath::Model) << p.why;
  ASSERT_EQ(p.plan.steps.size(), 1u);
  EXPECT_EQ(p.plan.steps[0].id, "one");
  EXPECT_EQ(p.text.find("```"), std::string::npos) << p.text;
}

// The first reply has an unknown key; the validator's problem goes back to the
// model in the repair call, whose reply (scripted inside that key) is valid.
TEST_F(PlannerTest, AnInvalidModelPlanIsRepairedOnceWithTheValidationErrors) {
  reset_requests();
  const std::string invalid =
      R"({"steps": [{"id": "a", "executor": "builtin:echo", "inputs": {"text": "hi"}, )"
      R"("bogus": "[[reply: {steps: [{id: fixed, executor: builtin:echo, inputs: {text: ok} } ] }]]"}]})";
  PlannedRequest p = plan(fmt::format("{} [[json: {}]]", kJob, invalid));
  EXPECT_EQ(p.path, PlanPath::ModelRepaired) << p.why;
  ASSERT_EQ(p.plan.steps.size(), 1u);
  EXPECT_EQ(p.plan.steps[0].id, "fixed");
  EXPECT_EQ(p.planning_runs.size(), 2u);
  ASSERT_EQ(p.model_problems.size(), 1u);
  EXPECT_EQ(p.model_problems[0].to_string(), "planner-reply.yaml:1: step 'a': unknown key 'bogus'");
  json requests = chat_requests();
  ASSERT_EQ(requests.size(), 2u);
  const std::string repair = user_message(requests[1]);
  EXPECT_NE(repair.find("- planner-reply.yaml:1: step 'a': unknown key 'bogus'"), std::string::npos) << repair;
  EXPECT_NE(system_message(requests[1]).find(kJob), std::string::npos) << "the repair call lost the request";
  EXPECT_NE(p.why.find("repaired plan is valid"), std::string::npos) << p.why;
}

TEST_F(PlannerTest, ARepairThatIsStillInvalidFallsBackToOneStep) {
  reset_requests();
  const std::string invalid =
      R"({"steps": [{"id": "a", "executor": "builtin:echo", "inputs": {"text": "hi"}, )"
      R"("bogus": "[[reply: {steps: [{id: b, deps: [nowhere], executor: builtin:echo, inputs: {text: ok} } ] }]]"}]})";
  const std::string request = fmt::format("{} [[json: {}]]", kJob, invalid);
  PlannedRequest p = plan(request);
  EXPECT_EQ(p.path, PlanPath::Fallback) << p.why;
  ASSERT_EQ(p.plan.steps.size(), 1u);
  EXPECT_EQ(p.plan.steps[0].executor, "llm");
  EXPECT_EQ(p.planning_runs.size(), 2u);
  EXPECT_EQ(chat_requests().size(), 2u) << "exactly one repair call";
  EXPECT_NE(p.why.find("still invalid after one repair"), std::string::npos) << p.why;
  EXPECT_NE(p.why.find("nowhere"), std::string::npos) << p.why;
}

TEST_F(PlannerTest, AFailedPlanningCallFallsBackToOneStep) {
  PlannedRequest p = plan(std::string(kJob) + " [[status: 400]]");
  EXPECT_EQ(p.path, PlanPath::Fallback) << p.why;
  EXPECT_NE(p.why.find("the planning call failed"), std::string::npos) << p.why;
  EXPECT_EQ(p.plan.steps.size(), 1u);
}

// "#E1" in a request is text, escaped as "##E1" (as "${" is as "$${"): the step
// gets the request as it was written, never step 1's result.
TEST_F(PlannerTest, AStepReferenceInTheRequestIsText) {
  const std::string request = "summarize #E1 and ${x} for me";
  auto out = plan_request(request, options_);
  ASSERT_TRUE(out) << out.error().message;
  ASSERT_EQ(out->plan.steps.size(), 1u);
  const std::string prompt = out->plan.steps[0].inputs["prompt"].get<std::string>();
  EXPECT_EQ(prompt, "summarize ##E1 and $${x} for me");
  auto tmpl = parse_template(prompt);
  ASSERT_TRUE(tmpl) << tmpl.error().message;
  EXPECT_FALSE(tmpl->has_placeholders());
  EXPECT_EQ(render(*tmpl, RenderContext{}).value(), request);
  // A job that would go to the model is refused instead: the model could copy
  // "#E1" into its plan, where it would be a step reference.
  auto job = plan_request(std::string(kJob) + " and color it #E0E0E0", options_);
  ASSERT_FALSE(job);
  EXPECT_NE(job.error().message.find("'#E0'"), std::string::npos) << job.error().message;
}

// CLI-first: the model is offered only the tools select_tool would choose, and a
// plan that uses another one goes back for repair with the reason.
TEST_F(PlannerTest, TheModelIsOfferedOnlyToolsThatCliFirstSelectionAllows) {
  auto tools = parse_tool_registry(R"(tools:
  stats:
    description: count lines
    command: [wc, -l]
    status: prod_ready
    safe_for_agents: true
    risk: low
    commands:
      run: {output_schema: {}}
  wip:
    description: count bytes
    command: [wc, -c]
    status: in_progress
    safe_for_agents: true
    risk: low
    commands:
      run: {output_schema: {}}
)",
                                   "registry.yml");
  ASSERT_TRUE(tools) << tools.error().message;
  options_.executors->add("tool:", std::make_shared<ToolExecutor>(std::make_shared<ToolRegistry>(*tools)));
  reset_requests();
  const std::string uses_wip =
      R"({"steps": [{"id": "a", "executor": "tool:wip", "inputs": {"command": "run"}, )"
      R"("goal": "[[reply: {steps: [{id: b, executor: 'tool:stats', inputs: {command: run} } ] }]]"}]})";
  PlannedRequest p = plan(fmt::format("{} [[json: {}]]", kJob, uses_wip));
  EXPECT_EQ(p.path, PlanPath::ModelRepaired) << p.why;
  ASSERT_EQ(p.plan.steps.size(), 1u);
  EXPECT_EQ(p.plan.steps[0].executor, "tool:stats");
  ASSERT_EQ(p.model_problems.size(), 1u);
  EXPECT_NE(p.model_problems[0].message.find("tool 'wip' may not be chosen by the planner"), std::string::npos)
      << p.model_problems[0].message;
  EXPECT_NE(p.model_problems[0].message.find("in_progress"), std::string::npos) << p.model_problems[0].message;
  json requests = chat_requests();
  ASSERT_EQ(requests.size(), 2u);
  const std::string system = system_message(requests[0]);
  EXPECT_NE(system.find("tool:stats with inputs.command = \"run\" — count lines"), std::string::npos) << system;
  EXPECT_EQ(system.find("tool:wip"), std::string::npos) << system;
}

}  // namespace
}  // namespace orch::flows
