// An executor's credential variables are masked whatever they are called: the
// value of an llm provider's api_key_env never reaches the ledger or an output
// file, even when the name does not look secret (util/secrets.h).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "exec/llm_executor.h"
#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "testing/testing.h"
#include "util/secrets.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

TEST(SecretEnv, AProvidersKeyIsMaskedEvenWhenItsVariableNameDoesNotLookSecret) {
  constexpr const char* kVar = "ORCH_TEST_PLAIN_CRED";
  constexpr const char* kValue = "sk-plainly-named-0123456789";
  ASSERT_FALSE(SecretMasker::looks_secret(kVar)) << "the test needs a name the name rule misses";
  setenv(kVar, kValue, 1);
  testing::TempDir dir;
  fs::create_directories(dir / "ws");
  auto catalog = parse_llm_catalog(fmt::format(R"(
providers:
  p: {{api: openai, base_url: "http://127.0.0.1:9/v1", api_key_env: {}}}
models:
  m: {{provider: p, model: x, max_tokens: 8}}
default_model: m
)",
                                               kVar),
                                   "models.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  auto executors = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
  auto llm = std::make_shared<LlmExecutor>(std::make_shared<LlmCatalog>(*catalog));
  executors->add("llm", llm);
  EXPECT_EQ(executors->secret_env(), std::vector<std::string>{kVar});

  const std::string yaml = R"(
on_failure: continue
steps:
  - {id: echo, sh: 'echo "the key is $ORCH_TEST_PLAIN_CRED"; echo "again $ORCH_TEST_PLAIN_CRED" >&2'}
  - {id: fail, sh: 'echo "$ORCH_TEST_PLAIN_CRED"; exit 3', attempts: 1}
)";
  LoadResult loaded = parse_plan(yaml, (dir / "plan.yaml").string());
  ASSERT_TRUE(loaded.diagnostics.empty()) << loaded.diagnostics.front().to_string();
  auto store = open_sqlite_store(dir / "store" / "orch.db");
  ASSERT_TRUE(store) << store.error().message;
  EngineOptions options;
  options.workspace = dir / "ws";
  options.executors = executors;
  RunOutcome out;
  {
    Engine engine(**store, options);
    auto ran = engine.run(loaded.plan, yaml);
    ASSERT_TRUE(ran) << ran.error().message;
    out = *ran;
  }
  auto steps = (*store)->steps(out.run_id);
  ASSERT_TRUE(steps);
  for (const auto& s : *steps)
    if (s.step_id == "echo") {
      EXPECT_EQ(s.result, "the key is ***");
    }
  store->reset();
  unsetenv(kVar);
  for (const auto& entry : fs::recursive_directory_iterator(dir / "store")) {
    if (!entry.is_regular_file()) continue;
    EXPECT_EQ(testing::read_file(entry.path()).find(kValue), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace orch
