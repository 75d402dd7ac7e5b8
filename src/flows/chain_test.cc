// Chains through the engine, with real processes: registry tools (shell scripts)
// and a scripted agent CLI (tests/agents/fake_agent.py). Every report is checked
// against schemas/skill-output.schema.json.
#include "flows/chain.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "exec/llm_executor.h"
#include "exec/tool_executor.h"
#include "exec/worker_executor.h"
#include "orch/plan_loader.h"
#include "testing/fake_llm.h"
#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch::flows {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using orch::testing::read_file;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;

class ChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(ws());
    fs::create_directories(dir_ / "tools");
    auto s = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
    // tests/data/chain-tools (see its registry.yml) and the example filestats.
    fs::copy(source_dir() / "tests" / "data" / "chain-tools", dir_ / "tools", fs::copy_options::recursive);
    fs::copy_file(source_dir() / "examples" / "tools" / "filestats.sh", dir_ / "tools" / "filestats.sh");
    auto tools = load_tool_registry(dir_ / "tools" / "registry.yml");
    ASSERT_TRUE(tools) << tools.error().message;
    std::string agent = (source_dir() / "tests" / "agents" / "fake_agent.py").string();
    auto workers = parse_worker_catalog(
        fmt::format("workers:\n  agent:\n    argv: [python3, '{}', text, '{{prompt}}', '{{workspace}}']\n"
                    "  counted:\n    argv: [python3, '{}', json, '{{prompt}}']\n    output: json\n    "
                    "result: result\n"
                    "    usage: {{tokens_in: usage.input_tokens, tokens_out: usage.output_tokens, cost_usd: "
                    "total_cost_usd}}\n",
                    agent, agent),
        "workers.yaml");
    ASSERT_TRUE(workers) << workers.error().message;
    executors_ = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
    executors_->add("tool:", std::make_shared<ToolExecutor>(std::make_shared<ToolRegistry>(*tools)));
    executors_->add("worker:", std::make_shared<WorkerExecutor>(std::make_shared<WorkerCatalog>(*workers)));
    auto schema = JsonSchema::load_file((source_dir() / "schemas" / "skill-output.schema.json").string());
    ASSERT_TRUE(schema) << schema.error().message;
    schema_ = std::make_unique<JsonSchema>(*schema);
  }

  fs::path ws() const { return dir_ / "ws"; }

  ChainExpected<Chain> build(const std::string& steps_json, int max_steps = kDefaultChainMaxSteps) {
    ChainInput in;
    in.steps = ojson::parse(steps_json);
    ChainOptions options;
    options.executors = executors_;
    options.workspace = ws();
    options.max_steps = max_steps;
    return build_chain(in, options);
  }

  // Builds and runs the chain; returns its report (checked against the schema).
  ojson run(const std::string& steps_json, RunOutcome* outcome = nullptr, EngineOptions options = {}) {
    auto chain = build(steps_json);
    EXPECT_TRUE(chain) << (chain ? ""
                                 : chain.error().message + "\n" +
                                       fmt::format("{}", fmt::join(chain.error().problems, "\n")));
    if (!chain) return ojson();
    options.workspace = ws();
    options.executors = executors_;
    auto out = run_chain(*store_, *chain, options);
    EXPECT_TRUE(out) << out.error().message;
    if (!out) return ojson();
    if (outcome) *outcome = *out;
    return report(out->run_id);
  }

  ojson report(const std::string& run_id) {
    auto r = build_chain_report(*store_, run_id, *executors_);
    EXPECT_TRUE(r) << r.error().message;
    if (!r) return ojson();
    expect_valid(*r);
    return *r;
  }

  void expect_valid(const ojson& report) {
    auto violations = schema_->validate(nlohmann::json::parse(report.dump()));
    EXPECT_TRUE(violations.empty()) << fmt::format("{}", fmt::join(violations, "\n")) << "\n"
                                    << report.dump(2);
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  std::shared_ptr<ExecutorRegistry> executors_;
  std::unique_ptr<JsonSchema> schema_;
};

