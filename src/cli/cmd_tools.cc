// orch tools list [--registry FILE] [--json]
// The tool registry's tools: each command-line tool with its sub-commands, and
// each MCP server (`kind: mcp`) with the tools its tools/list gives — the server
// is started (or its URL asked) for that, then shut down — their annotations and
// the risk a step calling each would have (docs/tools.md). Exits 0; 1 when a
// server could not be asked (the others are still listed); 2 for a registry
// that cannot be read.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "exec/mcp_executor.h"
#include "exec/tool_registry.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::cli {

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

struct ToolsArgs {
  std::string registry;
  bool json = false;
};

ojson annotations_json(const mcp::ToolAnnotations& a) {
  ojson out = ojson::object();
  if (a.read_only) out["readOnlyHint"] = *a.read_only;
  if (a.destructive) out["destructiveHint"] = *a.destructive;
  if (a.idempotent) out["idempotentHint"] = *a.idempotent;
  if (a.open_world) out["openWorldHint"] = *a.open_world;
  return out;
}

// What a person reads of a tool's hints: "read-only", "destructive", ...
std::string hints_text(const mcp::ToolAnnotations& a) {
  if (a.read_only.value_or(false)) return "read-only";
  std::string out =
      a.may_destroy() ? (a.destructive ? "destructive" : "destructive (no hint)") : "not destructive";
  if (a.idempotent.value_or(false)) out += ", idempotent";
  return out;
}

ojson cli_entry(const RegisteredTool& tool) {
  ojson commands = ojson::array();
  for (const auto& [name, command] : tool.commands) {
    ojson c = {{"name", name}, {"description", command.description}};
    if (command.risk) c["risk"] = risk_level_name(*command.risk);
    c["capabilities"] = command.capabilities;
    commands.push_back(std::move(c));
  }
  return ojson{{"command", tool.command}, {"commands", std::move(commands)}};
}

// The server's tools, each with the risk a step calling it (declaring none) has.
ojson mcp_entry(const RegisteredTool& server, const McpExecutor& executor, std::string& failure) {
  ojson out = ojson::object();
  if (server.mcp.url.empty())
    out["command"] = server.command;
  else
    out["url"] = server.mcp.url;
  out["max_concurrency"] = server.mcp.max_concurrency;
  auto tools = executor.server_tools(server.name);
  if (!tools) {
    failure = tools.error().message;
    out["error"] = failure;
    return out;
  }
  ojson list = ojson::array();
  for (const auto& tool : *tools) {
    Step step;
    step.executor = fmt::format("tool:{}.{}", server.name, tool.name);
    ojson t = {{"name", tool.name},
               {"executor", step.executor},
               {"title", tool.title},
               {"description", tool.description},
               {"risk", risk_level_name(executor.risk(step))},
               {"annotations", annotations_json(tool.annotations)},
               {"input_schema", tool.input_schema}};
    if (!tool.output_schema.is_null()) t["output_schema"] = tool.output_schema;
    list.push_back(std::move(t));
  }
  out["tools"] = std::move(list);
  // A rule for a tool the server does not have is most likely a misspelt name.
  ojson unmatched = ojson::array();
  for (const auto& [name, _] : server.mcp.tools) {
    bool listed = false;
    for (const auto& tool : *tools) listed = listed || tool.name == name;
    if (!listed) unmatched.push_back(name);
  }
  if (!unmatched.empty()) out["unmatched_rules"] = std::move(unmatched);
  return out;
}

int run_tools_list(const ToolsArgs& args) {
  fs::path file = args.registry;
  if (file.empty()) {
    std::error_code ec;
    if (!fs::exists(kDefaultToolRegistry, ec))
      return report_error(
          Error{ErrorCode::NotFound,
                fmt::format("no tool registry: give --registry FILE or write {} (docs/tools.md)",
                            kDefaultToolRegistry)});
    file = kDefaultToolRegistry;
  }
  auto loaded = load_tool_registry(file);
  if (!loaded) return report_error(loaded.error());
  auto registry = std::make_shared<const ToolRegistry>(std::move(*loaded));
  McpExecutor executor(registry);
  ojson doc = {{"registry", file.string()}, {"tools", ojson::array()}};
  int failures = 0;
  for (const auto& [name, tool] : registry->tools) {
    ojson entry = {{"name", name},
                   {"kind", tool.kind == ToolKind::Mcp ? "mcp" : "cli"},
                   {"description", tool.description},
                   {"status", tool_status_name(tool.status)},
                   {"safe_for_agents", tool.safe_for_agents},
                   {"risk", risk_level_name(tool.risk)}};
    std::string failure;
    entry.update(tool.kind == ToolKind::Mcp ? mcp_entry(tool, executor, failure) : cli_entry(tool));
    if (!failure.empty()) ++failures;
    if (!args.json) {
      std::printf("%s  (%s, %s, risk %s%s)%s%s\n", name.c_str(), entry["kind"].get<std::string>().c_str(),
                  tool_status_name(tool.status), risk_level_name(tool.risk),
                  tool.safe_for_agents ? ", safe for agents" : "", tool.description.empty() ? "" : ": ",
                  tool.description.c_str());
      if (!failure.empty()) std::printf("  cannot list its tools: %s\n", failure.c_str());
      for (const auto& c : entry.value("commands", ojson::array()))
        std::printf("  %s %s\n", c["name"].get<std::string>().c_str(),
                    c["description"].get<std::string>().c_str());
      for (const auto& rule : entry.value("unmatched_rules", ojson::array()))
        std::printf("  note: the registry's rule tools.%s.tools.%s names no tool of the server\n",
                    name.c_str(), rule.get<std::string>().c_str());
      if (tool.kind == ToolKind::Mcp && failure.empty()) {
        auto tools = executor.server_tools(name);
        for (const auto& info : *tools) {
          Step step;
          step.executor = fmt::format("tool:{}.{}", name, info.name);
          std::string description = info.description.substr(0, info.description.find('\n'));
          if (description.size() > 80) description = description.substr(0, 77) + "...";
          std::printf("  %-40s %-8s %-28s %s\n", step.executor.c_str(), risk_level_name(executor.risk(step)),
                      hints_text(info.annotations).c_str(), description.c_str());
        }
      }
    }
    doc["tools"].push_back(std::move(entry));
  }
  if (args.json) std::printf("%s\n", json_text(doc, 2).c_str());
  return failures == 0 ? 0 : 1;
}

}  // namespace

Command add_tools(CLI::App& app) {
  auto args = std::make_shared<ToolsArgs>();
  CLI::App* sub =
      app.add_subcommand("tools", "The tool registry's tools, MCP servers' included (docs/tools.md).");
  sub->require_subcommand(1);
  CLI::App* list = sub->add_subcommand(
      "list",
      "List the registry's tools: command-line tools with their sub-commands, and each MCP server's tools "
      "(started to ask tools/list) with their annotations and the risk a step calling them has. Exits 1 "
      "when a server cannot be asked.");
  list->add_option("--registry", args->registry, "the tool registry (default: .orch/registry.yml if present)")
      ->check(not_empty("the tool registry file"));
  list->add_flag("--json", args->json, "print the list as JSON (schemas/tools-list.schema.json)");
  return [args]() -> int { return run_tools_list(*args); };
}

}  // namespace orch::cli
