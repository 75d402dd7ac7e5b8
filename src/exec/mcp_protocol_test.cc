#include "exec/mcp_protocol.h"

#include <gtest/gtest.h>

namespace orch::mcp {
namespace {

TEST(McpProtocol, InitializeAsksForTheCurrentRevision) {
  const json params = initialize_params();
  EXPECT_EQ(params["protocolVersion"], "2025-11-25");
  EXPECT_EQ(params["clientInfo"]["name"], "orch");
  EXPECT_TRUE(params["capabilities"].is_object());
}

TEST(McpProtocol, TheThreeRevisionsAreAcceptedAndNoOther) {
  for (const char* version : {"2025-11-25", "2025-06-18", "2025-03-26"}) {
    auto accepted = accepted_version(json{{"protocolVersion", version}});
    ASSERT_TRUE(accepted) << version;
    EXPECT_EQ(*accepted, version);
  }
  auto old = accepted_version(json{{"protocolVersion", "2024-11-05"}});
  ASSERT_FALSE(old);
  EXPECT_NE(old.error().message.find("it speaks MCP 2024-11-05"), std::string::npos) << old.error().message;
  EXPECT_FALSE(accepted_version(json::object()));
}

TEST(McpProtocol, AToolPageKeepsSchemasAnnotationsAndTheCursor) {
  auto page = parse_tool_page(json::parse(R"({
    "tools": [
      {"name": "write_file", "title": "Write", "description": "Writes.",
       "inputSchema": {"type": "object", "required": ["path"]},
       "outputSchema": {"type": "object"},
       "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true}},
      {"name": "bare", "inputSchema": {"type": "object"}}
    ],
    "nextCursor": "page-2"})"));
  ASSERT_TRUE(page) << page.error().message;
  ASSERT_EQ(page->tools.size(), 2u);
  EXPECT_EQ(page->next_cursor, "page-2");
  const ToolInfo& write = page->tools[0];
  EXPECT_EQ(write.title, "Write");
  EXPECT_EQ(write.input_schema["required"][0], "path");
  EXPECT_TRUE(write.output_schema.is_object());
  EXPECT_EQ(write.annotations.destructive, true);
  EXPECT_EQ(write.annotations.open_world, std::nullopt);
  EXPECT_TRUE(page->tools[1].output_schema.is_null());
  EXPECT_FALSE(parse_tool_page(json{{"tools", {{{"title", "no name"}}}}}));
  EXPECT_FALSE(parse_tool_page(json::object()));
}

TEST(McpProtocol, ACallResultJoinsItsTextAndKeepsStructuredContent) {
  auto result = parse_call_result(json::parse(R"({
    "content": [{"type": "text", "text": "one"}, {"type": "image", "data": "x", "mimeType": "image/png"},
                {"type": "text", "text": "two"}],
    "structuredContent": {"n": 1}})"));
  ASSERT_TRUE(result);
  EXPECT_FALSE(result->is_error);
  EXPECT_EQ(result->text, "one\ntwo");
  ASSERT_TRUE(result->structured);
  EXPECT_EQ((*result->structured)["n"], 1);

  auto failed =
      parse_call_result(json::parse(R"({"content": [{"type": "text", "text": "no"}], "isError": true})"));
  ASSERT_TRUE(failed);
  EXPECT_TRUE(failed->is_error);
  EXPECT_FALSE(failed->structured);
}

// MCP's defaults: readOnlyHint false, destructiveHint true.
TEST(McpProtocol, AToolMayDestroyUnlessItsAnnotationsSayOtherwise) {
  EXPECT_EQ(annotation_risk(ToolAnnotations{}), RiskLevel::Medium);  // no annotations
  EXPECT_EQ(annotation_risk(ToolAnnotations{true, std::nullopt, std::nullopt, std::nullopt}), RiskLevel::Low);
  EXPECT_EQ(annotation_risk(ToolAnnotations{false, false, std::nullopt, std::nullopt}), RiskLevel::Low);
  EXPECT_EQ(annotation_risk(ToolAnnotations{false, true, std::nullopt, std::nullopt}), RiskLevel::Medium);
  EXPECT_EQ(annotation_risk(ToolAnnotations{std::nullopt, std::nullopt, true, false}), RiskLevel::Medium);
  // destructiveHint means nothing for a read-only tool.
  EXPECT_EQ(annotation_risk(ToolAnnotations{true, true, std::nullopt, std::nullopt}), RiskLevel::Low);
}

}  // namespace
}  // namespace orch::mcp
