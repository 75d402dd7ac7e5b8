// schemas/plan.schema.json agrees with the loader: the good plans conform to it,
// and plans the loader or validator rejects for their shape do not.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "util/json_schema.h"
#include "util/yaml_json.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

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
  static nlohmann::json as_json(const fs::path& file) { return yaml_to_json(YAML::LoadFile(file.string())); }

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
  auto check = [&](const char* yaml) { return violations(yaml_to_json(YAML::Load(yaml))); };
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

}  // namespace
}  // namespace orch
