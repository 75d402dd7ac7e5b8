// The llm executor through the engine, against tests/fake_llm (a real HTTP
// server on loopback speaking the OpenAI and Anthropic protocols).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "exec/llm_executor.h"
#include "orch/clock.h"
#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/fake_llm.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using orch::testing::FakeLlmServer;
using orch::testing::read_file;
using orch::testing::TempDir;

constexpr const char* kKeyVar = "ORCH_TEST_LLM_API_KEY";

class LlmEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<FakeLlmServer>("sk-test-abcdef123456"); }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(server_->started());
    setenv(kKeyVar, server_->api_key().c_str(), 1);
    fs::create_directories(dir_ / "ws");
    auto s = open_sqlite_store(dir_ / "store" / "orch.db");
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
  }
  void TearDown() override { unsetenv(kKeyVar); }

  std::shared_ptr<ExecutorRegistry> registry() {
    auto catalog = parse_llm_catalog(fmt::format(R"(
providers:
  oa: {{api: openai, base_url: "{0}/v1", api_key_env: {1}, concurrency: 4, timeout: 5s}}
  an: {{api: anthropic, base_url: "{0}/v1", api_key_env: {1}}}
  narrow: {{api: openai, base_url: "{0}/v1", api_key_env: {1}, concurrency: 2}}
  hasty: {{api: openai, base_url: "{0}/v1", api_key_env: {1}, timeout: 1s}}
  tiny: {{api: openai, base_url: "{0}/v1", api_key_env: {1}, max_response: 200}}
models:
  fast: {{provider: oa, model: gpt-test, max_tokens: 64, price_in: 1.0, price_out: 2.0}}
  claude: {{provider: an, model: claude-test, max_tokens: 64, price_in: 3.0, price_out: 15.0}}
  capped: {{provider: narrow, model: gpt-test, max_tokens: 64}}
  hasty: {{provider: hasty, model: gpt-test, max_tokens: 64}}
  tiny: {{provider: tiny, model: gpt-test, max_tokens: 64}}
  wide: {{provider: oa, model: gpt-test, max_tokens: 1024}}
default_model: fast
)",
                                                 server_->url(), kKeyVar),
                                     "models.yaml");
    EXPECT_TRUE(catalog) << (catalog ? "" : catalog.error().message);
    auto r = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
    auto llm = std::make_shared<LlmExecutor>(std::make_shared<LlmCatalog>(*catalog));
    r->add("llm", llm);
    r->add("llm:", llm);
    return r;
  }

  RunOutcome run(const std::string& yaml, Clock* clock = nullptr) {
    auto executors = registry();
    LoadResult loaded = parse_plan(yaml, (dir_ / "plan.yaml").string());
    EXPECT_TRUE(loaded.diagnostics.empty()) << loaded.diagnostics.front().to_string();
    Diagnostics problems = validate_plan(
        loaded.plan, validate_options_for(dir_ / "ws", (dir_ / "plan.yaml").string(), *executors));
    for (const auto& d : problems) ADD_FAILURE() << d.to_string();
    EngineOptions options;
    options.workspace = dir_ / "ws";
    options.executors = executors;
    options.clock = clock;
    Engine engine(*store_, options);
    auto out = engine.run(loaded.plan, yaml);
    EXPECT_TRUE(out) << (out ? "" : out.error().message);
    return out ? *out : RunOutcome{};
  }

  StepRecord step(const std::string& run_id, const std::string& id) {
    auto steps = store_->steps(run_id);
    for (const auto& s : *steps)
      if (s.step_id == id) return s;
    ADD_FAILURE() << "no step " << id;
    return {};
  }

  static std::unique_ptr<FakeLlmServer> server_;
  TempDir dir_;
  std::unique_ptr<Store> store_;
};
std::unique_ptr<FakeLlmServer> LlmEngineTest::server_;

TEST_F(LlmEngineTest, OpenAiAndAnthropicCallsGiveResultsTokensAndCost) {
  auto out = run(R"(
steps:
  - id: ask
    executor: llm
    inputs: {system: "be brief", prompt: "[[reply: forty-two]] [[usage: 1000 500]]"}
  - id: claude
    executor: llm:claude
    deps: [ask]
    inputs: {prompt: "[[reply: got ${steps.ask.result}]] [[usage: 2000 100]]"}
)");
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  StepRecord ask = step(out.run_id, "ask");
  EXPECT_EQ(ask.result, "forty-two");
  EXPECT_EQ(ask.tokens_in, 1000);
  EXPECT_EQ(ask.tokens_out, 500);
  EXPECT_DOUBLE_EQ(ask.cost_usd, (1000 * 1.0 + 500 * 2.0) / 1e6);
  StepRecord claude = step(out.run_id, "claude");
  EXPECT_EQ(claude.result, "got forty-two");
  EXPECT_DOUBLE_EQ(claude.cost_usd, (2000 * 3.0 + 100 * 15.0) / 1e6);
  auto run_row = store_->find_run(out.run_id);
  EXPECT_EQ((*run_row)->spent_tokens, 3600);
  // Each attempt names the model it called, as PROVIDER/MODEL (ledger v15).
  auto ask_attempts = store_->attempts(out.run_id, "ask");
  auto claude_attempts = store_->attempts(out.run_id, "claude");
  ASSERT_TRUE(ask_attempts && claude_attempts && !ask_attempts->empty() && !claude_attempts->empty());
  EXPECT_EQ(ask_attempts->back().model, "oa/gpt-test");
  EXPECT_EQ(claude_attempts->back().model, "an/claude-test");
}

