// exec/tool_select.cc — choosing a registry tool (CLI-first) and turning a step's
// inputs into the argv it runs. Declared in exec/tool_registry.h.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <tuple>

#include "exec/tool_registry.h"
#include "util/strings.h"

namespace orch {

namespace {

using nlohmann::json;

// Why a tool that matched a need may not be chosen automatically; "" when it may.
std::string why_not_selectable(const RegisteredTool& tool) {
  std::vector<std::string> reasons;
  if (tool.status != ToolStatus::DryRunValidated && tool.status != ToolStatus::ProdReady)
    reasons.push_back(fmt::format("is {}", tool_status_name(tool.status)));
  if (!tool.safe_for_agents) reasons.push_back("is not safe_for_agents");
  return join(reasons, " and ");
}

int status_rank(ToolStatus status) {
  return status == ToolStatus::ProdReady ? 0 : 1;
}

RiskLevel risk_of(const RegisteredTool& tool, const ToolCommand* command) {
  RiskLevel level = tool.risk;
  if (command && command->risk) level = std::max(level, *command->risk);
  return level;
}

// Appends the argv text of one scalar value; false when it cannot be one element.
bool value_text(const json& value, std::string& out, std::string& why) {
  if (value.is_string()) {
    out = value.get<std::string>();
  } else if (value.is_boolean()) {
    out = value.get<bool>() ? "true" : "false";
  } else if (value.is_number() || value.is_object()) {
    out = value.dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    why = value.is_array() ? "a list inside a list cannot be an argument" : "null cannot be an argument";
    return false;
  }
  if (out.find('\0') != std::string::npos) {
    why = "holds a NUL byte, which no argv element can";
    return false;
  }
  return true;
}

// The input_schema's type for property `name`, when it is exactly one of
// integer/number/boolean (or a list of those without "string").
std::set<std::string> non_string_types(const json& schema, const std::string& name) {
  std::set<std::string> out;
  auto props = schema.find("properties");
  if (props == schema.end() || !props->is_object() || !props->contains(name)) return out;
  const json& prop = (*props)[name];
  if (!prop.is_object() || !prop.contains("type")) return out;
  const json& type = prop["type"];
  std::vector<std::string> types;
  if (type.is_string()) types.push_back(type.get<std::string>());
  if (type.is_array())
    for (const auto& t : type)
      if (t.is_string()) types.push_back(t.get<std::string>());
  if (std::find(types.begin(), types.end(), "string") != types.end()) return out;
  for (const auto& t : types)
    if (t == "integer" || t == "number" || t == "boolean") out.insert(t);
  return out;
}

}  // namespace

void coerce_rendered_text(json& arguments, const json& schema) {
  for (auto& [name, value] : arguments.items()) {
    if (!value.is_string()) continue;
    auto types = non_string_types(schema, name);
    if (types.empty()) continue;
    const std::string text(trim(value.get_ref<const std::string&>()));
    if (types.contains("boolean") && (text == "true" || text == "false")) {
      value = text == "true";
      continue;
    }
    if (!types.contains("integer") && !types.contains("number")) continue;
    json parsed = json::parse(text, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_number()) continue;
    if (types.contains("number") || parsed.is_number_integer() || parsed.is_number_unsigned()) value = parsed;
  }
}

namespace {

std::string tool_label(const RegisteredTool& tool, const ToolCommand& command) {
  return fmt::format("tool '{}' {}", tool.name, command.name);
}

}  // namespace

Expected<ToolChoice> select_tool(const ToolRegistry& registry, const ToolNeed& need) {
  struct Candidate {
    const RegisteredTool* tool;
    const ToolCommand* command;
  };
  std::vector<Candidate> matched;
  std::vector<std::string> capabilities;
  for (const auto& [name, tool] : registry.tools) {
    for (const auto& [command_name, command] : tool.commands)
      capabilities.insert(capabilities.end(), command.capabilities.begin(), command.capabilities.end());
    if (!need.tool.empty() && name != need.tool) continue;
    if (need.command.empty() && need.capability.empty()) {
      matched.push_back({&tool, tool.commands.size() == 1 ? &tool.commands.begin()->second : nullptr});
      continue;
    }
    for (const auto& [command_name, command] : tool.commands) {
      if (!need.command.empty() && command_name != need.command) continue;
      const auto& caps = command.capabilities;
      if (!need.capability.empty() && std::find(caps.begin(), caps.end(), need.capability) == caps.end())
        continue;
      matched.push_back({&tool, &command});
    }
  }

  std::string what;
  for (const auto& [label, value] : {std::pair{"tool", &need.tool}, std::pair{"sub-command", &need.command},
                                     std::pair{"capability", &need.capability}})
    if (!value->empty()) what += fmt::format("{}{} '{}'", what.empty() ? "" : ", ", label, *value);
  if (what.empty()) what = "any tool";

  if (matched.empty()) {
    std::string hint;
    if (!need.tool.empty() && !registry.find(need.tool)) {
      hint = fmt::format(": no tool '{}' in the registry{}", need.tool,
                         did_you_mean(need.tool, registry.names()));
    } else if (!need.capability.empty() &&
               std::find(capabilities.begin(), capabilities.end(), need.capability) == capabilities.end()) {
      hint = fmt::format(": no sub-command offers capability '{}'{}", need.capability,
                         did_you_mean(need.capability, capabilities));
    } else if (!need.command.empty() && !need.tool.empty()) {
      hint = fmt::format(": tool '{}' has no sub-command '{}'{}", need.tool, need.command,
                         did_you_mean(need.command, registry.find(need.tool)->command_names()));
    }
    return fail(ErrorCode::NotFound,
                fmt::format("no tool chosen for {}{}", what, hint.empty() ? ": nothing matches" : hint));
  }

  std::vector<Candidate> eligible;
  std::vector<std::string> passed_over;  // once per tool, however many of its sub-commands matched
  std::set<std::string> told;
  for (const Candidate& c : matched) {
    if (c.tool->selectable()) {
      eligible.push_back(c);
    } else if (told.insert(c.tool->name).second) {
      passed_over.push_back(fmt::format("tool '{}' {}", c.tool->name, why_not_selectable(*c.tool)));
    }
  }
  if (eligible.empty()) {
    return fail(ErrorCode::NotFound,
                fmt::format("no tool chosen for {}: only dry_run_validated or prod_ready tools that are "
                            "safe_for_agents are chosen automatically, and {}",
                            what, join(passed_over, "; ")));
  }
  auto better = [](const Candidate& a, const Candidate& b) {
    auto key = [](const Candidate& c) {
      return std::tuple(status_rank(c.tool->status), static_cast<int>(risk_of(*c.tool, c.command)),
                        c.tool->name, c.command ? c.command->name : std::string());
    };
    return key(a) < key(b);
  };
  const Candidate& best = *std::min_element(eligible.begin(), eligible.end(), better);
  return ToolChoice{best.tool, best.command};
}

Expected<ToolInvocation> resolve_tool_call(const ToolRegistry& registry, const std::string& tool_name,
                                           const json& inputs) {
  const RegisteredTool* tool = registry.find(tool_name);
  if (!tool) {
    return fail(
        ErrorCode::InvalidInput,
        registry.tools.empty()
            ? fmt::format("no tool '{}': no tool registry is loaded (pass --registry FILE, or put one at "
                          ".orch/registry.yml; docs/tools.md)",
                          tool_name)
            : fmt::format("no tool '{}' in the registry {}{}", tool_name, registry.file,
                          did_you_mean(tool_name, registry.names())));
  }
  const std::string commands = join(tool->command_names(), ", ");
  if (!inputs.is_object() || !inputs.contains("command"))
    return fail(ErrorCode::InvalidInput,
                fmt::format("a tool step names its sub-command in inputs.command (tool '{}' has: {})",
                            tool_name, commands));
  if (!inputs["command"].is_string())
    return fail(ErrorCode::InvalidInput,
                fmt::format("inputs.command must be a string (one of: {})", commands));
  const std::string command_name = inputs["command"].get<std::string>();
  const ToolCommand* command = tool->find_command(command_name);
  if (!command)
    return fail(ErrorCode::InvalidInput,
                fmt::format("tool '{}' has no sub-command '{}'{} (it has: {})", tool_name, command_name,
                            did_you_mean(command_name, tool->command_names()), commands));
  std::vector<std::string> passed;
  for (const ToolArg& arg : command->args)
    if (!arg.word) passed.push_back(arg.input);
  for (const auto& [name, value] : inputs.items()) {
    if (name != "command" && std::find(passed.begin(), passed.end(), name) == passed.end())
      return fail(ErrorCode::InvalidInput,
                  fmt::format("input '{}' is not an argument of {}{} (arguments: {})", name,
                              tool_label(*tool, *command), did_you_mean(name, passed),
                              passed.empty() ? "none" : join(passed, ", ")));
  }
  return ToolInvocation{tool, command, {}};
}

Expected<ToolInvocation> tool_invocation(const ToolRegistry& registry, const std::string& tool_name,
                                         const json& inputs) {
  ToolInvocation out = ORCH_TRY(resolve_tool_call(registry, tool_name, inputs));
  const RegisteredTool* tool = out.tool;
  const ToolCommand* command = out.command;
  json arguments = inputs;
  arguments.erase("command");
  coerce_rendered_text(arguments, command->input_schema);
  if (auto violations = command->input_checker.validate(arguments); !violations.empty()) {
    return fail(ErrorCode::InvalidInput, fmt::format("inputs do not match the argument schema of {}: {}",
                                                     tool_label(*tool, *command), join(violations, "; ")));
  }

  out.argv = tool->command;
  out.argv.insert(out.argv.end(), command->argv.begin(), command->argv.end());
  for (const ToolArg& arg : command->args) {
    if (arg.word) {
      out.argv.push_back(*arg.word);
      continue;
    }
    auto it = arguments.find(arg.input);
    if (it == arguments.end() || it->is_null()) continue;
    if (it->is_boolean() && !arg.flag.empty()) {
      if (it->get<bool>()) out.argv.push_back(arg.flag);
      continue;
    }
    std::vector<json> values;
    if (it->is_array())
      values.assign(it->begin(), it->end());
    else
      values.push_back(*it);
    for (const json& v : values) {
      std::string text;
      std::string why;
      if (!value_text(v, text, why))
        return fail(ErrorCode::InvalidInput, fmt::format("input '{}': {}", arg.input, why));
      if (arg.flag.empty()) {
        out.argv.push_back(std::move(text));
      } else if (arg.joined) {
        out.argv.push_back(arg.flag + text);
      } else {
        out.argv.push_back(arg.flag);
        out.argv.push_back(std::move(text));
      }
    }
  }
  return out;
}

}  // namespace orch
