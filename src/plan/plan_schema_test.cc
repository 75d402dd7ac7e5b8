// schemas/plan.schema.json agrees with the loader: the good plans conform to it,
// and plans the loader or validator rejects for their shape do not.
#include <gtest/gtest.h>

#include <filesystem>

#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/testing.h"
#include "util/json_schema.h"
#include "util/read_file.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

// YAML text as JSON, the way the loader reads its scalars (a key written twice
// keeps its first value, as in the loader, which reports it).
nlohmann::json yaml_json(const std::string& text) {
  auto doc = detail::read_yaml_doc(text);
  EXPECT_TRUE(doc) << text << ": " << (doc ? "" : doc.error().message);
  return doc ? yaml_to_json(*doc) : nlohmann::json();
}

fs::path source_root() {
  if (const char* s = std::getenv("ORCH_SOURCE_DIR")) return s;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

class PlanSchema : public ::testing::Test {
 protected:
  void SetUp() override {
    auto schema = JsonSchema::load_file((source_root() / "schemas" / "plan.schema.json").string());
    ASSERT_TRUE(schema) << schema.error().message;
    schema_ = std::make_unique<JsonSchema>(std::move(*schema));
  }

  // The plan file as JSON, the way the loader reads its scalars.
  static nlohmann::json as_json(const fs::path& file) {
    auto text = read_file_text(file);
    EXPECT_TRUE(text) << file;
    return yaml_json(text ? *text : std::string());
  }

  std::vector<std::string> violations(const nlohmann::json& doc) const { return schema_->validate(doc); }

  std::unique_ptr<JsonSchema> schema_;
};

TEST_F(PlanSchema, GoodPlansConform) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(source_root() / "tests" / "good-plans")) {
    std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".yaml" && ext != ".json")) continue;
    SCOPED_TRACE(entry.path().filename().string());
    for (const auto& v : violations(as_json(entry.path()))) ADD_FAILURE() << v;
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