TEST_F(LlmEngineTest, AnEmptyCompletionOrMissingUsageFailsTheAttempt) {
  auto out = run(R"(
on_failure: continue
steps:
  - {id: empty, executor: llm, attempts: 1, inputs: {prompt: "[[empty]]"}}
  - {id: no_usage, executor: llm, attempts: 1, inputs: {prompt: "[[reply: hi]] [[no-usage]]"}}
  - {id: fine, executor: llm, attempts: 1, inputs: {prompt: "hi"}}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "empty").status, StepStatus::Failed);
  EXPECT_NE(step(out.run_id, "empty").reason.find("empty completion"), std::string::npos)
      << step(out.run_id, "empty").reason;
  EXPECT_NE(step(out.run_id, "no_usage").reason.find("no usage"), std::string::npos)
      << step(out.run_id, "no_usage").reason;
  EXPECT_EQ(step(out.run_id, "fine").status, StepStatus::Done);
}

// Usage figures are charged as sent, so one that is not a non-negative integer
// fails the attempt like missing usage, and charges nothing: a negative one
// would lower the run's spend and let later steps overshoot the budget.
TEST_F(LlmEngineTest, UsageFiguresThatAreNotNonNegativeIntegersFailTheAttempt) {
  auto out = run(R"(
on_failure: continue
budget: {tokens: 1000}
steps:
  - {id: negative, executor: llm, attempts: 1, inputs: {prompt: "[[reply: hi]] [[usage: -50 -3]]"}}
  - {id: text, executor: "llm:claude", attempts: 1, inputs: {prompt: '[[reply: hi]] [[usage: 7 "5"]]'}}
  - {id: fraction, executor: llm, attempts: 1, inputs: {prompt: "[[reply: hi]] [[usage: 7 2.5]]"}}
  - {id: huge, executor: llm, attempts: 1, inputs: {prompt: "[[reply: hi]] [[usage: 99999999999999999999 3]]"}}
  - {id: fine, executor: llm, attempts: 1, inputs: {prompt: "[[reply: hi]] [[usage: 10 5]]"}}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  for (auto [id, why] :
       {std::pair{"negative", "usage.prompt_tokens = -50, not a non-negative integer"},
        std::pair{"text", "usage.output_tokens = \"5\", not a non-negative integer"},
        std::pair{"fraction", "usage.completion_tokens = 2.5, not a non-negative integer"},
        // Past 2^64 JSON readers give a floating-point number: too large, not "not an integer".
        std::pair{"huge", "usage.prompt_tokens = 1e+20, too large to be a token count"}}) {
    StepRecord s = step(out.run_id, id);
    EXPECT_EQ(s.status, StepStatus::Failed) << id;
    EXPECT_NE(s.reason.find(why), std::string::npos) << s.reason;
    EXPECT_EQ(s.tokens_in, 0) << id;
    EXPECT_EQ(s.tokens_out, 0) << id;
    auto tries = *store_->attempts(out.run_id, id);
    ASSERT_EQ(tries.size(), 1u) << id;
    EXPECT_EQ(tries[0].tokens_in, 0) << id;
    EXPECT_EQ(tries[0].tokens_out, 0) << id;
  }
  EXPECT_EQ(step(out.run_id, "fine").status, StepStatus::Done);
  EXPECT_EQ((*store_->find_run(out.run_id))->spent_tokens, 15)
      << "only the call with sound figures is charged";
}

// A 429 with Retry-After is retried (not "same failure twice"), after the
// provider's delay: on a manual clock, so the test does not sleep it.
TEST_F(LlmEngineTest, RateLimitsAreRetriedAfterRetryAfter) {
  ManualClock clock;
  auto out = run(R"(
steps:
  - id: busy
    executor: llm
    attempts: 4
    inputs: {prompt: "[[fail-times: 2 status: 429 retry-after=30]] [[reply: finally]]"}
)",
                 &clock);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "busy").result, "finally");
  auto tries = store_->attempts(out.run_id, "busy");
  ASSERT_TRUE(tries);
  ASSERT_EQ(tries->size(), 3u);
  EXPECT_NE((*tries)[0].reason.find("HTTP 429"), std::string::npos) << (*tries)[0].reason;
  EXPECT_GE((*tries)[1].started_at - (*tries)[0].finished_at, 30'000) << "Retry-After: 30 was not honoured";
  EXPECT_GE((*tries)[2].started_at - (*tries)[1].finished_at, 30'000);
}

// A Retry-After longer than the back-off's ceiling (a daily quota, a broken
// proxy) is not waited for in silence: the step fails at once, saying what the
// provider asked for. Five minutes is still waited for.
TEST_F(LlmEngineTest, ARetryAfterLongerThanOrchWaitsFailsTheStepSayingSo) {
  ManualClock clock;
  auto out = run(R"(
on_failure: continue
steps:
  - id: quota
    executor: llm
    attempts: 3
    inputs: {prompt: "[[fail-times: 1 status: 429 retry-after=999999]] [[reply: never]]"}
  - id: minutes
    executor: llm
    attempts: 3
    inputs: {prompt: "[[fail-times: 1 status: 429 retry-after=300]] [[reply: waited]]"}
)",
                 &clock);
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto quota = step(out.run_id, "quota");
  EXPECT_EQ(quota.status, StepStatus::Failed);
  EXPECT_NE(quota.reason.find("the provider asked to retry after 277h46m"), std::string::npos) << quota.reason;
  EXPECT_NE(quota.reason.find("longer than orch waits (5m00s)"), std::string::npos) << quota.reason;
  EXPECT_EQ(store_->attempts(out.run_id, "quota")->size(), 1u);
  EXPECT_EQ(step(out.run_id, "minutes").result, "waited");
}

