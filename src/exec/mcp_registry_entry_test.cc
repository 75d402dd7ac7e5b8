// `kind: mcp` registry entries: what loads, and every problem as "FILE:LINE: FIELD: message".
#include "exec/mcp_registry_entry.h"

#include <gtest/gtest.h>

#include "exec/tool_registry.h"

namespace orch {
namespace {

std::string mcp_load_error(const std::string& text) {
  auto registry = parse_tool_registry(text, "registry.yml", "/reg");
  if (registry) {
    ADD_FAILURE() << "loaded, but should not have:\n" << text;
    return "";
  }
  EXPECT_EQ(registry.error().code, ErrorCode::InvalidInput);
  return registry.error().message;
}

TEST(McpRegistryEntry, AStdioServerLoadsWithEveryField) {
  auto registry = parse_tool_registry(R"(tools:
  fs:
    kind: mcp
    description: files
    command: [node, server.js, /tmp]
    env: {ROOT: /tmp, LEVEL: "3"}
    cwd: servers
    status: prod_ready
    safe_for_agents: true
    risk: low
    max_concurrency: 2
    tools:
      write_file: {risk: medium}
      read_file: {risk: LOW}
)",
                                      "registry.yml", "/reg");
  ASSERT_TRUE(registry) << registry.error().message;
  const RegisteredTool& fs = registry->tools.at("fs");
  EXPECT_EQ(fs.kind, ToolKind::Mcp);
  EXPECT_EQ(fs.command, (std::vector<std::string>{"node", "server.js", "/tmp"}));
  EXPECT_EQ(fs.mcp.env, (std::vector<std::pair<std::string, std::string>>{{"ROOT", "/tmp"}, {"LEVEL", "3"}}));
  EXPECT_EQ(fs.mcp.cwd, std::filesystem::path("/reg/servers"));
  EXPECT_EQ(fs.mcp.max_concurrency, 2);
  EXPECT_EQ(fs.mcp.tools.at("write_file").risk, RiskLevel::Medium);
  EXPECT_EQ(fs.mcp.tools.at("read_file").risk, RiskLevel::Low);
  EXPECT_TRUE(fs.commands.empty());

  auto found = registry->find_mcp("fs.write_file");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->first, &fs);
  EXPECT_EQ(found->second, "write_file");
  EXPECT_FALSE(registry->find_mcp("fs"));
  EXPECT_FALSE(registry->find_mcp("other.write_file"));
}

TEST(McpRegistryEntry, AnHttpServerTakesTheDefaultConcurrency) {
  auto registry = parse_tool_registry(
      "tools:\n  web:\n    kind: mcp\n    url: http://127.0.0.1:3001/mcp\n    status: in_progress\n    risk: "
      "medium\n",
      "registry.yml");
  ASSERT_TRUE(registry) << registry.error().message;
  const RegisteredTool& web = registry->tools.at("web");
  EXPECT_EQ(web.mcp.url, "http://127.0.0.1:3001/mcp");
  EXPECT_TRUE(web.command.empty());
  EXPECT_EQ(web.mcp.max_concurrency, McpServerSpec::kDefaultMaxConcurrency);
}

TEST(McpRegistryEntry, ACliToolNamedWithADotIsNotAServersTool) {
  auto registry = parse_tool_registry(R"(tools:
  a.b:
    command: [/bin/true]
    status: prod_ready
    risk: low
    commands:
      run: {output_schema: {}}
)",
                                      "registry.yml");
  ASSERT_TRUE(registry) << registry.error().message;
  EXPECT_FALSE(registry->find_mcp("a.b"));
}

TEST(McpRegistryEntry, EveryProblemNamesItsLineAndField) {
  const std::string error = mcp_load_error(R"(tools:
  my.server:
    kind: mcp
    command: [node, s.js]
    url: ftp://x
    status: prod_ready
    risk: low
    max_concurrency: 0
    env: {ok: 1}
    commands: {}
    tools:
      write_file: {risk: huge, readonly: true}
  other:
    kind: mpc
    status: prod_ready
    risk: low
  third:
    kind: mcp
    status: prod_ready
    risk: low
)");
  EXPECT_NE(error.find("registry.yml:2: tools.my.server: an MCP server's name has no '.'"), std::string::npos)
      << error;
  EXPECT_NE(error.find("registry.yml:2: tools.my.server: give `command` (a server on stdio) or `url`"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("registry.yml:5: tools.my.server.url: 'ftp://x' is not an http:// or https:// URL"),
            std::string::npos)
      << error;
  EXPECT_NE(
      error.find(
          "registry.yml:8: tools.my.server.max_concurrency: must be a whole number from 1 to 64, not 0"),
      std::string::npos)
      << error;
  EXPECT_NE(error.find("registry.yml:9: tools.my.server.env.ok: must be a string, not 1"), std::string::npos)
      << error;
  EXPECT_NE(error.find("registry.yml:10: tools.my.server.commands: unknown key"), std::string::npos) << error;
  EXPECT_NE(error.find("registry.yml:12: tools.my.server.tools.write_file.risk: 'huge' is not a risk level"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("registry.yml:12: tools.my.server.tools.write_file.readonly: unknown key"),
            std::string::npos)
      << error;
  EXPECT_NE(
      error.find("registry.yml:14: tools.other.kind: 'mpc' is not a kind: cli (the default) or mcp (did you "
                 "mean 'mcp'?)"),
      std::string::npos)
      << error;
  EXPECT_NE(error.find("registry.yml:17: tools.third: missing `command` (a server on stdio) or `url`"),
            std::string::npos)
      << error;
}

TEST(McpRegistryEntry, TheSchemaAgreesWithTheReader) {
  // A document the reader accepts passes the published schema too (it is checked after the reader).
  auto registry = parse_tool_registry(
      "tools:\n  s:\n    kind: mcp\n    command: [x]\n    cwd: a\n    status: planned\n    risk: high\n"
      "    tools: {t: {risk: critical}}\n  c:\n    kind: cli\n    command: [/bin/true]\n    status: "
      "prod_ready\n"
      "    risk: low\n    commands:\n      run: {output_schema: {}}\n",
      "registry.yml");
  ASSERT_TRUE(registry) << registry.error().message;
  EXPECT_EQ(registry->tools.at("c").kind, ToolKind::Cli);
}

}  // namespace
}  // namespace orch
