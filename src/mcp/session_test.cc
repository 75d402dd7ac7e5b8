#include "mcp/session.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "mcp/tool_catalog.h"

namespace orch::mcp {
namespace {

using json = nlohmann::json;

jsonrpc::Message message(const std::string& text) {
  auto m = jsonrpc::parse(text);
  EXPECT_TRUE(m) << text;
  return *m;
}

class SessionTest : public ::testing::Test {
 protected:
  std::vector<std::pair<std::string, json>> calls;
  ToolResult next = ToolResult::ok(json::object(), "ok");
  Session session{ToolCatalog::shipped(), [this](const std::string& name, const json& args) {
                    calls.emplace_back(name, args);
                    return next;
                  }};

  json ask(int id, const std::string& method, json params = nullptr) {
    auto reply = session.handle(message(jsonrpc::line(jsonrpc::request(id, method, std::move(params)))));
    EXPECT_TRUE(reply.has_value()) << method;
    return reply.value_or(json());
  }
  void initialize(const std::string& version = "2025-11-25") {
    json r = ask(
        1, "initialize",
        {{"protocolVersion", version}, {"capabilities", json::object()}, {"clientInfo", {{"name", "t"}}}});
    ASSERT_TRUE(r.contains("result")) << r.dump();
    session.handle(message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  }
};

TEST(ToolCatalog, ListsExactlyTheToolsOrchAnswers) {
  const ToolCatalog& catalog = ToolCatalog::shipped();
  auto listed = catalog.names();
  auto answered = OrchTools::tool_names();
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, answered);
  for (const auto& t : catalog.tools()) {
    EXPECT_EQ(t.listing["inputSchema"]["type"], "object") << t.name;
    EXPECT_EQ(t.listing["outputSchema"]["type"], "object") << t.name;
    EXPECT_TRUE(t.listing["annotations"].contains("readOnlyHint")) << t.name;
    EXPECT_FALSE(t.listing["description"].get<std::string>().empty()) << t.name;
  }
  EXPECT_EQ(catalog.find("approve"), nullptr);
}

TEST(ToolCatalog, RefusesABrokenCatalogueByName) {
  auto missing = parse_tool_catalog(R"({"tools": [{"name": "x"}]})");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("tools[0]: 'title'"), std::string::npos) << missing.error().message;
  auto unknown = parse_tool_catalog(
      R"({"tools": [{"name": "x", "title": "X", "description": "d", "outputSchema": "nope.schema.json",
                     "annotations": {}, "inputSchema": {"type": "object"}}]})");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("no schemas/nope.schema.json"), std::string::npos);
  auto twice = parse_tool_catalog(
      R"({"tools": [{"name": "x", "title": "X", "description": "d", "outputSchema": "trace.schema.json",
                     "annotations": {}, "inputSchema": {"type": "object"}},
                    {"name": "x", "title": "X", "description": "d", "outputSchema": "trace.schema.json",
                     "annotations": {}, "inputSchema": {"type": "object"}}]})");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("listed twice"), std::string::npos);
}

TEST_F(SessionTest, OnlyPingAndInitializeBeforeInitialize) {
  EXPECT_EQ(ask(1, "ping")["result"], json::object());
  json early = ask(2, "tools/list");
  EXPECT_EQ(early["error"]["code"], -32600);
  EXPECT_NE(early["error"]["message"].get<std::string>().find("initialize"), std::string::npos);
  EXPECT_EQ(session.phase(), Session::Phase::New);
  initialize();
  EXPECT_EQ(session.phase(), Session::Phase::Ready);
  EXPECT_EQ(ask(3, "initialize", {{"protocolVersion", "2025-11-25"}})["error"]["code"], -32600);
}

TEST_F(SessionTest, NegotiatesTheProtocolVersion) {
  json r = ask(1, "initialize", {{"protocolVersion", "2025-03-26"}, {"capabilities", json::object()}});
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "orch");
  EXPECT_EQ(r["result"]["capabilities"]["tools"]["listChanged"], false);
  Session other(ToolCatalog::shipped(), nullptr);
  auto newest = other.handle(
      message(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2030-01-01"}})"));
  EXPECT_EQ((*newest)["result"]["protocolVersion"], "2025-11-25");
  Session third(ToolCatalog::shipped(), nullptr);
  auto none = third.handle(message(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{}})"));
  EXPECT_EQ(third.phase(), Session::Phase::New);
  EXPECT_EQ((*none)["error"]["code"], -32602);
}

TEST_F(SessionTest, ToolsCallChecksArgumentsThenAnswersTheDocument) {
  initialize();
  json list = ask(2, "tools/list");
  EXPECT_EQ(list["result"]["tools"].size(), ToolCatalog::shipped().tools().size());
  // Arguments that do not match: a tool error, and the tool is not called.
  json bad = ask(3, "tools/call", {{"name", "task_log"}, {"arguments", {{"trace", "t"}, {"state", "NAP"}}}});
  EXPECT_EQ(bad["result"]["isError"], true);
  EXPECT_NE(bad["result"]["content"][0]["text"].get<std::string>().find("/state"), std::string::npos);
  EXPECT_TRUE(calls.empty());
  // A tool error passes through with its text.
  next = ToolResult::error("no trace 't'");
  json failed = ask(4, "tools/call", {{"name", "task_show"}, {"arguments", {{"trace", "t"}}}});
  EXPECT_EQ(failed["result"]["isError"], true);
  EXPECT_EQ(failed["result"]["content"][0]["text"], "no trace 't'");
  EXPECT_FALSE(failed["result"].contains("structuredContent"));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].first, "task_show");
  // A document that does not follow the tool's outputSchema is never sent as if it did.
  next = ToolResult::ok(json{{"not", "a run report"}}, "ok");
  json drift = ask(5, "tools/call", {{"name", "status"}, {"arguments", json::object()}});
  EXPECT_EQ(drift["result"]["isError"], true);
  EXPECT_NE(drift["result"]["content"][0]["text"].get<std::string>().find("run-report.schema.json"),
            std::string::npos);
  // An unknown tool is a protocol error with a did-you-mean.
  json unknown = ask(6, "tools/call", {{"name", "stauts"}});
  EXPECT_EQ(unknown["error"]["code"], -32602);
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("status"), std::string::npos);
  EXPECT_EQ(ask(7, "resources/list")["error"]["code"], -32601);
  EXPECT_EQ(ask(8, "tools/list", {{"cursor", "x"}})["error"]["code"], -32602);
}

TEST_F(SessionTest, NotificationsAndResponsesAreNotAnswered) {
  initialize();
  EXPECT_FALSE(session.handle(message(R"({"jsonrpc":"2.0","method":"notifications/progress"})")));
  EXPECT_FALSE(session.handle(message(R"({"jsonrpc":"2.0","id":9,"result":{}})")));
}

}  // namespace
}  // namespace orch::mcp