// `$$` before `{` is one literal `$` in a chain too, so a `$` can come right
// before `${previous...}`, and `$${previous.result}` stays text.
TEST_F(ChainTest, ADollarRightBeforeAPreviousPlaceholder) {
  write_file(ws() / "notes.txt", "one\ntwo\nthree\n");
  RunOutcome out;
  ojson r = run(R"([
    {"id": "stats", "executor": "tool:filestats", "inputs": {"command": "count", "files": ["notes.txt"]}},
    {"id": "wrap", "executor": "tool:wrap", "inputs": {"command": "run"}},
    {"id": "say", "executor": "tool:say",
     "inputs": {"command": "run", "text": "$$${previous.json.got.lines} $${previous.result}"}}
  ])",
                &out);
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  ASSERT_EQ(r["execution_chain"].size(), 3u);
  EXPECT_EQ(r["execution_chain"][2]["result"]["said"], "$3 ${previous.result}");
}

TEST_F(ChainTest, ThreeToolStepsPassTheirOutputAlong) {
  write_file(ws() / "notes.txt", "one\ntwo\nthree\n");
  RunOutcome out;
  ojson r = run(R"([
    {"id": "stats", "executor": "tool:filestats", "inputs": {"command": "count", "files": ["notes.txt"]}},
    {"id": "wrap", "executor": "tool:wrap", "inputs": {"command": "run"}},
    {"id": "say", "executor": "tool:say", "inputs": {"command": "run", "text": "lines=${previous.json.got.lines}"}}
  ])",
                &out);
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(out.exit_code(), 0);
  EXPECT_EQ(r["status"], "success");
  EXPECT_TRUE(r["error"].is_null());
  ASSERT_EQ(r["execution_chain"].size(), 3u);
  // Step 2 got step 1's JSON through ORCH_CHAIN_PREVIOUS; step 3 a value inside step 2's.
  EXPECT_EQ(r["execution_chain"][0]["result"]["lines"], 3);
  EXPECT_EQ(r["execution_chain"][1]["result"]["got"]["lines"], 3);
  EXPECT_EQ(r["execution_chain"][2]["result"]["said"], "lines=3");
  EXPECT_EQ(r["output"]["data"]["said"], "lines=3");
  for (const auto& s : r["execution_chain"]) {
    EXPECT_EQ(s["status"], "success");
    EXPECT_EQ(s["risk"], "low");
    EXPECT_EQ(s["attempts"], 1);
  }
  EXPECT_EQ(r["execution_chain"][2]["step"], 3);
  EXPECT_EQ(r["run_id"], out.run_id);
  // The run is an ordinary plan run: linear deps, abort on failure.
  auto plan = store_->latest_plan(out.run_id);
  ASSERT_TRUE(plan);
  auto doc = ojson::parse(plan->text);
  EXPECT_EQ(doc["on_failure"], "abort");
  EXPECT_EQ(doc["steps"][1]["deps"], ojson::array({"stats"}));
  EXPECT_EQ(doc["steps"][2]["deps"], ojson::array({"wrap"}));
  EXPECT_EQ(doc["steps"][2]["inputs"]["text"], "lines=${steps.wrap.json.got.lines}");
  EXPECT_FALSE(doc["steps"][2].contains("env")) << "an explicit reference replaces the implicit channel";
}

