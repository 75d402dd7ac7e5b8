// exec/mcp_registry_entry.cc — a `kind: mcp` registry entry's own fields.
#include "exec/mcp_registry_entry.h"

#include <fmt/format.h>

#include "exec/config_check.h"
#include "exec/registry_places.h"

namespace orch {

namespace {

using ojson = nlohmann::ordered_json;
constexpr int kMaxMcpConcurrency = 64;

bool is_http_url(const std::string& url) {
  return url.starts_with("http://") || url.starts_with("https://");
}

}  // namespace

void read_mcp_server(RegistryFields& fields, const ojson& value, const std::string& pointer,
                     const std::filesystem::path& base_dir, RegisteredTool& tool) {
  McpServerSpec& server = tool.mcp;
  if (tool.name.find('.') != std::string::npos)
    fields.problem(pointer,
                   "an MCP server's name has no '.': steps name its tools `tool:SERVER.TOOL`, split at the "
                   "first '.'",
                   true);
  const bool has_command = value.contains("command");
  const bool has_url = value.contains("url");
  if (has_command == has_url)
    fields.problem(pointer,
                   has_url ? "give `command` (a server on stdio) or `url` (streamable HTTP), not both"
                           : "missing `command` (a server on stdio) or `url` (streamable HTTP)",
                   true);
  if (auto url = fields.text(value, pointer, "url")) {
    if (!is_http_url(*url))
      fields.problem(detail::pointer_child(pointer, "url"),
                     fmt::format("'{}' is not an http:// or https:// URL", *url));
    server.url = *url;
  }
  if (auto it = value.find("env"); it != value.end()) {
    const std::string env_pointer = detail::pointer_child(pointer, "env");
    if (!it->is_object()) {
      fields.problem(env_pointer, "must map variable names to strings");
    } else {
      for (const auto& [name, v] : it->items()) {
        if (!is_identifier(name))
          fields.problem(detail::pointer_child(env_pointer, name),
                         fmt::format("'{}' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", name), true);
        if (!v.is_string())
          fields.problem(detail::pointer_child(env_pointer, name),
                         fmt::format("must be a string, not {} (quote it)", v.dump()));
        else
          server.env.emplace_back(name, v.get<std::string>());
      }
    }
    if (has_url) fields.problem(env_pointer, "`env` is for a server orch starts (`command`), not a `url`");
  }
  if (auto cwd = fields.text(value, pointer, "cwd")) {
    if (cwd->empty())
      fields.problem(detail::pointer_child(pointer, "cwd"), "must not be empty (leave it out)");
    std::filesystem::path folder(*cwd);
    if (folder.is_relative() && !base_dir.empty()) folder = (base_dir / folder).lexically_normal();
    server.cwd = folder;
    if (has_url)
      fields.problem(detail::pointer_child(pointer, "cwd"),
                     "`cwd` is for a server orch starts (`command`), not a `url`");
  }
  if (auto it = value.find("max_concurrency"); it != value.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 1 ||
        it->get<std::int64_t>() > kMaxMcpConcurrency)
      fields.problem(
          detail::pointer_child(pointer, "max_concurrency"),
          fmt::format("must be a whole number from 1 to {}, not {}", kMaxMcpConcurrency, it->dump()));
    else
      server.max_concurrency = it->get<int>();
  }
  if (auto it = value.find("tools"); it != value.end()) {
    const std::string tools_pointer = detail::pointer_child(pointer, "tools");
    if (!it->is_object()) {
      fields.problem(tools_pointer, "must map the server's tool names to {risk: LEVEL}");
      return;
    }
    for (const auto& [name, rule] : it->items()) {
      const std::string rule_pointer = detail::pointer_child(tools_pointer, name);
      if (!rule.is_object()) {
        fields.problem(rule_pointer, "must be a mapping: {risk: LEVEL}");
        continue;
      }
      fields.only_keys(rule, rule_pointer, {"risk"});
      server.tools[name].risk = fields.risk(rule, rule_pointer);
    }
  }
}

}  // namespace orch
