// The seed's StepSpec JSON, read unchanged.
#include <gtest/gtest.h>

#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/testing.h"

namespace orch {
namespace {

const char* kSeedPlan = R"([
  {"goal": "list files", "deps": [], "inputs": {"cmd": "ls -1"}, "executor": "shell",
   "postcondition": {"kind": "result_nonempty"}},
  {"goal": "count them", "deps": [0], "inputs": {"cmd": "echo '#E0' | wc -l", "note": "n"}, "executor": "",
   "postcondition": {"kind": "shell_zero", "cmd": "true"}},
  {"goal": "think", "deps": [0, 1], "inputs": {"prompt": "summarise #E1"}, "executor": "turn",
   "postcondition": {"kind": "", "path": ""}},
  {"goal": "write", "deps": null, "inputs": null, "executor": "shell", "postcondition": null}
])";

TEST(StepSpec, ReadsTheSeedFormat) {
  LoadResult r = parse_plan(kSeedPlan, "seed.json");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.to_string();
  const Plan& p = r.plan;
  EXPECT_TRUE(p.from_stepspec);
  ASSERT_EQ(p.steps.size(), 4u);
  EXPECT_EQ(p.steps[0].id, "s0");
  EXPECT_EQ(p.steps[1].id, "s1");
  EXPECT_EQ(p.steps[0].goal, "list files");
  EXPECT_EQ(p.steps[0].executor, "shell");
  EXPECT_EQ(p.steps[0].sh, "ls -1");
  EXPECT_FALSE(p.steps[0].inputs.contains("cmd")) << "cmd became the script";
  ASSERT_EQ(p.steps[0].post.size(), 1u);
  EXPECT_EQ(p.steps[0].post[0].kind, PostKind::ResultNonempty);

  EXPECT_EQ(p.steps[1].executor, "shell") << "an empty executor is shell";
  EXPECT_EQ(p.steps[1].deps, std::vector<std::string>{"s0"});
  EXPECT_EQ(p.steps[1].sh, "echo '#E0' | wc -l");
  EXPECT_EQ(p.steps[1].inputs["note"], "n");
  EXPECT_EQ(p.steps[1].post[0].cmd, "true");

  EXPECT_EQ(p.steps[2].executor, "turn") << "unknown executors are kept for validation to report";
  EXPECT_FALSE(p.steps[2].sh);
  EXPECT_EQ(p.steps[2].deps, (std::vector<std::string>{"s0", "s1"}));
  EXPECT_EQ(p.steps[2].inputs["prompt"], "summarise #E1");
  EXPECT_TRUE(p.steps[2].post.empty()) << "Go's zero postcondition means the executor's default";

  EXPECT_TRUE(p.steps[3].deps.empty());
  EXPECT_TRUE(p.steps[3].inputs.empty());
  EXPECT_TRUE(p.steps[3].post.empty());

  // Lines point into the JSON.
  EXPECT_EQ(p.steps[1].loc.line, 4);
  EXPECT_EQ(p.steps[1].field_lines.line("deps"), 4);
  EXPECT_EQ(p.steps[1].field_lines.line("post"), 5);
}

TEST(StepSpec, ValidationReportsUnknownExecutorsAndMissingCommands) {
  LoadResult r = parse_plan(kSeedPlan, "seed.json");
  ValidateOptions options;
  testing::TempDir ws;
  options.workspace = ws.path();
  std::vector<std::string> got;
  for (const auto& d : validate_plan(r.plan, options)) got.push_back(d.to_string());
  ASSERT_EQ(got.size(), 2u) << ::testing::PrintToString(got);
  EXPECT_EQ(got[0], "seed.json:6: step 's2': unknown executor 'turn'");
  EXPECT_EQ(got[1], "seed.json:8: step 's3': a shell step needs its command in inputs.cmd");
  // With "turn" registered, only the missing command remains.
  options.executor_known = [](const std::string& name) { return name == "shell" || name == "turn"; };
  EXPECT_EQ(validate_plan(r.plan, options).size(), 1u);
}

TEST(StepSpec, IndexPlaceholdersMustPointAtEarlierAncestors) {
  const char* plan = R"([
  {"goal": "a", "deps": [], "inputs": {"cmd": "echo a"}, "executor": "shell"},
  {"goal": "b", "deps": [], "inputs": {"cmd": "echo #E0"}, "executor": "shell"},
  {"goal": "c", "deps": [0], "inputs": {"cmd": "echo #E2 #E7"}, "executor": "shell"}
])";
  LoadResult r = parse_plan(plan, "seed.json");
  ASSERT_TRUE(r.diagnostics.empty());
  testing::TempDir ws;
  ValidateOptions options;
  options.workspace = ws.path();
  std::vector<std::string> got;
  for (const auto& d : validate_plan(r.plan, options)) got.push_back(d.to_string());
  ASSERT_EQ(got.size(), 3u) << ::testing::PrintToString(got);
  EXPECT_EQ(got[0],
            "seed.json:3: step 's1': placeholder '#E0' in 'sh' refers to step #0 ('s0'), which is not an "
            "ancestor of "
            "'s1' (add it to deps)");
  EXPECT_EQ(
      got[1],
      "seed.json:4: step 's2': placeholder '#E2' in 'sh' refers to step #2, which is not an earlier step "
      "(this is step #2)");
  EXPECT_EQ(
      got[2],
      "seed.json:4: step 's2': placeholder '#E7' in 'sh' refers to step #7, but the plan has only 3 steps "
      "(#0 to #2)");
}

