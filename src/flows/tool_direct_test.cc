// The inputs a tool-direct EXECUTE gives its tool, read from the request alone.
#include "flows/tool_direct.h"

#include <gtest/gtest.h>

#include "testing/testing.h"

namespace orch::flows {
namespace {

using json = nlohmann::json;
using orch::testing::TempDir;
using orch::testing::write_file;

const char* const kRegistry = R"(version: 1
tools:
  stats:
    command: [stats.sh]
    status: prod_ready
    safe_for_agents: true
    risk: low
    output_schema: {type: object}
    commands:
      count:
        args: [{word: "--"}, {input: files}]
        input_schema:
          type: object
          required: [files]
          properties: {files: {type: array, minItems: 1, items: {type: string}}}
        capabilities: [count-lines]
      one:
        args: [{input: file}]
        input_schema: {type: object, required: [file], properties: {file: {type: string}}}
        capabilities: [first-line]
      now:
        capabilities: [tell-time]
      query:
        args: [{input: filter}, {input: file}]
        input_schema: {type: object, required: [filter, file]}
        capabilities: [json-query]
      limit:
        args: [{input: n}]
        input_schema: {type: object, required: [n], properties: {n: {type: integer}}}
        capabilities: [set-limit]
)";

class ToolDirectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = parse_tool_registry(kRegistry, "registry.yml");
    ASSERT_TRUE(loaded) << loaded.error().message;
    registry_ = std::move(*loaded);
    write_file(dir_ / "README.md", "a\n");
    write_file(dir_ / "notes.txt", "b\n");
    write_file(dir_ / "docs" / "guide.md", "c\n");
  }

  Expected<ToolDirectCall> call(const std::string& request, const std::string& command,
                                const std::string& capability) {
    Trace t;
    t.request = request;
    t.llm = "none";
    t.engine_results["route"] = {
        {"status", "ok"},
        {"tool", {{"chosen", true}, {"tool", "stats"}, {"command", command}, {"capability", capability}}}};
    return tool_direct_call(t, &registry_, dir_.path());
  }

  TempDir dir_;
  ToolRegistry registry_;
};

TEST_F(ToolDirectTest, TheFilesTheRequestNamesFillTheOneRequiredInput) {
  auto c = call("count the lines of the readme, notes.txt and `docs/guide.md`.", "count", "count-lines");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(json::parse(c->inputs.dump()),
            json({{"command", "count"}, {"files", {"README.md", "notes.txt", "docs/guide.md"}}}));
  EXPECT_EQ(c->describe(), R"(stats count with {"files":["README.md","notes.txt","docs/guide.md"]})");
}

TEST_F(ToolDirectTest, AStringInputTakesExactlyOneFile) {
  auto one = call("the first line of notes", "one", "first-line");
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->inputs["file"], "notes.txt");
  auto two = call("the first line of notes and readme", "one", "first-line");
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("names 2 files"), std::string::npos) << two.error().message;
}

TEST_F(ToolDirectTest, ASubCommandWithoutRequiredInputsGetsItsCommandAlone) {
  auto c = call("tell the time of the readme", "now", "tell-time");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(json::parse(c->inputs.dump()), json({{"command", "now"}}));
}

TEST_F(ToolDirectTest, WhatARequestCannotGiveWithoutAModelIsAnError) {
  auto none = call("count the lines of the changelog", "count", "count-lines");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("names no file"), std::string::npos) << none.error().message;
  auto two_inputs = call("json query over notes", "query", "json-query");
  ASSERT_FALSE(two_inputs);
  EXPECT_NE(two_inputs.error().message.find("requires the inputs filter, file"), std::string::npos);
  auto number = call("set limit of readme", "limit", "set-limit");
  ASSERT_FALSE(number);
  EXPECT_NE(number.error().message.find("takes no file name"), std::string::npos) << number.error().message;
  auto outside = call("count the lines of ../etc/passwd", "count", "count-lines");
  ASSERT_FALSE(outside) << "a path out of the workspace names no file";
}

TEST_F(ToolDirectTest, AWordThatCouldNameTwoFilesIsAnError) {
  write_file(dir_ / "notes.md", "d\n");
  auto c = call("count the lines of the notes", "count", "count-lines");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("'notes' could name any of notes.md, notes.txt"), std::string::npos)
      << c.error().message;
}

TEST_F(ToolDirectTest, NoToolChosenOrAToolGoneFromTheRegistryIsAnError) {
  Trace t;
  t.request = "count the lines of the readme";
  t.llm = "none";
  t.engine_results["route"] = {{"status", "FAILED"}, {"error", "bad table"}};
  auto failed = tool_direct_call(t, &registry_, dir_.path());
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message.find("bad table"), std::string::npos);
  EXPECT_FALSE(call("count the lines of the readme", "gone", "count-lines"));
  EXPECT_TRUE(is_tool_direct(t));
  t.llm = "required";
  EXPECT_FALSE(is_tool_direct(t));
}

}  // namespace
}  // namespace orch::flows