// A completion cut off at max_tokens, withheld by a filter or refused is not an
// answer: each fails its attempt, saying why, instead of passing for one.
TEST_F(LlmEngineTest, ACutOffFilteredOrRefusedCompletionIsNotASuccess) {
  auto out = run(R"(
on_failure: continue
steps:
  - {id: cut, executor: llm, attempts: 1, inputs: {prompt: "[[reply: The answer is]] [[stop: length]]"}}
  - {id: cut_claude, executor: "llm:claude", attempts: 1,
     inputs: {prompt: "[[reply: The answer is]] [[stop: max_tokens]]"}}
  - {id: filtered, executor: llm, attempts: 1, inputs: {prompt: "[[reply: x]] [[stop: content_filter]]"}}
  - {id: refused, executor: llm, attempts: 1, inputs: {prompt: "[[refusal: I cannot help with that]]"}}
  - {id: fine, executor: llm, attempts: 1, inputs: {prompt: "[[reply: whole]]"}}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(
      step(out.run_id, "cut").reason,
      "model 'fast' stopped at its max_tokens (64): the completion is cut off (finish_reason 'length')");
  EXPECT_EQ(
      step(out.run_id, "cut_claude").reason,
      "model 'claude' stopped at its max_tokens (64): the completion is cut off (stop_reason 'max_tokens')");
  EXPECT_EQ(step(out.run_id, "filtered").reason,
            "the provider withheld model 'fast''s completion (finish_reason 'content_filter')");
  EXPECT_EQ(step(out.run_id, "refused").reason, "model 'fast' refused: I cannot help with that");
  EXPECT_EQ(step(out.run_id, "fine").status, StepStatus::Done);
  EXPECT_EQ(step(out.run_id, "fine").result, "whole");
}

// max_output caps an llm step's result as it does a shell step's: the first
// max_output bytes, and the attempt says it was cut.
TEST_F(LlmEngineTest, MaxOutputCutsTheResultAndSaysSo) {
  auto out = run(R"(
steps:
  - {id: long, executor: llm, max_output: 8, inputs: {prompt: "[[reply: 0123456789abcdef]]"}}
)");
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "long").result, "01234567");
  auto tries = *store_->attempts(out.run_id, "long");
  ASSERT_EQ(tries.size(), 1u);
  EXPECT_TRUE(tries[0].stdout_truncated);
  EXPECT_EQ(tries[0].stdout_bytes, 16);
}