TEST_F(ChainTest, AFailureAbortsTheChainAndSkipsTheRest) {
  write_file(ws() / "notes.txt", "one\n");
  RunOutcome out;
  ojson r = run(R"([
    {"executor": "tool:filestats", "inputs": {"command": "count", "files": ["notes.txt"]}},
    {"executor": "tool:fail", "inputs": {"command": "run"}},
    {"executor": "tool:wrap", "inputs": {"command": "run"}}
  ])",
                &out);
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(out.exit_code(), 1);
  EXPECT_EQ(r["status"], "partial");
  ASSERT_TRUE(r["error"].is_object());
  EXPECT_EQ(r["error"]["code"], "CHAIN_ABORTED_STEP_2");
  EXPECT_EQ(r["error"]["step"], 2);
  EXPECT_EQ(r["error"]["recoverable"], false);
  EXPECT_HAS(r["error"]["message"].get<std::string>(), "step 2/3 'step2' (tool:fail) failed");
  EXPECT_EQ(r["execution_chain"][0]["status"], "success");
  EXPECT_EQ(r["execution_chain"][1]["status"], "error");
  EXPECT_EQ(r["execution_chain"][2]["status"], "skipped");
  EXPECT_EQ(r["execution_chain"][2]["attempts"], 0);
  EXPECT_EQ(r["output"]["data"]["lines"], 1) << "the partial report keeps what was done";
  EXPECT_EQ(chain_exit_code(r), 1);
  // Step 3 never ran: no attempt in the ledger.
  auto attempts = store_->attempts(out.run_id, "step3");
  ASSERT_TRUE(attempts);
  EXPECT_TRUE(attempts->empty());
}

TEST_F(ChainTest, AFirstStepThatFailsIsAnErrorNotPartial) {
  RunOutcome out;
  ojson r = run(R"([{"executor": "tool:fail", "inputs": {"command": "run"}},
                    {"executor": "tool:wrap", "inputs": {"command": "run"}}])",
                &out);
  EXPECT_EQ(r["status"], "error");
  EXPECT_EQ(r["error"]["code"], "CHAIN_ABORTED_STEP_1");
  EXPECT_TRUE(r["output"]["data"].is_null());
  EXPECT_EQ(r["execution_chain"][1]["status"], "skipped");
}

TEST_F(ChainTest, ATimedOutStepIsRecoverable) {
  ojson r = run(R"([{"executor": "tool:slow", "timeout": "200ms", "inputs": {"command": "run"}}])");
  EXPECT_EQ(r["error"]["code"], "CHAIN_ABORTED_STEP_1");
  EXPECT_EQ(r["error"]["recoverable"], true);
}

TEST_F(ChainTest, ALongerChainIsRefusedNeverTruncated) {
  std::string six = "[";
  for (int i = 0; i < 6; ++i)
    six += std::string(i ? "," : "") + R"({"executor": "tool:wrap", "inputs": {"command": "run"}})";
  six += "]";
  auto refused = build(six);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "chain_limit_exceeded");
  EXPECT_HAS(refused.error().message, "6 steps, more than the limit of 5");
  // Refused even when a step is also invalid: the limit is checked first.
  auto invalid_too = build(six.substr(0, six.size() - 1) + R"(, {"executor": 7}])");
  ASSERT_FALSE(invalid_too);
  EXPECT_EQ(invalid_too.error().code, "chain_limit_exceeded");
  auto raised = build(six, 6);
  ASSERT_TRUE(raised) << raised.error().message;
  EXPECT_EQ(raised->plan.steps.size(), 6u);
  ojson report = chain_error_report(refused.error().code, refused.error().message, 5);
  expect_valid(report);
  EXPECT_EQ(chain_exit_code(report), 2);
}

TEST_F(ChainTest, BadStepsAreAllReportedWithTheirPosition) {
  auto r = build(R"([
    {"executor": "tool:wrap", "inputs": {"command": "run", "x": "${previous.result}"}},
    "tool:wrap",
    {"inputs": {}},
    {"executor": "tool:wrap", "deps": ["step1"], "input": {}},
    {"executor": "tool:wrapp", "inputs": {"command": "run", "y": "${previous.reslt}"}}
  ])");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "invalid_chain");
  std::string all = fmt::format("{}", fmt::join(r.error().problems, "\n"));
  EXPECT_HAS(all, "step 1: inputs.x: '${previous.result}' in the first step: it has no previous step");
  EXPECT_HAS(all, "step 2: a step is an object");
  EXPECT_HAS(all, "step 3: 'executor' is required");
  EXPECT_HAS(all, "step 4: 'deps' is not a chain key");
  EXPECT_HAS(all, "step 4: unknown key 'input' (did you mean 'inputs'?)");
  EXPECT_HAS(all, "step 5: inputs.y: unknown placeholder '${previous.reslt}'");

  // Problems found by the plan validator name the step too.
  auto v = build(R"([{"executor": "tool:wrap", "inputs": {"command": "run"}},
                     {"executor": "tool:wrapp", "inputs": {"command": "run"}}])");
  ASSERT_FALSE(v);
  std::string vall = fmt::format("{}", fmt::join(v.error().problems, "\n"));
  EXPECT_HAS(vall, "step 2 ('step2'): ");
  EXPECT_HAS(vall, "wrapp");
  EXPECT_HAS(v.error().message, "1 problem in the chain; nothing was run");
}

