#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "orch/postcondition.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;
using testing::write_file;

class ResultJson : public ::testing::Test {
 protected:
  CheckResult run(const std::string& result, std::optional<json> schema = std::nullopt, std::string schema_path = "") {
    Postcondition post;
    post.kind = PostKind::ResultJson;
    post.schema = std::move(schema);
    post.schema_path = std::move(schema_path);
    AttemptOutcome outcome;
    outcome.ending = AttemptEnding::Exited;
    outcome.exit_code = 0;
    outcome.result = result;
    CheckContext ctx;
    ctx.workspace = dir_.path();
    ctx.plan_dir = dir_.path() / "plans";
    ctx.outcome = &outcome;
    return evaluate_post(post, ctx);
  }
  TempDir dir_;
  const json schema_ = json::parse(R"({
    "type": "object", "required": ["status", "count"],
    "properties": {"status": {"enum": ["ok", "done"]}, "count": {"type": "integer", "minimum": 0}}
  })");
};

TEST_F(ResultJson, ParsesWithoutSchema) {
  auto r = run(R"({"a": 1})");
  EXPECT_TRUE(r.held);
  EXPECT_EQ(r.kind, PostKind::ResultJson);
  EXPECT_EQ(r.reason, "result_json: an object (8 bytes)");
  EXPECT_EQ(run("[1, 2]").reason, "result_json: an array (6 bytes)");
  EXPECT_EQ(run("\"s\"").reason, "result_json: a string (3 bytes)");
}

TEST_F(ResultJson, NotJsonGivesThePosition) {
  auto r = run("{\"a\": tru}");
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason.rfind("result_json: the result is not JSON: parse error at line 1, column ", 0), 0u) << r.reason;
  EXPECT_NE(r.reason.find("(10 bytes)"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find('\n'), std::string::npos);
  auto multi = run("{\n\"a\": 1,\n}\n");
  EXPECT_NE(multi.reason.find("line 3"), std::string::npos) << multi.reason;
}

TEST_F(ResultJson, EmptyResult) {
  EXPECT_EQ(run("").reason, "result_json: the result is empty, not JSON");
  EXPECT_EQ(run(" \n").reason, "result_json: the result is only whitespace, not JSON");
}

TEST_F(ResultJson, InlineSchemaHeldAndFailed) {
  auto ok = run(R"({"status": "ok", "count": 3})", schema_);
  EXPECT_TRUE(ok.held);
  EXPECT_EQ(ok.reason, "result_json: an object (28 bytes), matches the inline schema");
  auto bad = run(R"({"status": "maybe", "count": -1})", schema_);
  EXPECT_FALSE(bad.held);
  EXPECT_EQ(bad.reason.rfind("result_json: the result does not match the inline schema (2 violations): ", 0), 0u)
      << bad.reason;
  EXPECT_NE(bad.reason.find("/status: "), std::string::npos) << bad.reason;
  EXPECT_NE(bad.reason.find("/count: "), std::string::npos) << bad.reason;
}

TEST_F(ResultJson, ManyViolationsAreCut) {
  json strict = json::parse(R"({"type": "array", "items": {"type": "string"}})");
  auto r = run("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]", strict);
  EXPECT_FALSE(r.held);
  EXPECT_NE(r.reason.find("(14 violations): /0: "), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("/9: "), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("; and 4 more"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find("/10: "), std::string::npos) << r.reason;
}

TEST_F(ResultJson, BadInlineSchema) {
  auto r = run("{}", json::parse(R"({"type": 5})"));
  EXPECT_FALSE(r.held);
  EXPECT_EQ(r.reason.rfind("result_json: the inline schema is not a usable JSON Schema", 0), 0u) << r.reason;
}

TEST_F(ResultJson, SchemaPathRelativeToPlanDir) {
  fs::create_directories(dir_.path() / "plans" / "schemas");
  write_file(dir_.path() / "plans" / "schemas" / "status.json", schema_.dump());
  auto ok = run(R"({"status": "done", "count": 0})", std::nullopt, "schemas/status.json");
  EXPECT_TRUE(ok.held) << ok.reason;
  EXPECT_EQ(ok.reason, "result_json: an object (30 bytes), matches schema 'schemas/status.json'");
  auto bad = run(R"({"status": "done"})", std::nullopt, "schemas/status.json");
  EXPECT_FALSE(bad.held);
  EXPECT_EQ(bad.reason.rfind("result_json: the result does not match schema 'schemas/status.json' (1 violation): ", 0),
            0u)
      << bad.reason;
  EXPECT_NE(bad.reason.find("count"), std::string::npos) << bad.reason;
}

TEST_F(ResultJson, SchemaFileEditedBetweenChecksIsReloaded) {
  fs::create_directories(dir_.path() / "plans");
  fs::path file = dir_.path() / "plans" / "s.yaml";
  write_file(file, "type: object\n");
  EXPECT_TRUE(run("{}", std::nullopt, "s.yaml").held);
  write_file(file, "type: array\n# a longer file, so the size differs too\n");
  auto r = run("{}", std::nullopt, "s.yaml");
  EXPECT_FALSE(r.held) << r.reason;
}

TEST_F(ResultJson, MissingOrBrokenSchemaFile) {
  auto missing = run("{}", std::nullopt, "nope.json");
  EXPECT_FALSE(missing.held);
  EXPECT_NE(missing.reason.find("result_json: schema file '"), std::string::npos) << missing.reason;
  EXPECT_NE(missing.reason.find("nope.json' does not exist"), std::string::npos) << missing.reason;
  fs::create_directories(dir_.path() / "plans");
  write_file(dir_.path() / "plans" / "broken.json", "{");
  auto broken = run("{}", std::nullopt, "broken.json");
  EXPECT_FALSE(broken.held);
  EXPECT_NE(broken.reason.find("broken.json"), std::string::npos) << broken.reason;
}

TEST_F(ResultJson, BothSchemasMustHold) {
  fs::create_directories(dir_.path() / "plans");
  write_file(dir_.path() / "plans" / "extra.json", R"({"required": ["extra"]})");
  auto r = run(R"({"status": "ok", "count": 1})", schema_, "extra.json");
  EXPECT_FALSE(r.held);
  EXPECT_NE(r.reason.find("does not match schema 'extra.json'"), std::string::npos) << r.reason;
  auto ok = run(R"({"status": "ok", "count": 1, "extra": true})", schema_, "extra.json");
  EXPECT_TRUE(ok.held) << ok.reason;
  EXPECT_EQ(ok.reason, "result_json: an object (43 bytes), matches the inline schema and matches schema 'extra.json'");
}

TEST_F(ResultJson, InvalidUtf8InsideAStringIsNotJson) {
  auto r = run("\"\xff\"");
  EXPECT_FALSE(r.held);
  EXPECT_NE(r.reason.find("not JSON"), std::string::npos);
  // The reason itself is storable.
  EXPECT_TRUE(json::accept(checks_to_json({r})));
}

}  // namespace
}  // namespace orch