// Retry-After may be an HTTP-date: the retry waits until then (the fake dates
// it 30 s after its answer, in whole seconds), and not at all for a date in the
// past (the usual back-off of 1-1.25 s still applies).
TEST_F(LlmEngineTest, ARetryAfterGivenAsAnHttpDateIsHonoured) {
  ManualClock clock;
  auto out = run(R"(
steps:
  - id: busy
    executor: llm
    attempts: 3
    inputs: {prompt: "[[fail-times: 1 status: 429 retry-after-date=30]] [[reply: later]]"}
  - id: past
    executor: llm
    attempts: 3
    inputs: {prompt: "[[fail-times: 1 status: 503 retry-after-date=-3600]] [[reply: now]]"}
)",
                 &clock);
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto busy = *store_->attempts(out.run_id, "busy");
  ASSERT_EQ(busy.size(), 2u);
  EXPECT_GE(busy[1].started_at - busy[0].finished_at, 29'000) << "the HTTP-date Retry-After was not honoured";
  auto past = *store_->attempts(out.run_id, "past");
  ASSERT_EQ(past.size(), 2u);
  EXPECT_LT(past[1].started_at - past[0].finished_at, 2'000) << "a date in the past asks for no wait";
}

// A key not set, or one the provider refuses (401, 403), is the set-up, not the
// work: the attempt ends setup_failed and the step fails at once, not retried.
TEST_F(LlmEngineTest, AMissingKeyOrUnauthorizedKeyFailsWithoutRetrying) {
  unsetenv(kKeyVar);
  auto out = run("steps:\n  - {id: a, executor: llm, attempts: 3, inputs: {prompt: hi}}\n");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "a").reason,
            "provider 'oa' takes its key from $ORCH_TEST_LLM_API_KEY, which is not set");
  auto missing = *store_->attempts(out.run_id, "a");
  ASSERT_EQ(missing.size(), 1u) << "a set-up failure is not retried";
  EXPECT_EQ(missing[0].ending, AttemptEnding::SetupFailed);
  setenv(kKeyVar, "sk-wrong-key-999999", 1);
  auto denied = run("steps:\n  - {id: a, executor: llm, attempts: 3, inputs: {prompt: hi}}\n");
  EXPECT_EQ(denied.status, RunStatus::Failed);
  EXPECT_NE(step(denied.run_id, "a").reason.find("HTTP 401 from http://127.0.0.1:"), std::string::npos)
      << step(denied.run_id, "a").reason;
  EXPECT_NE(step(denied.run_id, "a").reason.find("the key in $ORCH_TEST_LLM_API_KEY was refused"),
            std::string::npos)
      << step(denied.run_id, "a").reason;
  auto refused = *store_->attempts(denied.run_id, "a");
  ASSERT_EQ(refused.size(), 1u) << "a 401 is a set-up failure: not retried";
  EXPECT_EQ(refused[0].ending, AttemptEnding::SetupFailed);
  setenv(kKeyVar, server_->api_key().c_str(), 1);
  auto forbidden =
      run("steps:\n  - {id: a, executor: llm, attempts: 3, inputs: {prompt: \"[[status: 403]]\"}}\n");
  EXPECT_EQ(forbidden.status, RunStatus::Failed);
  EXPECT_NE(step(forbidden.run_id, "a").reason.find("HTTP 403 from"), std::string::npos)
      << step(forbidden.run_id, "a").reason;
  EXPECT_EQ(store_->attempts(forbidden.run_id, "a")->size(), 1u);
}

// A 200 that is not a completion says what it was instead; a 408 (the provider
// gave up waiting) is retried like a 429.
TEST_F(LlmEngineTest, AnUnreadableAnswerSaysWhatCameAndA408IsRetried) {
  ManualClock clock;
  auto out = run(R"(
on_failure: continue
steps:
  - {id: garbled, executor: llm, attempts: 1, inputs: {prompt: "[[malformed]]"}}
  - {id: slow, executor: llm, attempts: 3, inputs: {prompt: "[[fail-times: 1 status: 408]] [[reply: second time]]"}}
)",
                 &clock);
  const std::string garbled = step(out.run_id, "garbled").reason;
  EXPECT_NE(garbled.find("sent a response orch cannot read (no completion text): a body that is not JSON "
                         "(application/json): "),
            std::string::npos)
      << garbled;
  EXPECT_EQ(step(out.run_id, "slow").result, "second time");
}

// A provider's concurrency caps its calls in flight, whatever -j allows.
TEST_F(LlmEngineTest, AProvidersConcurrencyCapsItsCallsInFlight) {
  std::string yaml = "concurrency: 8\nsteps:\n";
  for (int i = 0; i < 6; ++i)
    yaml += fmt::format(
        "  - {{id: s{}, executor: llm:capped, inputs: {{prompt: \"[[sleep: 0.4]] [[reply: r{}]]\"}}}}\n", i,
        i);
  const auto began = std::chrono::steady_clock::now();
  auto out = run(yaml);
  const auto took = std::chrono::steady_clock::now() - began;
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  // Six 0.4 s calls, two at a time: three waves.
  EXPECT_GE(took, std::chrono::milliseconds(1150)) << "more than 2 calls were in flight";
  EXPECT_LT(took, std::chrono::seconds(6));
}