TEST_F(ChainTest, AWorkerIsGivenThePreviousResultInItsPrompt) {
  write_file(ws() / "notes.txt", "a b\n");
  ojson r = run(R"([
    {"executor": "tool:filestats", "inputs": {"command": "count", "files": ["notes.txt"]}},
    {"executor": "worker:agent", "goal": "summarise the counts"}
  ])");
  EXPECT_EQ(r["status"], "success") << r.dump(2);
  std::string prompt = read_file(ws() / "prompt-1.txt");
  EXPECT_HAS(prompt, "summarise the counts");
  EXPECT_HAS(prompt, "### previous");
  EXPECT_HAS(prompt, R"("words":2)");
  EXPECT_EQ(r["execution_chain"][1]["result"], "done: summarise the counts");
}

TEST_F(ChainTest, TokensAreThoseTheWorkersReported) {
  ojson r = run(
      R"([{"executor": "worker:counted", "goal": "one"}, {"executor": "worker:counted", "goal": "two"}])");
  EXPECT_EQ(r["status"], "success") << r.dump(2);
  // fake_agent.py json reports 120 in, 30 out per call.
  EXPECT_EQ(r["tokens_used"]["input"], 240);
  EXPECT_EQ(r["tokens_used"]["output"], 60);
  EXPECT_EQ(r["tokens_used"]["total"], 300);
  EXPECT_EQ(r["execution_chain"][1]["tokens"]["total"], 150);
  EXPECT_NEAR(r["cost_usd"].get<double>(), 0.0084, 1e-9);
}

TEST_F(ChainTest, TheChainsBudgetStopsItWithItsOwnCode) {
  ChainInput in;
  in.steps = ojson::parse(R"([{"executor": "worker:counted", "goal": "one"},
                              {"executor": "worker:counted", "goal": "two"},
                              {"executor": "worker:counted", "goal": "three"}])");
  ChainOptions options;
  options.executors = executors_;
  options.workspace = ws();
  options.budget_tokens = 200;  // each call reports 150
  auto chain = build_chain(in, options);
  ASSERT_TRUE(chain) << chain.error().message;
  EngineOptions engine;
  engine.workspace = ws();
  engine.executors = executors_;
  auto out = run_chain(*store_, *chain, engine);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->status, RunStatus::BudgetExhausted) << out->reason;
  ojson r = report(out->run_id);
  EXPECT_EQ(r["status"], "partial");
  EXPECT_EQ(r["error"]["code"], "CHAIN_BUDGET_EXHAUSTED_STEP_3");
  EXPECT_EQ(r["error"]["recoverable"], false);
  EXPECT_EQ(r["execution_chain"][1]["status"], "success");
  EXPECT_EQ(r["execution_chain"][2]["status"], "skipped");
  EXPECT_EQ(r["execution_chain"][2]["attempts"], 0);
  EXPECT_EQ(r["tokens_used"]["total"], 300);
  EXPECT_EQ(chain_exit_code(r), 4);
}

