#include "util/json_schema.h"

#include <gtest/gtest.h>

#include <thread>

#include "testing/testing.h"

namespace orch {
namespace {

using nlohmann::json;
using testing::TempDir;
using testing::write_file;

const json kPlanish = json::parse(R"({
  "type": "object",
  "required": ["steps"],
  "properties": {
    "steps": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["id"],
        "properties": {"id": {"type": "string"}, "n": {"type": "integer", "minimum": 1}}
      }
    }
  }
})");

bool any_contains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

TEST(JsonSchema, ValidDocumentHasNoViolations) {
  auto schema = JsonSchema::parse(kPlanish);
  ASSERT_TRUE(schema) << schema.error().message;
  EXPECT_TRUE(schema->validate(json::parse(R"({"steps": [{"id": "a", "n": 2}]})")).empty());
}

// valijson reads draft 7: a keyword of a later draft, or a misspelt one, would be
// passed over and the check would hold where its author meant it to fail. Refused,
// saying where; keys that are no keyword are annotations, and names under
// `properties` (or values under an unknown key) are not keywords at all.
TEST(JsonSchema, KeywordsItWouldPassOverAreRefused) {
  for (auto [text, fragment] :
       {std::pair{R"({"type": "array", "prefixItems": [{"type": "string"}]})",
                  "'prefixItems' at # is a keyword of JSON Schema 2019-09/2020-12"},
        std::pair{R"({"properties": {"a": {"type": "object", "unevaluatedProperties": false}}})",
                  "'unevaluatedProperties' at #/properties/a"},
        std::pair{R"({"dependentRequired": {"card": ["billing"]}})", "draft 7 writes it as 'dependencies'"},
        std::pair{R"({"type": "object", "requird": ["b"]})",
                  "unknown keyword 'requird' at # (did you mean 'required'?)"},
        std::pair{R"({"items": [{"typ": "integer"}]})",
                  "unknown keyword 'typ' at #/items/0 (did you mean 'type'?)"}}) {
    auto schema = JsonSchema::parse(json::parse(text));
    ASSERT_FALSE(schema) << text;
    EXPECT_NE(schema.error().message.find(fragment), std::string::npos) << schema.error().message;
  }
  for (const char* fine : {R"({"type": "object", "x-unit": "ms", "example": {"a": 1}, "nullable": true})",
                           R"({"properties": {"requird": {"type": "string"}, "typ": {}}})",
                           R"({"x-extra": {"typ": 1, "prefixItems": 2}, "$defs": {"n": {"type": "integer"}},
                               "properties": {"n": {"$ref": "#/$defs/n"}}})"}) {
    auto schema = JsonSchema::parse(json::parse(fine));
    EXPECT_TRUE(schema) << fine << ": " << schema.error().message;
  }
}

// From draft 6 on, a number without a fractional part is an integer however it
// is written: 2.0 and 1e3 pass "integer" (and a model's `{"n": 3.0}` a result_json check).
TEST(JsonSchema, ANumberWithoutAFractionIsAnInteger) {
  auto schema = JsonSchema::parse(kPlanish);
  ASSERT_TRUE(schema);
  EXPECT_TRUE(
      schema->validate(json::parse(R"({"steps": [{"id": "a", "n": 2.0}, {"id": "b", "n": 1e3}]})")).empty());
  auto fraction = schema->validate(json::parse(R"({"steps": [{"id": "a", "n": 2.5}]})"));
  EXPECT_TRUE(any_contains(fraction, "/steps/0/n: ")) << ::testing::PrintToString(fraction);
  auto below = schema->validate(json::parse(R"({"steps": [{"id": "a", "n": 0.0}]})"));
  EXPECT_TRUE(any_contains(below, "/steps/0/n: ")) << ::testing::PrintToString(below);
}

TEST(JsonSchema, ViolationsCarryJsonPointers) {
  auto schema = JsonSchema::parse(kPlanish);
  ASSERT_TRUE(schema);
  auto lines = schema->validate(json::parse(R"({"steps": [{"id": "a"}, {"id": 5, "n": 0}]})"));
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(any_contains(lines, "/steps/1/id: ")) << ::testing::PrintToString(lines);
  EXPECT_TRUE(any_contains(lines, "/steps/1/n: ")) << ::testing::PrintToString(lines);
  EXPECT_FALSE(any_contains(lines, "/steps/0/")) << ::testing::PrintToString(lines);
}