TEST(StepSpec, ShapeErrors) {
  const char* plan = R"([
  {"goal": "a", "dependencies": [], "inputs": {"cmd": "x"}},
  {"goal": "b", "deps": [-1, "x"], "inputs": {"cmd": ["ls"]}},
  {"goal": "c", "deps": [5], "inputs": {"cmd": "x"}, "postcondition": {"kind": "file_exist", "path": "x"}},
  {"goal": "d", "idx": 9, "inputs": {"cmd": "x"}, "postcondition": {"path": "x"}},
  "not a step"
])";
  std::vector<std::string> got;
  for (const auto& d : parse_plan(plan, "s.json").diagnostics) got.push_back(d.to_string());
  std::string all = ::testing::PrintToString(got);
  auto has = [&](const std::string& f) { return all.find(f) != std::string::npos; };
  EXPECT_TRUE(has("s.json:2: step 's0': unknown key 'dependencies'")) << all;
  EXPECT_TRUE(has("s.json:3: step 's1': 'deps' must hold step indices (0 or more), got -1")) << all;
  EXPECT_TRUE(has("s.json:3: step 's1': 'deps' must be an integer, got 'x'")) << all;
  EXPECT_TRUE(has("s.json:3: step 's1': input 'cmd' must be a string, got a list")) << all;
  EXPECT_TRUE(
      has("s.json:4: step 's2': unknown postcondition kind 'file_exist' (did you mean 'file_exists'?)"))
      << all;
  EXPECT_TRUE(has("s.json:5: step 's3': 'idx' is 9 but the step is at position 3")) << all;
  EXPECT_TRUE(has("s.json:5: step 's3': 'postcondition' has fields but no 'kind'")) << all;
  EXPECT_TRUE(has("s.json:6: step 's4': each StepSpec must be a mapping")) << all;
}

TEST(StepSpec, OutOfRangeDepIsAnUnknownStep) {
  LoadResult r = parse_plan(R"([{"goal": "a", "deps": [3], "inputs": {"cmd": "x"}}])", "s.json");
  ASSERT_TRUE(r.diagnostics.empty());
  testing::TempDir ws;
  ValidateOptions options;
  options.workspace = ws.path();
  auto d = validate_plan(r.plan, options);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].to_string(),
            "s.json:1: step 's0': depends on step index 3, but the list has 1 step (indices 0 to 0)");
}

// Seed 002: "every dependency ... points strictly backward (which also makes the
// DAG acyclic)". A forward dep is an error even when it makes no cycle.
TEST(StepSpec, DepsPointStrictlyBackward) {
  LoadResult r = parse_plan(R"([
  {"goal": "a", "deps": [1], "inputs": {"cmd": "x"}},
  {"goal": "b", "deps": [0], "inputs": {"cmd": "x"}},
  {"goal": "c", "deps": [0, 1], "inputs": {"cmd": "x"}}
])",
                            "s.json");
  ASSERT_TRUE(r.diagnostics.empty());
  testing::TempDir ws;
  ValidateOptions options;
  options.workspace = ws.path();
  std::vector<std::string> got;
  for (const auto& d : validate_plan(r.plan, options)) got.push_back(d.to_string());
  const std::string all = ::testing::PrintToString(got);
  EXPECT_NE(all.find("s.json:2: step 's0': depends on step index 1, which is not an earlier step (this is step "
                     "#0): a StepSpec's deps point strictly backward"),
            std::string::npos)
      << all;
  for (const auto& line : got) EXPECT_EQ(line.find("step 's2'"), std::string::npos) << line;

  // A forward dep that closes no cycle is refused all the same.
  LoadResult lone = parse_plan(R"([
  {"goal": "a", "deps": [1], "inputs": {"cmd": "x"}},
  {"goal": "b", "inputs": {"cmd": "x"}}
])",
                               "s.json");
  auto d = validate_plan(lone.plan, options);
  ASSERT_EQ(d.size(), 1u) << ::testing::PrintToString(d.size());
  EXPECT_NE(d[0].message.find("not an earlier step"), std::string::npos) << d[0].to_string();
}

TEST(StepSpec, AGoalOfOnlySpacesIsAsEmptyAsNone) {
  const char* plan = R"([
  {"goal": "", "inputs": {"cmd": "x"}},
  {"goal": " \t ", "inputs": {"cmd": "x"}},
  {"inputs": {"cmd": "x"}},
  {"goal": 5, "inputs": {"cmd": "x"}},
  {"goal": " list ", "inputs": {"cmd": "x"}}
])";
  std::vector<std::string> got;
  for (const auto& d : parse_plan(plan, "s.json").diagnostics) got.push_back(d.to_string());
  ASSERT_EQ(got.size(), 3u) << ::testing::PrintToString(got);
  EXPECT_EQ(got[0], "s.json:2: step 's0': 'goal' is empty (or only spaces): say what the step is for");
  EXPECT_EQ(got[1], "s.json:3: step 's1': 'goal' is empty (or only spaces): say what the step is for");
  EXPECT_EQ(got[2], "s.json:4: step 's2': a StepSpec needs a 'goal': say what the step is for");
}

}  // namespace
}  // namespace orch