// Every call reserves max_tokens plus its prompt's estimate before it starts, so
// a fan-out stops before it could overshoot the plan's token budget.
TEST_F(LlmEngineTest, ATokenBudgetStopsAFanOutBeforeItOvershoots) {
  std::string yaml = "concurrency: 8\nbudget: {tokens: 200}\nsteps:\n";
  for (int i = 0; i < 6; ++i)
    yaml += fmt::format("  - {{id: s{}, executor: llm, inputs: {{prompt: \"[[usage: 5 60]]\"}}}}\n", i);
  auto out = run(yaml);
  EXPECT_EQ(out.status, RunStatus::BudgetExhausted) << out.reason;
  auto row = store_->find_run(out.run_id);
  EXPECT_LE((*row)->spent_tokens, 200) << "the budget was overshot";
  EXPECT_GE((*row)->spent_tokens, 130) << "the budget let fewer calls run than it could pay for";
  int done = 0, skipped = 0;
  auto steps = store_->steps(out.run_id);
  ASSERT_TRUE(steps);
  for (const auto& s : *steps) {
    done += s.status == StepStatus::Done;
    skipped += s.status == StepStatus::Skipped;
  }
  EXPECT_GE(done, 2);
  EXPECT_GE(skipped, 1);
}

// A completion is kept in its attempt's ledger row, not a file of its own,
// unless it is larger than kLedgerOutputBytes: then it goes to the file as before.
TEST_F(LlmEngineTest, ACompletionIsKeptInTheLedgerRowUnlessItIsLarge) {
  const std::string big(kLedgerOutputBytes + 1, 'x');
  auto out = run(fmt::format(R"(
steps:
  - {{id: small, executor: llm, inputs: {{prompt: "[[reply: forty-two]]"}}}}
  - {{id: big, executor: llm, inputs: {{prompt: "[[reply: {}]]"}}}}
)",
                             big));
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto small = store_->attempts(out.run_id, "small");
  ASSERT_TRUE(small && small->size() == 1u);
  EXPECT_EQ(small->front().stdout_path, "");
  EXPECT_EQ(small->front().stdout_text, "forty-two");
  EXPECT_EQ(small->front().stdout_bytes, 9);
  EXPECT_EQ(small->front().stderr_path, "");
  EXPECT_EQ(small->front().stderr_text, "");
  auto large = store_->attempts(out.run_id, "big");
  ASSERT_TRUE(large && large->size() == 1u);
  EXPECT_EQ(large->front().stdout_text, "");
  ASSERT_NE(large->front().stdout_path, "");
  EXPECT_EQ(read_file(large->front().stdout_path), big);
  EXPECT_EQ(step(out.run_id, "big").result, big);
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "store" / "runs"))
    if (entry.is_regular_file()) files.push_back(entry.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{"big.1.stdout"});
}

// The key goes to the provider in its header and nowhere else: not into the
// ledger, its WAL, the logs, results or reasons.
TEST_F(LlmEngineTest, TheKeyIsNeverStored) {
  auto out = run(R"(
on_failure: continue
steps:
  - {id: ok, executor: llm, inputs: {prompt: "[[reply: fine]]"}}
  - {id: bad, executor: llm, attempts: 1, inputs: {prompt: "[[status: 500]]"}}
)");
  EXPECT_EQ(step(out.run_id, "ok").result, "fine");
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "store")) {
    if (!entry.is_regular_file()) continue;
    EXPECT_EQ(read_file(entry.path()).find(server_->api_key()), std::string::npos) << entry.path();
  }
}