TEST_F(ChainTest, ARiskyStepPausesTheChainUntilApprovedThenResumeFinishesIt) {
  RunOutcome out;
  ojson r = run(R"([
    {"executor": "tool:say", "inputs": {"command": "run", "text": "hello"}},
    {"id": "push", "executor": "tool:pusher", "inputs": {"command": "run", "text": "${previous.json.said}"}},
    {"executor": "tool:wrap", "inputs": {"command": "run"}}
  ])",
                &out);
  EXPECT_EQ(out.status, RunStatus::AwaitingApproval);
  EXPECT_EQ(out.exit_code(), 3);
  EXPECT_EQ(r["status"], "awaiting_approval");
  EXPECT_EQ(r["error"]["code"], "CHAIN_PAUSED_STEP_2");
  EXPECT_EQ(r["error"]["recoverable"], true);
  EXPECT_EQ(r["execution_chain"][1]["risk"], "high");
  EXPECT_EQ(r["execution_chain"][1]["status"], "awaiting_approval");
  EXPECT_EQ(r["execution_chain"][2]["status"], "pending");
  EXPECT_HAS(r["error"]["message"].get<std::string>(), "orch approve " + out.run_id + " push");
  EXPECT_EQ(chain_exit_code(r), 3);

  ASSERT_TRUE(approve_step(*store_, out.run_id, "push", 1));
  EngineOptions options;
  options.workspace = ws();
  options.executors = executors_;
  Engine engine(*store_, options);
  auto resumed = engine.resume(out.run_id, std::nullopt);
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(resumed->status, RunStatus::Succeeded) << resumed->reason;
  ojson after = report(out.run_id);
  EXPECT_EQ(after["status"], "success");
  EXPECT_EQ(after["output"]["data"]["got"]["said"], "hello");
}

TEST_F(ChainTest, ACriticalToolIsRefusedAndAbortsTheChain) {
  ojson r = run(R"([{"executor": "tool:say", "inputs": {"command": "run", "text": "x"}},
                    {"executor": "tool:broken", "inputs": {"command": "run"}}])");
  EXPECT_EQ(r["status"], "partial");
  EXPECT_EQ(r["error"]["code"], "CHAIN_ABORTED_STEP_2");
  EXPECT_EQ(r["error"]["recoverable"], false);
  EXPECT_EQ(r["execution_chain"][1]["risk"], "critical");
  EXPECT_HAS(r["execution_chain"][1]["reason"].get<std::string>(), "refused by the risk guard");
}

TEST_F(ChainTest, DryRunShowsRisksAndCommandsAndRunsNothing) {
  auto chain = build(R"([
    {"executor": "tool:say", "inputs": {"command": "run", "text": "hi there"}},
    {"id": "push", "executor": "tool:pusher", "inputs": {"command": "run", "text": "${previous.json.said}"}},
    {"executor": "tool:broken", "inputs": {"command": "run"}}
  ])");
  ASSERT_TRUE(chain) << chain.error().message;
  DryRunOptions dry;
  dry.workspace = ws();
  ojson r = chain_dry_run_report(*chain, *executors_, dry);
  expect_valid(r);
  EXPECT_EQ(r["status"], "dry_run");
  EXPECT_TRUE(r["run_id"].is_null());
  EXPECT_EQ(chain_exit_code(r), 0);
  const auto& c = r["execution_chain"];
  EXPECT_EQ(c[0]["risk"], "low");
  EXPECT_EQ(c[0]["guard"], "runs");
  EXPECT_HAS(c[0]["command"].get<std::string>(), (dir_ / "tools" / "say.sh").string() + " 'hi there'");
  EXPECT_EQ(c[1]["risk"], "high");
  EXPECT_EQ(c[1]["guard"], "needs_approval");
  EXPECT_HAS(c[1]["command"].get<std::string>(), "${steps.step1.json.said}");
  EXPECT_EQ(c[2]["risk"], "critical");
  EXPECT_EQ(c[2]["guard"], "refused");
  for (const auto& s : c) EXPECT_EQ(s["status"], "planned");
  dry.approve_steps = {"push"};
  EXPECT_EQ(chain_dry_run_report(*chain, *executors_, dry)["execution_chain"][1]["guard"], "approved");
  auto runs = store_->list_runs();
  ASSERT_TRUE(runs);
  EXPECT_TRUE(runs->empty());
}