TEST(JsonSchema, RootViolation) {
  auto schema = JsonSchema::parse(kPlanish);
  ASSERT_TRUE(schema);
  auto lines = schema->validate(json::parse("[1]"));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("(root): ", 0), 0u) << lines[0];
  auto missing = schema->validate(json::object());
  ASSERT_FALSE(missing.empty());
  EXPECT_TRUE(any_contains(missing, "steps")) << ::testing::PrintToString(missing);
}

TEST(JsonSchema, PointerEscapesSlashAndTilde) {
  auto schema = JsonSchema::parse(json::parse(R"({"additionalProperties": {"type": "string"}})"));
  ASSERT_TRUE(schema);
  auto lines = schema->validate(json::parse(R"({"a/b~c": 1})"));
  EXPECT_TRUE(any_contains(lines, "/a~1b~0c: ")) << ::testing::PrintToString(lines);
}

TEST(JsonSchema, BadSchemaIsInvalidInput) {
  auto bad = JsonSchema::parse(json::parse(R"({"type": 5})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(bad.error().message.find("not a usable JSON Schema"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(JsonSchema::parse(json::parse(R"({"required": "id"})")));
  EXPECT_FALSE(JsonSchema::parse(json::parse(R"({"$ref": "http://example.com/x.json"})")));
  EXPECT_FALSE(JsonSchema::parse(json(42)));
}

TEST(JsonSchema, BooleanAndEmptySchemas) {
  auto any = JsonSchema::parse(json::object());
  ASSERT_TRUE(any);
  EXPECT_TRUE(any->validate(json::parse(R"([1, "x"])")).empty());
  auto never = JsonSchema::parse(json(false));
  ASSERT_TRUE(never);
  EXPECT_FALSE(never->validate(json(1)).empty());
  auto no_x = JsonSchema::parse(json::parse(R"({"properties": {"x": false}})"));
  ASSERT_TRUE(no_x);
  EXPECT_TRUE(no_x->validate(json::parse(R"({"y": 1})")).empty());
  auto lines = no_x->validate(json::parse(R"({"x": 1})"));
  EXPECT_FALSE(lines.empty());
}

TEST(JsonSchema, LocalRefs) {
  auto schema = JsonSchema::parse(json::parse(R"({
    "definitions": {"id": {"type": "string", "pattern": "^[a-z]+$"}},
    "type": "array", "items": {"$ref": "#/definitions/id"}
  })"));
  ASSERT_TRUE(schema) << schema.error().message;
  EXPECT_TRUE(schema->validate(json::parse(R"(["ab", "c"])")).empty());
  auto lines = schema->validate(json::parse(R"(["ab", "C"])"));
  EXPECT_TRUE(any_contains(lines, "/1: ")) << ::testing::PrintToString(lines);
}

// A schema that applies itself to the same value without descending into it
// would recurse until the stack overflows; it is refused when parsed, naming the
// loop. Recursion that descends (a tree of nodes) is fine.
TEST(JsonSchema, SchemasThatLoopOnTheSameValueAreRefused) {
  auto refused = [](const char* text) {
    auto schema = JsonSchema::parse(json::parse(text));
    EXPECT_FALSE(schema.has_value()) << text;
    return schema ? std::string() : schema.error().message;
  };
  EXPECT_NE(refused(R"({"$ref": "#"})").find("without end (# -> #)"), std::string::npos);
  EXPECT_NE(refused(R"({"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
                        "$ref": "#/definitions/a"})")
                .find("#/definitions/a -> #/definitions/b -> #/definitions/a"),
            std::string::npos);
  refused(R"({"definitions": {"n": {"anyOf": [{"type": "null"}, {"$ref": "#/definitions/n"}]}}})");
  refused(R"({"not": {"allOf": [{"$ref": "#"}]}})");
  refused(R"({"if": {"$ref": "#"}})");
  refused(R"({"dependencies": {"x": {"$ref": "#"}}})");
  // Other spellings valijson would follow to the same place are not followed:
  // only a plain pointer to a part that exists is a usable $ref.
  for (const char* other : {R"({"$ref": "#/"})",
                            R"({"definitions": {"a": {"$ref": "#/definitions/a/"}}, "$ref": "#/definitions/a"})",
                            R"({"definitions": {"a": {"$ref": "#/definitions/%61"}}, "$ref": "#/definitions/a"})",
                            R"({"id": "http://x/s.json", "allOf": [{"$ref": "http://x/s.json#"}]})",
                            R"({"$ref": "#/definitions/missing"})", R"({"$ref": "other.json"})",
                            R"({"$ref": 5})"}) {
    EXPECT_NE(refused(other).find("only a reference to a part of this same schema is supported"), std::string::npos)
        << other;
  }

  // Under properties and definitions, keys are names, whatever they are called:
  // a loop under a property named like a keyword is found too.
  for (const char* name : {"type", "id", "default", "required", "enum", "const", "examples", "$ref"}) {
    json looping = {{"properties", {{name, {{"$ref", "#/properties/" + std::string(name)}}}}}};
    EXPECT_NE(refused(looping.dump().c_str()).find("without end"), std::string::npos) << name;
    json remote = {{"definitions", {{name, {{"$ref", "common.json#/Type"}}}}}};
    EXPECT_NE(refused(remote.dump().c_str()).find("only a reference to a part of this same schema"),
              std::string::npos)
        << name;
  }
  // ... and a property named "$ref" is a property, not a reference.
  auto named_ref = JsonSchema::parse(json::parse(R"({"properties": {"$ref": {"type": "string"}}})"));
  ASSERT_TRUE(named_ref.has_value()) << named_ref.error().message;
  EXPECT_FALSE(named_ref->validate(json::parse(R"({"$ref": 5})")).empty());

  // Alternatives that lead on to the same subschemas multiply: 2^40 ways to try
  // on one value. Refused before valijson tries them all (it took minutes and
  // tens of GB).
  json defs = json::object();
  for (int i = 0; i < 40; ++i) {
    std::string next = "#/definitions/n" + std::to_string(i + 1);
    defs["n" + std::to_string(i)] = {{"oneOf", json::array({{{"$ref", next}}, {{"$ref", next}}})}};
  }
  defs["n40"] = {{"type", "string"}};
  EXPECT_NE(refused(json{{"definitions", defs}, {"$ref", "#/definitions/n0"}}.dump().c_str())
                .find("counting each way through allOf, anyOf, oneOf and $ref"),
            std::string::npos);

  auto tree = JsonSchema::parse(json::parse(R"({
    "definitions": {"node": {"anyOf": [{"type": "null"},
      {"type": "object", "properties": {"next": {"$ref": "#/definitions/node"}}}]}},
    "$ref": "#/definitions/node", "items": {"$ref": "#"}})"));
  ASSERT_TRUE(tree.has_value()) << tree.error().message;
  EXPECT_TRUE(tree->validate(json::parse(R"({"next": {"next": null}})")).empty());
  EXPECT_FALSE(tree->validate(json::parse(R"({"next": {"next": 5}})")).empty());
}

// Parsing and validating recurse once per level: a deeper schema is refused, a
// deeper value fails with a line that says why, and neither overflows the stack.
TEST(JsonSchema, DeepSchemasAndValuesAreRefusedNotRecursedInto) {
  auto nested = [](int levels) { return json::parse(std::string(levels, '[') + std::string(levels, ']')); };
  auto deep_schema = JsonSchema::parse(json{{"allOf", nested(30000)}});
  ASSERT_FALSE(deep_schema.has_value());
  EXPECT_NE(deep_schema.error().message.find("nests deeper than 500 levels"), std::string::npos);

  auto any_depth = JsonSchema::parse(json::parse(R"({"type": "array", "items": {"$ref": "#"}})"));
  ASSERT_TRUE(any_depth.has_value());
  EXPECT_TRUE(any_depth->validate(nested(JsonSchema::kMaxValueDepth)).empty());
  auto lines = any_depth->validate(nested(30000));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "(root): the value nests deeper than 500 levels");
  // Nor does the look for integral floats (2.0) that comes before valijson: a
  // result 400,000 levels deep with a float at the bottom is refused the same way.
  const int levels = 400000;
  auto float_at_the_bottom = json::parse(std::string(levels, '[') + "1.0" + std::string(levels, ']'));
  auto deep_float = any_depth->validate(float_at_the_bottom);
  ASSERT_EQ(deep_float.size(), 1u);
  EXPECT_EQ(deep_float[0], "(root): the value nests deeper than 500 levels");

  // valijson recurses through the chain of subschemas applied to one value at
  // every level: a long chain times a deep value is refused too, and a chain past
  // the limit makes the schema unusable.
  auto chain_of = [](int links) {
    json defs = json::object();
    for (int i = 0; i < links; ++i)
      defs["n" + std::to_string(i)] =
          i + 1 < links ? json{{"allOf", json::array({json{{"$ref", "#/definitions/n" + std::to_string(i + 1)}}})}}
                        : json{{"items", json{{"$ref", "#/definitions/n0"}}}};
    return json{{"definitions", defs}, {"$ref", "#/definitions/n0"}};
  };
  auto long_chain = JsonSchema::parse(chain_of(240));
  ASSERT_TRUE(long_chain.has_value()) << long_chain.error().message;
  auto deep_lines = long_chain->validate(nested(480));
  ASSERT_EQ(deep_lines.size(), 1u);
  EXPECT_NE(deep_lines[0].find("the schema applies up to"), std::string::npos) << deep_lines[0];
  EXPECT_TRUE(long_chain->validate(nested(10)).empty());
  auto too_long = JsonSchema::parse(chain_of(600));
  ASSERT_FALSE(too_long.has_value());
  EXPECT_NE(too_long.error().message.find("subschemas to one value"), std::string::npos) << too_long.error().message;
}

TEST(JsonSchema, BadPatternIsRejectedWhenParsed) {
  auto schema = JsonSchema::parse(json::parse(R"({"type": "string", "pattern": "("})"));
  ASSERT_FALSE(schema);
  EXPECT_EQ(schema.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(schema.error().message.find("bad regex '('"), std::string::npos) << schema.error().message;
  auto nested = JsonSchema::parse(json::parse(R"({"items": [{"properties": {"a": {"pattern": "[z-a]"}}}]})"));
  EXPECT_FALSE(nested);
}

TEST(JsonSchema, PatternOnAHugeStringDoesNotOverflowTheStack) {
  // std::regex (valijson's own engine) crashes on strings of ~100 KB.
  auto schema = JsonSchema::parse(json::parse(R"({"properties": {"text": {"type": "string", "pattern": "^[a-z]+$"}}})"));
  ASSERT_TRUE(schema) << schema.error().message;
  json doc = {{"text", std::string(1024 * 1024, 'a')}};
  EXPECT_TRUE(schema->validate(doc).empty());
  doc["text"] = std::string(1024 * 1024, 'a') + "1";
  auto lines = schema->validate(doc);
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0].rfind("/text: String does not match pattern '^[a-z]+$' (value: \"aaaa", 0), 0u) << lines[0];
  EXPECT_LT(lines[0].size(), 120u);
}

TEST(JsonSchema, PatternEverywhereASchemaCanBe) {
  auto schema = JsonSchema::parse(json::parse(R"({
    "$defs": {"word": {"pattern": "^w"}},
    "x-stash": {"code": {"pattern": "^c"}},
    "properties": {
      "pattern": {"type": "string"},
      "a": {"$ref": "#/$defs/word"},
      "b": {"$ref": "#/x-stash/code"},
      "c": {"items": {"pattern": "^i"}},
      "d": {"anyOf": [{"type": "number"}, {"pattern": "^any"}]},
      "e": {"enum": [{"pattern": "not a schema"}]}
    }
  })"));
  ASSERT_TRUE(schema) << schema.error().message;
  EXPECT_TRUE(schema->validate(json::parse(R"({"pattern": "x", "a": "wa", "b": "cb", "c": ["i1", "i2"],
                                               "d": "anything", "e": {"pattern": "not a schema"}})"))
                  .empty());
  auto lines = schema->validate(json::parse(R"({"a": "x", "b": "x", "c": ["i", "x"], "d": "x"})"));
  EXPECT_TRUE(any_contains(lines, "/a: String does not match pattern '^w'")) << ::testing::PrintToString(lines);
  EXPECT_TRUE(any_contains(lines, "/b: String does not match pattern '^c'")) << ::testing::PrintToString(lines);
  EXPECT_TRUE(any_contains(lines, "/c/1: String does not match pattern '^i'")) << ::testing::PrintToString(lines);
  EXPECT_TRUE(any_contains(lines, "/d: ")) << ::testing::PrintToString(lines);
  // 'pattern' applies to strings only.
  EXPECT_TRUE(schema->validate(json::parse(R"({"a": 5})")).empty());
}

TEST(JsonSchema, LoadJsonAndYamlFiles) {
  TempDir dir;
  write_file(dir / "s.json", R"({"type": "object", "required": ["ok"]})");
  write_file(dir / "s.yaml", "type: object\nproperties:\n  count: {type: integer, maximum: 3}\n");
  auto from_json = JsonSchema::load_file((dir / "s.json").string());
  ASSERT_TRUE(from_json) << from_json.error().message;
  EXPECT_FALSE(from_json->validate(json::object()).empty());
  EXPECT_TRUE(from_json->validate(json::parse(R"({"ok": 1})")).empty());
  auto from_yaml = JsonSchema::load_file((dir / "s.yaml").string());
  ASSERT_TRUE(from_yaml) << from_yaml.error().message;
  EXPECT_TRUE(from_yaml->validate(json::parse(R"({"count": 3})")).empty());
  auto lines = from_yaml->validate(json::parse(R"({"count": 4})"));
  EXPECT_TRUE(any_contains(lines, "/count: ")) << ::testing::PrintToString(lines);
}

TEST(JsonSchema, LoadFileErrors) {
  TempDir dir;
  auto missing = JsonSchema::load_file((dir / "nope.json").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::NotFound);
  EXPECT_NE(missing.error().message.find("nope.json' does not exist"), std::string::npos);

  write_file(dir / "broken.json", "{\"type\": ");
  auto broken = JsonSchema::load_file((dir / "broken.json").string());
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(broken.error().message.find("broken.json"), std::string::npos);
  EXPECT_NE(broken.error().message.find("parse error"), std::string::npos) << broken.error().message;

  write_file(dir / "broken.yaml", "type: [object\n");
  auto broken_yaml = JsonSchema::load_file((dir / "broken.yaml").string());
  ASSERT_FALSE(broken_yaml);
  EXPECT_NE(broken_yaml.error().message.find("broken.yaml': line "), std::string::npos) << broken_yaml.error().message;
  // Every YAML problem names its line: a tab, a key written twice.
  write_file(dir / "tab.yaml", "type: object\nproperties:\n\tcount: {type: integer}\n");
  auto tab = JsonSchema::load_file((dir / "tab.yaml").string());
  ASSERT_FALSE(tab);
  EXPECT_NE(tab.error().message.find("tab.yaml': line 3: found character that cannot start any token (a tab"),
            std::string::npos)
      << tab.error().message;
  write_file(dir / "twice.yaml", "type: object\nrequired: [a]\ntype: array\n");
  auto twice = JsonSchema::load_file((dir / "twice.yaml").string());
  ASSERT_FALSE(twice);
  EXPECT_NE(
      twice.error().message.find("twice.yaml': line 3: key 'type' is written twice in one mapping (first at "
                                 "line 1)"),
      std::string::npos)
      << twice.error().message;

  write_file(dir / "bad.yaml", "type: 5\n");
  auto bad = JsonSchema::load_file((dir / "bad.yaml").string());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.yaml': not a usable JSON Schema"), std::string::npos) << bad.error().message;
}

TEST(JsonSchema, CopiesValidateFromSeveralThreads) {
  auto schema = JsonSchema::parse(kPlanish);
  ASSERT_TRUE(schema);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t, copy = *schema] {
      for (int i = 0; i < 200; ++i) {
        if (copy.validate(json::parse(R"({"steps": [{"id": 1}]})")).empty()) ++failures[t];
        if (!copy.validate(json::parse(R"({"steps": [{"id": "x"}]})")).empty()) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace orch
