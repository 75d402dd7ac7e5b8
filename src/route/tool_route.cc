#include "route/tool_route.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "route/words.h"
#include "util/strings.h"

namespace orch::route {

ToolRoute route_to_tool(const ToolRegistry* registry, const std::vector<std::string>& words) {
  ToolRoute route;
  if (!registry || registry->tools.empty()) {
    route.reason =
        "no tool registry (--registry FILE, or .orch/registry.yml in the workspace; docs/tools.md)";
    return route;
  }
  std::set<std::string> capabilities;
  for (const auto& [name, tool] : registry->tools)
    for (const auto& [command_name, command] : tool.commands)
      capabilities.insert(command.capabilities.begin(), command.capabilities.end());
  // (capability, its number of words): more words first, a more specific need.
  std::vector<std::pair<std::string, std::size_t>> named;
  for (const auto& capability : capabilities) {
    const std::vector<std::string> parts = words_of(capability);
    const bool all = !parts.empty() && std::all_of(parts.begin(), parts.end(), [&](const std::string& p) {
      return std::find(words.begin(), words.end(), p) != words.end();
    });
    if (all) named.emplace_back(capability, parts.size());
  }
  std::stable_sort(named.begin(), named.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [capability, _] : named) route.named.push_back(capability);
  if (named.empty()) {
    route.reason =
        capabilities.empty()
            ? fmt::format("no sub-command of the registry {} declares a capability", registry->file)
            : fmt::format("the request names no capability of the registry (capabilities: {})",
                          join({capabilities.begin(), capabilities.end()}, ", "));
    return route;
  }
  std::vector<std::string> refusals;
  for (const auto& [capability, _] : named) {
    auto choice = select_tool(*registry, ToolNeed{"", "", capability});
    if (!choice) {
      refusals.push_back(choice.error().message);
      continue;
    }
    const RegisteredTool& tool = *choice->tool;
    RiskLevel risk = tool.risk;
    if (choice->command && choice->command->risk) risk = std::max(risk, *choice->command->risk);
    route.chosen = true;
    route.tool = tool.name;
    route.command = choice->command ? choice->command->name : "";
    route.capability = capability;
    route.status = tool_status_name(tool.status);
    route.risk = risk_level_name(risk);
    route.reason = fmt::format("capability '{}' is offered by tool '{}' {} ({}, safe_for_agents, risk {})",
                               capability, route.tool, route.command, route.status, route.risk);
    return route;
  }
  route.reason = join(refusals, "; ");
  return route;
}

bool covered_by_tool(const ToolRegistry* registry, std::string_view request) {
  return route_to_tool(registry, words_of(request)).chosen;
}

}  // namespace orch::route