// A call the token budget cannot pay in full (max_tokens 1024 and its prompt,
// against 600 left) is still made, asking for only what the budget has left;
// one whose shortest worthwhile reply (256 tokens) does not fit is never made.
TEST_F(LlmEngineTest, ACallIsHeldToTheTokenBudgetLeft) {
  const std::string prompt = "[[reply: done]] [[usage: 40 5]] please";  // 38 bytes: reckoned 13 tokens
  server_->reset_requests();
  auto out = run(fmt::format(R"(
budget: {{tokens: 600}}
steps:
  - {{id: first, executor: "llm:wide", attempts: 1, inputs: {{prompt: "{0}"}}}}
  - {{id: second, deps: [first], executor: "llm:wide", attempts: 1, inputs: {{prompt: "{0}"}}}}
)",
                             prompt));
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  json requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u) << requests.dump();
  const std::int64_t in = static_cast<std::int64_t>(prompt.size()) / 3 + 1;
  EXPECT_EQ(requests[0]["body"]["max_tokens"], 600 - in) << "held to the whole budget, less the prompt";
  EXPECT_EQ(requests[1]["body"]["max_tokens"], 600 - 45 - in) << "held to what the first call left";
  EXPECT_EQ((*store_->find_run(out.run_id))->spent_tokens, 90);

  // 200 tokens cannot pay the prompt and a 256-token reply: no call is made.
  server_->reset_requests();
  auto starved = run(fmt::format(R"(
budget: {{tokens: 200}}
steps:
  - {{id: only, executor: "llm:wide", inputs: {{prompt: "{}"}}}}
)",
                                 prompt));
  EXPECT_EQ(starved.status, RunStatus::BudgetExhausted) << starved.reason;
  EXPECT_NE(starved.reason.find("tokens: 0 spent + 0 reserved + 269 needed > limit 200"), std::string::npos)
      << starved.reason;
  EXPECT_EQ(server_->requests().size(), 0u);

  // A step's own budget holds its call the same way, with no plan budget.
  server_->reset_requests();
  auto own = run(fmt::format(R"(
steps:
  - {{id: own, executor: "llm:wide", budget: {{tokens: 300}}, inputs: {{prompt: "{}"}}}}
)",
                             prompt));
  ASSERT_EQ(own.status, RunStatus::Succeeded) << own.reason;
  ASSERT_EQ(server_->requests().size(), 1u);
  EXPECT_EQ(server_->requests()[0]["body"]["max_tokens"], 300 - in);
}

// response_format: sent natively to an OpenAI-style API, put in the system
// prompt for the Messages API, and always enforced as a result_json check.
TEST_F(LlmEngineTest, ResponseFormatIsSentAndTheReplyIsHeldToTheSchema) {
  server_->reset_requests();
  auto out = run(R"(
on_failure: continue
steps:
  - id: good
    executor: llm
    attempts: 1
    inputs:
      prompt: '[[json: {"answer": 42}]]'
      response_format: {type: object, required: [answer], properties: {answer: {type: integer}}}
  - id: prose
    executor: llm:claude
    attempts: 1
    # The step's own check passes; the schema still applies.
    post: [result_nonempty]
    inputs:
      prompt: "[[reply: the answer is 42]]"
      response_format: {type: object, required: [answer]}
  - id: wrong
    executor: llm
    attempts: 1
    inputs:
      prompt: '[[json: {"answer": "many"}]]'
      response_format: {type: object, required: [answer], properties: {answer: {type: integer}}}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "good").status, StepStatus::Done) << step(out.run_id, "good").reason;
  StepRecord prose = step(out.run_id, "prose");
  EXPECT_EQ(prose.status, StepStatus::Failed);
  EXPECT_NE(prose.reason.find("result_json"), std::string::npos) << prose.reason;
  StepRecord wrong = step(out.run_id, "wrong");
  EXPECT_EQ(wrong.status, StepStatus::Failed);
  EXPECT_NE(wrong.reason.find("/answer"), std::string::npos) << wrong.reason;

  json requests = server_->requests();
  ASSERT_TRUE(requests.is_array()) << requests.dump();
  int openai = 0, anthropic = 0;
  for (const auto& r : requests) {
    const json& body = r["body"];
    if (r["path"] == "/v1/chat/completions") {
      ++openai;
      EXPECT_EQ(body["response_format"]["type"], "json_schema") << body.dump();
      EXPECT_EQ(body["response_format"]["json_schema"]["schema"]["required"], json::array({"answer"}));
    } else {
      ++anthropic;
      EXPECT_FALSE(body.contains("response_format"));
      EXPECT_NE(body["system"].get<std::string>().find("\"required\":[\"answer\"]"), std::string::npos)
          << body.dump();
    }
  }
  EXPECT_EQ(openai, 2);
  EXPECT_EQ(anthropic, 1);
}

TEST_F(LlmEngineTest, AResponseFormatThatIsNotASchemaIsAValidationError) {
  auto executors = registry();
  LoadResult loaded = parse_plan(R"(
steps:
  - {id: a, executor: llm, inputs: {prompt: hi, response_format: "json please"}}
  - {id: b, executor: llm, inputs: {prompt: hi, response_format: {type: 12}}}
)",
                                 "p.yaml");
  ASSERT_TRUE(loaded.diagnostics.empty());
  Diagnostics problems = validate_plan(loaded.plan, validate_options_for(dir_ / "ws", "p.yaml", *executors));
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].message.find("inputs.response_format must be a JSON Schema"), std::string::npos)
      << problems[0].to_string();
  EXPECT_NE(problems[1].message.find("not a usable JSON Schema"), std::string::npos)
      << problems[1].to_string();
}