TEST_F(ChainTest, AReportOfARunThatIsNotAChainIsAnError) {
  auto chain = build(R"([{"executor": "tool:wrap", "inputs": {"command": "run"}}])");
  ASSERT_TRUE(chain);
  LoadResult plain = parse_plan("steps: [{id: a, executor: builtin:echo, inputs: {text: hi}}]", "p.yaml");
  EngineOptions options;
  options.workspace = ws();
  options.executors = executors_;
  Engine engine(*store_, options);
  auto out = engine.run(plain.plan, "steps: [{id: a, executor: builtin:echo, inputs: {text: hi}}]");
  ASSERT_TRUE(out);
  auto r = build_chain_report(*store_, out->run_id, *executors_);
  ASSERT_FALSE(r);
  EXPECT_HAS(r.error().message, "is not a chain");
}

TEST_F(ChainTest, ChainInputIsInlineJsonOrAJsonOrYamlFile) {
  auto inline_json = read_chain_input(R"(  [{"executor": "tool:wrap"}])");
  ASSERT_TRUE(inline_json);
  EXPECT_TRUE(inline_json->source.empty());
  write_file(dir_ / "c.yaml", "- executor: tool:wrap\n  inputs: {command: run}\n");
  auto yaml = read_chain_input((dir_ / "c.yaml").string());
  ASSERT_TRUE(yaml) << yaml.error().message;
  EXPECT_EQ(yaml->steps[0]["inputs"]["command"], "run");
  auto missing = read_chain_input((dir_ / "nope.json").string());
  ASSERT_FALSE(missing);
  EXPECT_HAS(missing.error().message, "cannot read the file: No such file or directory");
  auto folder = read_chain_input((dir_ / "tools").string());
  ASSERT_FALSE(folder);
  EXPECT_HAS(folder.error().message, "is a folder, not a file");
  auto broken = read_chain_input("[{\"executor\": }]");
  ASSERT_FALSE(broken);
  EXPECT_HAS(broken.error().message, "--steps: not valid JSON");
  auto object = build(R"({"steps": []})");
  ASSERT_FALSE(object);
  EXPECT_HAS(object.error().message, "a chain is a JSON array of steps, got an object");
}

// A provider that keeps answering 503 fails the step transiently: the engine
// records it so (attempt_finished "transient"), and the report says `orch resume`
// may well finish the chain.
TEST_F(ChainTest, AStepThatFailedTransientlyIsRecoverable) {
  orch::testing::FakeLlmServer server;
  ASSERT_TRUE(server.started());
  setenv("ORCH_CHAIN_TEST_KEY", server.api_key().c_str(), 1);
  auto catalog =
      parse_llm_catalog(fmt::format("providers:\n  p: {{api: openai, base_url: \"{}/v1\", api_key_env: "
                                    "ORCH_CHAIN_TEST_KEY}}\nmodels:\n  m: {{provider: p, model: x}}\n"
                                    "default_model: m\n",
                                    server.url()),
                        "models.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  auto llm = std::make_shared<LlmExecutor>(std::make_shared<LlmCatalog>(*catalog));
  executors_->add("llm", llm);
  RunOutcome out;
  ojson r = run(R"([
    {"id": "ask", "executor": "llm", "attempts": 1, "inputs": {"prompt": "[[status: 503]] hello"}}
  ])",
                &out);
  unsetenv("ORCH_CHAIN_TEST_KEY");
  EXPECT_EQ(out.status, RunStatus::Failed) << out.reason;
  EXPECT_EQ(r["error"]["code"], "CHAIN_ABORTED_STEP_1");
  EXPECT_EQ(r["error"]["recoverable"], true) << r.dump(2);
  auto finished = store_->events_of_kind(out.run_id, "attempt_finished");
  ASSERT_TRUE(finished && finished->size() == 1);
  EXPECT_NE((*finished)[0].data_json.find("\"transient\":true"), std::string::npos)
      << (*finished)[0].data_json;
}

}  // namespace
}  // namespace orch::flows