TEST_F(PlanSchema, StructurallyBadPlansDoNot) {
  // Bad plans whose problem is one of shape (keys, types, ranges), which a schema can see.
  for (const char* name : {"03-unknown-plan-key.yaml",
                           "04-unknown-step-key.yaml",
                           "06-attempts-not-integer.yaml",
                           "07-bad-duration-unit.yaml",
                           "09-bad-size.yaml",
                           "10-unknown-post-kind.yaml",
                           "11-run-not-a-list.yaml",
                           "12-steps-not-a-list.yaml",
                           "13-bad-on-failure.yaml",
                           "14-concurrency-not-integer.json",
                           "15-budget-unknown-key.yaml",
                           "17-post-without-kind.yaml",
                           "18-top-level-scalar.yaml",
                           "21-empty-steps.yaml",
                           "23-bad-id-characters.yaml",
                           "38-run-and-sh.yaml",
                           "44-concurrency-zero.yaml",
                           "45-attempts-zero.yaml",
                           "46-negative-budget.yaml",
                           "52-bad-input-name.yaml",
                           "53-bad-env-name.yaml",
                           "55-timeout-zero.yaml",
                           "58-stepspec-unknown-key.json",
                           "61-budget-attempts-zero.yaml"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(violations(as_json(source_root() / "tests" / "bad-plans" / name)).empty())
        << name << " conforms";
  }
}

TEST_F(PlanSchema, InlineExamples) {
  auto check = [&](const char* yaml) { return violations(yaml_json(yaml)); };
  EXPECT_TRUE(
      check("steps: [{id: a, sh: x, post: [exit_zero, {result_contains: ok}, {file_exists: f}]}]").empty());
  EXPECT_TRUE(check("steps: [{id: a, run: [sleep, 1], timeout: 30, max_output: 1024}]").empty());
  EXPECT_TRUE(check("x-anchor: {a: 1}\nsteps: [{id: a, sh: x, x-note: hi}]").empty());
  EXPECT_TRUE(check("steps: [{id: a, sh: x, post: {result_json: {type: object}}}]").empty());
  EXPECT_FALSE(check("steps: [{id: a, sh: x, post: [{result_contains: ok, extra: 1}]}]").empty());
  EXPECT_FALSE(check("steps: [{id: a, sh: x, timeout: 1y}]").empty());
  EXPECT_FALSE(check("steps: [{id: a, sh: x, post: [{kind: exit_zero, bogus: 1}]}]").empty());
  EXPECT_FALSE(check("steps: [{sh: x}]").empty()) << "a step needs an id";
  // The full form takes the fields its kind uses, as orch does: no more, no fewer.
  EXPECT_TRUE(check("steps: [{id: a, sh: x, post: [{kind: shell_zero, cmd: x, timeout: 1s}]}]").empty());
  EXPECT_TRUE(check("steps: [{id: a, sh: x, post: [{kind: file_contains, path: a, text: b, x-why: c}]}]").empty());
  EXPECT_FALSE(check("steps: [{id: a, sh: x, post: [{kind: exit_zero, text: x}]}]").empty());
  EXPECT_FALSE(check("steps: [{id: a, sh: x, post: [{kind: result_contains, text: a, path: b}]}]").empty());
  EXPECT_FALSE(check("steps: [{id: a, sh: x, post: [{kind: file_contains, path: a}]}]").empty());
  EXPECT_FALSE(check("steps: [{id: a, sh: x, post: [{kind: result_json}]}]").empty());
  EXPECT_FALSE(check("steps: [{id: a, sh: x, post: [{kind: result_json, schema: {}, schema_path: s}]}]").empty());
}

// Editors check plans with the schema, orch with its loader and validator: on
// each of these (one field, one form at a time) both say the same. Checks a
// schema cannot make (graph, placeholders, files, regexes) are left out, and so
// are an executor's own checks (builtin:echo's `text`), which the registry adds.
TEST_F(PlanSchema, AgreesWithOrchFieldByField) {
  testing::TempDir ws;
  ValidateOptions options;
  options.workspace = ws.path();
  options.plan_dir = ws.path();
  auto orch_accepts = [&](const std::string& text, const std::string& name) {
    LoadResult r = parse_plan(text, name);
    return r.diagnostics.empty() && validate_plan(r.plan, options).empty();
  };
  auto step = [](const std::string& fields) { return "steps:\n  - {id: a, " + fields + "}\n"; };
  const std::vector<std::string> yaml_cases = {
      // strings that YAML gives as numbers or booleans
      "name: 5\n" + step("sh: x"),
      step("sh: x, goal: 5"),
      step("sh: 5"),
      step("sh: true"),
      "steps:\n  - {id: 1, sh: x}\n",
      step("sh: x, output: 5"),
      step("sh: x, writes: [5]"),
      // step ids
      "steps:\n  - {id: a.json, sh: x}\n",
      "steps:\n  - {id: result, sh: x}\n",
      "steps:\n  - {id: a.results, sh: x}\n",
      "steps:\n  - {id: -a, sh: x}\n",
      "steps:\n  - {id: b, sh: x}\n  - {id: a, sh: x, deps: ['']}\n",
      // integers
      step("sh: x, attempts: 3"),
      step("sh: x, attempts: '3'"),
      step("sh: x, attempts: 2.0"),
      step("sh: x, attempts: 1e3"),
      step("sh: x, attempts: 0x3"),
      step("sh: x, attempts: 1.5"),
      step("sh: x, attempts: 0"),
      step("sh: x, attempts: '0'"),
      step("sh: x, attempts: 2147483648"),
      "concurrency: 2\n" + step("sh: x"),
      "concurrency: 0\n" + step("sh: x"),
      "budget: {tokens: 0}\n" + step("sh: x"),
      "budget: {tokens: -1}\n" + step("sh: x"),
      "budget: {tokens: '100'}\n" + step("sh: x"),
      "budget: {cost_usd: '5'}\n" + step("sh: x"),
      "budget: {cost_usd: -1}\n" + step("sh: x"),
      "budget: {cost_usd: .inf}\n" + step("sh: x"),
      // durations
      step("sh: x, timeout: 30"),
      step("sh: x, timeout: 1h30m"),
      step("sh: x, timeout: 0"),
      step("sh: x, timeout: 0s"),
      step("sh: x, timeout: '0.0s'"),
      step("sh: x, timeout: 00s"),
      step("sh: x, timeout: 0.0001"),
      step("sh: x, timeout: 1e3"),
      step("sh: x, timeout: +5"),
      step("sh: x, timeout: 0x10"),
      step("sh: x, timeout: 5x"),
      step("sh: x, timeout: -5"),
      step("sh: x, timeout: 315360001"),
      step("sh: x, retry_delay: 0"),
      step("sh: x, retry_delay: '-0'"),
      // sizes
      step("sh: x, max_output: 16MiB"),
      step("sh: x, max_output: 1.5"),
      step("sh: x, max_output: 0.5"),
      step("sh: x, max_output: '0'"),
      step("sh: x, max_output: 0KiB"),
      step("sh: x, max_output: 1e3"),
      step("sh: x, max_output: 5M"),
      // commands, executors
      "steps:\n  - {id: a}\n",
      step("run: [a], sh: b"),
      step("run: ['']"),
      step("run: ['', a]"),
      step("executor: builtin:json, run: [a]"),
      step("executor: builtin:echo, sh: x"),
      step("executor: builtin:echo, inputs: {text: t}"),
      step("executor: shell, inputs: {text: t}"),
      step("sh: ' '"),
      // env, writes, paths
      step("sh: x, env: {A: 1}"),
      step("sh: x, env: {ORCH_P0: b}"),
      step("sh: x, env: {ORCH_IN_X: b}"),
      step("sh: x, env: {ORCH_RESULT: b}"),
      step("sh: x, env: {ORCH_SYNC: b}"),
      step("sh: x, env: {1A: b}"),
      step("sh: x, writes: '*.txt'"),
      step("sh: x, writes: ['a?']"),
      step("sh: x, writes: /etc/passwd"),
      step("sh: x, writes: ../x"),
      step("sh: x, output: /etc/passwd"),
      step("sh: x, output: ''"),
      // postconditions
      step("sh: x, post: [exit_zero, result_nonempty, none]"),
      step("sh: x, post: [result_contains]"),
      step("sh: x, post: [shell_zero]"),
      step("sh: x, post: [{exit_zero: {}}]"),
      step("sh: x, post: [{result_contains: ok}]"),
      step("sh: x, post: [{result_contains: ''}]"),
      step("sh: x, post: [{result_contains: 5}]"),
      step("sh: x, post: [{result_contains: {}}]"),
      step("sh: x, post: [{result_contains: {path: a}}]"),
      step("sh: x, post: [{result_contains: {text: a, x-n: 1}}]"),
      step("sh: x, post: [{file_contains: {path: a}}]"),
      step("sh: x, post: [{file_contains: {path: a, text: b}}]"),
      step("sh: x, post: [{file_exists: {}}]"),
      step("sh: x, post: [{shell_zero: {timeout: 5s}}]"),
      step("sh: x, post: [{shell_zero: {cmd: x, timeout: 5s}}]"),
      step("sh: x, post: [{shell_zero: ' '}]"),
      step("sh: x, post: [{result_json: {}}]"),
      step("sh: x, post: [{result_json: True}]"),
      step("sh: x, post: [{result_json: {type: object}}]"),
      step("sh: x, post: [{result_json: {text: a}}]"),
      step("sh: x, post: [{result_json: {schema: {}}}]"),
      step("sh: x, post: [{result_json: {schema_path: ''}}]"),
      step("sh: x, post: [{kind: exit_zero, text: ''}]"),
      step("sh: x, post: [{kind: exit_zero, text: a}]"),
      step("sh: x, post: [{kind: result_contains, text: ''}]"),
      step("sh: x, post: [{kind: shell_zero, cmd: x, timeout: 0s}]"),
      step("sh: x, post: [{kind: result_json, schema: {}, schema_path: ''}]"),
      step("sh: x, post: [{kind: result_json, schema: {}, schema_path: s}]"),
  };
  // Both verdicts on one plan, `doc` being the plan as the schema sees it.
  auto expect_same_verdict =
      [&](const std::string& text, const std::string& name, const nlohmann::json& doc) {
        SCOPED_TRACE(text);
        const bool orch = orch_accepts(text, name);
        const auto found = violations(doc);
        EXPECT_EQ(orch, found.empty())
            << (orch ? "orch accepts, the schema says: " + (found.empty() ? "" : found[0])
                     : std::string("orch refuses, the schema accepts"));
      };
  for (const auto& text : yaml_cases) expect_same_verdict(text, "p.yaml", yaml_json(text));
  const std::vector<std::string> stepspec_cases = {
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "deps": null, "executor": "shell", "postcondition": null}])",
      R"([{"goal": 5, "inputs": {"cmd": "true", "n": 5}}])",
      R"([{"goal": "g"}])",
      R"([{"goal": "g", "inputs": {"cmd": " "}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true", "my-x": "a"}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "x-note": 1}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "postcondition": {"kind": "", "path": "", "text": "", "cmd": ""}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "postcondition": {"kind": null}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "postcondition": {"path": "x"}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "postcondition": {"kind": "bogus"}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "postcondition": {"kind": "result_contains", "text": "a", "path": ""}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "postcondition": {"kind": "result_contains", "path": "b"}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "postcondition": {"kind": "exit_zero", "bogus": 1}}])",
      R"([{"goal": "g", "inputs": {"cmd": "true"}, "idx": "0"}])",
      // 1e0 is the index 1 (the schema cannot say "strictly backward": orch validate checks it).
      R"([{"goal": "f", "inputs": {"cmd": "true"}}, {"goal": "h", "inputs": {"cmd": "true"}},
          {"goal": "g", "inputs": {"cmd": "true"}, "deps": [1e0]}])",
      R"([{"goal": "", "inputs": {"cmd": "true"}}])",
      R"([{"goal": " \t", "inputs": {"cmd": "true"}}])",
      R"([{"inputs": {"cmd": "true"}}])",
  };
  for (const auto& text : stepspec_cases) expect_same_verdict(text, "p.json", nlohmann::json::parse(text));
}

}  // namespace
}  // namespace orch