// Prompt-cache tokens: Anthropic reports them apart from input_tokens (they are
// added to tokens_in), OpenAI within prompt_tokens; both kept apart in the row.
TEST_F(LlmEngineTest, PromptCacheTokensAreChargedAndKeptApart) {
  auto out = run(R"(
steps:
  - {id: an, executor: "llm:claude", inputs: {prompt: "[[usage: 10 5]] [[cache: 300 40]]"}}
  - {id: oa, executor: llm, inputs: {prompt: "[[usage: 100 5]] [[cache: 80 0]]"}}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto an = *store_->attempts(out.run_id, "an");
  ASSERT_EQ(an.size(), 1u);
  EXPECT_EQ(an[0].tokens_in, 10 + 300 + 40);
  EXPECT_EQ(an[0].cache_read_tokens, 300);
  EXPECT_EQ(an[0].cache_write_tokens, 40);
  // Priced apart (claude: price_in 3, price_out 15; unset cache prices: a read
  // at price_in, a write at 1.25 x price_in): 10x3 + 300x3 + 40x3.75 + 5x15.
  EXPECT_NEAR(an[0].cost_usd, (10 * 3.0 + 300 * 3.0 + 40 * 3.75 + 5 * 15.0) / 1e6, 1e-12);
  auto oa = *store_->attempts(out.run_id, "oa");
  ASSERT_EQ(oa.size(), 1u);
  EXPECT_EQ(oa[0].tokens_in, 100);
  EXPECT_EQ(oa[0].cache_read_tokens, 80);
  EXPECT_EQ(oa[0].cache_write_tokens, 0);
  EXPECT_EQ((*store_->find_run(out.run_id))->spent_tokens, 350 + 5 + 100 + 5);
}

// Issue 31, item 4: an input orch does not send is refused, never silently
// dropped; the sampling inputs it knows reach the provider, in each API's words.
TEST_F(LlmEngineTest, SamplingInputsAreSentAndAnUnknownInputIsRefused) {
  server_->reset_requests();
  auto out = run(R"(
steps:
  - id: oa
    executor: llm
    inputs: {prompt: "[[reply: ok]]", temperature: 0.2, top_p: 0.9, max_tokens: 32, stop: ["END"], seed: 7}
  - id: an
    executor: llm:claude
    inputs: {prompt: "[[reply: ok]]", temperature: 0, stop: "END", max_tokens: 16}
  - id: big
    executor: llm
    inputs: {prompt: "[[reply: seeded]]", seed: 9007199254740993}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  json requests = server_->requests();
  ASSERT_EQ(requests.size(), 3u) << requests.dump();
  bool seeded = false;
  for (const auto& r : requests)
    if (r["body"].dump().find("seeded") != std::string::npos) {
      seeded = true;
      EXPECT_EQ(r["body"]["seed"].dump(), "9007199254740993") << "2^53 + 1, not rounded through a double";
    }
  EXPECT_TRUE(seeded);
  for (const auto& r : requests) {
    const json& body = r["body"];
    if (body.dump().find("seeded") != std::string::npos) continue;
    if (r["path"] == "/v1/chat/completions") {
      EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.2) << body.dump();
      EXPECT_DOUBLE_EQ(body["top_p"].get<double>(), 0.9);
      EXPECT_EQ(body["max_tokens"], 32) << "the step's max_tokens, not the model's 64";
      EXPECT_EQ(body["stop"], json::array({"END"}));
      EXPECT_EQ(body["seed"], 7);
    } else {
      EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0) << body.dump();
      EXPECT_EQ(body["stop_sequences"], json::array({"END"}));
      EXPECT_EQ(body["max_tokens"], 16);
      EXPECT_FALSE(body.contains("stop"));
      EXPECT_FALSE(body.contains("seed"));
    }
  }

  auto executors = registry();
  LoadResult loaded = parse_plan(R"(
steps:
  - {id: a, executor: llm, inputs: {prompt: hi, temperatur: 0.2}}
  - {id: b, executor: llm, inputs: {prompt: hi, temperature: 3, top_p: 0, max_tokens: 0, stop: [], seed: 1.5}}
  - {id: c, executor: "llm:claude", inputs: {prompt: hi, seed: 7, tools: [{name: x}], temperature: 1.5}}
  - {id: d, executor: llm, inputs: {prompt: hi, seed: 18446744073709551615}}
)",
                                 "p.yaml");
  ASSERT_TRUE(loaded.diagnostics.empty());
  Diagnostics problems = validate_plan(loaded.plan, validate_options_for(dir_ / "ws", "p.yaml", *executors));
  std::string all;
  for (const auto& d : problems) all += d.to_string() + "\n";
  EXPECT_EQ(problems.size(), 10u) << all;
  EXPECT_HAS(all,
             "inputs.temperatur: not an input of an llm step, and it would not be sent (inputs: prompt, "
             "system, response_format, temperature, top_p, max_tokens, stop, seed) (did you mean "
             "'temperature'?)");
  EXPECT_HAS(all, "inputs.temperature: must be a number from 0 to 2 for this model's API, not 3");
  EXPECT_HAS(all, "inputs.temperature: must be a number from 0 to 1 for this model's API, not 1.5");
  EXPECT_HAS(all, "inputs.seed: must be a whole number that fits in 64 bits, not 18446744073709551615");
  EXPECT_HAS(all, "inputs.top_p: must be a number above 0 and at most 1");
  EXPECT_HAS(all, "inputs.max_tokens: must be a whole number of tokens above 0");
  EXPECT_HAS(all, "inputs.stop: must be a non-empty string or a list of 1 to 4 non-empty strings");
  EXPECT_HAS(all, "inputs.seed: must be a whole number that fits in 64 bits, not 1.5");
  EXPECT_HAS(all, "inputs.seed: the Anthropic Messages API takes no seed");
  EXPECT_HAS(all, "inputs.tools: an llm step is one call and runs no tools");
}

// A body cut off mid-transfer and a server that never answers are transport
// failures: transient, so retried (after the back-off of at least 1 s: on the
// real clock, since an HTTP timeout is real I/O; see orch/clock.h), and the
// attempt's reason says what happened.
TEST_F(LlmEngineTest, ATruncatedBodyIsATransientFailureThatIsRetried) {
  auto out = run(R"(
steps:
  - {id: cut, executor: llm, attempts: 2, inputs: {prompt: "[[truncated]] hi"}}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto cut = *store_->attempts(out.run_id, "cut");
  ASSERT_EQ(cut.size(), 2u) << "a transient failure is retried";
  for (const auto& a : cut) {
    EXPECT_EQ(a.status, AttemptStatus::Failed);
    EXPECT_NE(a.reason.find("transfer closed with"), std::string::npos) << a.reason;
  }
}

TEST_F(LlmEngineTest, AProviderThatHangsIsCutAtItsTimeoutAndRetried) {
  auto began = std::chrono::steady_clock::now();
  auto out = run(R"(
steps:
  - {id: hang, executor: "llm:hasty", attempts: 2, inputs: {prompt: "[[sleep: 30]] hi"}}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(15))
      << "two 1 s timeouts and one back-off, not the server's 30 s";
  auto hang = *store_->attempts(out.run_id, "hang");
  ASSERT_EQ(hang.size(), 2u);
  for (const auto& a : hang) {
    EXPECT_EQ(a.status, AttemptStatus::TimedOut) << "a call cut at its timeout is timed_out, as a shell step";
    EXPECT_NE(a.reason.find("timed out after 1"), std::string::npos) << a.reason;
  }
}

// A response over the provider's max_response would come again if asked again:
// not transient, so the same failure twice stops the step. It is refused on its
// Content-Length before the body is read, and as it comes when it has none
// (chunked); a body that cannot be decoded (broken gzip) is no better the
// second time either.
TEST_F(LlmEngineTest, AnOversizedOrUndecodableResponseIsNotRetriedAsTransient) {
  auto out = run(R"(
on_failure: continue
steps:
  - {id: announced, executor: "llm:tiny", attempts: 4, inputs: {prompt: "[[reply: a reply longer than two hundred bytes once it is wrapped in a completion]]"}}
  - {id: chunked, executor: "llm:tiny", attempts: 4, inputs: {prompt: "[[chunked]] [[reply: a reply longer than two hundred bytes once it is wrapped in a completion]]"}}
  - {id: gzip, executor: llm, attempts: 4, inputs: {prompt: "[[bad-gzip]]"}}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto announced = *store_->attempts(out.run_id, "announced");
  ASSERT_EQ(announced.size(), 2u) << "stopped by the same failure twice, not retried to the fourth attempt";
  EXPECT_NE(announced[0].reason.find("announces a body larger than 200 bytes"), std::string::npos)
      << announced[0].reason;
  auto chunked = *store_->attempts(out.run_id, "chunked");
  ASSERT_EQ(chunked.size(), 2u);
  EXPECT_NE(chunked[0].reason.find("the response is larger than 200 bytes"), std::string::npos)
      << chunked[0].reason;
  auto gzip = *store_->attempts(out.run_id, "gzip");
  ASSERT_EQ(gzip.size(), 2u);
  EXPECT_NE(gzip[0].reason.find("could not be decoded"), std::string::npos) << gzip[0].reason;
  for (const auto* tries : {&announced, &chunked, &gzip})
    for (const auto& a : *tries) EXPECT_EQ(a.status, AttemptStatus::Failed);
}

}  // namespace
}  // namespace orch
