#include "exec/tool_executor.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include "exec/refused_attempt.h"
#include "exec/subprocess.h"
#include "orch/placeholder.h"
#include "orch/validate.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// Why the tool's program cannot be run — the registry's set-up, not the work: no
// attempt could pass until a person puts it there — or nullopt when it can. A bare
// name is looked for in the PATH the attempt will have (the step's env may set it).
std::optional<std::string> missing_program(const ToolRegistry& registry, const RegisteredTool& tool,
                                           const AttemptSpec& spec) {
  // A relative path is left to the spawn: only a registry read from text keeps one.
  if (tool.command.empty()) return std::nullopt;
  const std::string& program = tool.command[0];
  if (program.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    for (const auto& [name, value] : spec.env)
      if (name == "PATH") path = value.c_str();
    auto why = program_not_runnable(program, path);
    if (!why) return std::nullopt;
    return fmt::format("tool '{}': {}", tool.name, *why);
  }
  if (!program.starts_with("/")) return std::nullopt;
  if (::access(program.c_str(), X_OK) == 0) return std::nullopt;
  const int err = errno;
  std::string rule;
  if (!registry.file.empty()) {
    std::error_code ec;
    const std::filesystem::path folder = std::filesystem::absolute(registry.file, ec).parent_path();
    // Made absolute at load from a relative path: say where relative paths lead.
    if (!ec && program.starts_with(folder.string() + "/"))
      rule =
          fmt::format(" (a relative program path in `command` is relative to the registry file's folder, {})",
                      folder.string());
  }
  return fmt::format("tool '{}': its program '{}' cannot be run: {}{}", tool.name, program,
                     std::strerror(err), rule);
}

std::string label_of(const ToolInvocation& call) {
  return fmt::format("tool '{}' {}", call.tool->name, call.command->name);
}

}  // namespace

std::optional<json> literal_inputs(const json& value) {
  if (value.is_string()) {
    auto tmpl = parse_template(value.get<std::string>());
    if (!tmpl || tmpl->has_placeholders()) return std::nullopt;
    auto text = render(*tmpl, RenderContext{});
    if (!text) return std::nullopt;
    return json(*text);
  }
  if (value.is_object() || value.is_array()) {
    json out = value.is_object() ? json::object() : json::array();
    for (auto it = value.begin(); it != value.end(); ++it) {
      auto item = literal_inputs(*it);
      if (!item) return std::nullopt;
      if (value.is_object())
        out[it.key()] = std::move(*item);
      else
        out.push_back(std::move(*item));
    }
    return out;
  }
  return value;
}

std::string tool_name_of(const std::string& executor) {
  return executor.starts_with("tool:") ? executor.substr(5) : std::string();
}

ToolExecutor::ToolExecutor(std::shared_ptr<const ToolRegistry> registry) : registry_(std::move(registry)) {
  if (!registry_) registry_ = std::make_shared<ToolRegistry>();
  mcp_ = std::make_unique<McpExecutor>(registry_);
}

McpExecutor* ToolExecutor::mcp_for(const std::string& executor) const {
  return registry_->find_mcp(tool_name_of(executor)) ? mcp_.get() : nullptr;
}

void ToolExecutor::check_step(const Step& step, Diagnostics& out) const {
  if (auto* mcp = mcp_for(step.executor)) return mcp->check_step(step, out);
  auto problem = [&](std::initializer_list<std::string_view> fields, std::string message) {
    out.push_back(step_diagnostic(step, fields, std::move(message)));
  };
  const std::string name = tool_name_of(step.executor);
  if (!registry_->find(name)) {
    problem({"executor"}, tool_invocation(*registry_, name, json::object()).error().message);
    return;
  }
  if (registry_->find(name)->kind == ToolKind::Mcp) {
    problem({"executor"}, fmt::format("'{}' is an MCP server: a step calls one of its tools, "
                                      "`tool:{}.TOOL` (`orch tools list` shows them)",
                                      name, name));
    return;
  }
  const json inputs(step.inputs);
  if (auto literal = literal_inputs(inputs)) {
    if (auto call = tool_invocation(*registry_, name, *literal); !call)
      problem({"inputs.command", "inputs"}, call.error().message);
    return;
  }
  // Some value is filled at run time: check what is known now (names, and the
  // sub-command when it is literal); the values are checked when an attempt starts.
  auto command = inputs.is_object() ? literal_inputs(inputs.value("command", json())) : std::nullopt;
  if (!command) return;
  json names = json::object();
  if (inputs.is_object())
    for (auto it = inputs.begin(); it != inputs.end(); ++it) names[it.key()] = nullptr;
  names["command"] = *command;
  if (auto call = resolve_tool_call(*registry_, name, names); !call)
    problem({"inputs.command", "inputs"}, call.error().message);
}

std::vector<Postcondition> ToolExecutor::default_post() const {
  Postcondition exit_zero;
  exit_zero.kind = PostKind::ExitZero;
  return {exit_zero};
}

RiskLevel ToolExecutor::risk(const Step& step) const {
  if (auto* mcp = mcp_for(step.executor)) return mcp->risk(step);
  RiskLevel declared = step.risk.value_or(RiskLevel::Low);
  const RegisteredTool* tool = registry_->find(tool_name_of(step.executor));
  if (!tool || tool->status == ToolStatus::Pending || tool->status == ToolStatus::Planned)
    return RiskLevel::Critical;
  RiskLevel level = std::max(declared, tool->risk);
  // The sub-command's own level; when it is not known before the run, the riskiest.
  const ToolCommand* command = nullptr;
  if (step.inputs.is_object() && step.inputs.contains("command")) {
    if (auto name = literal_inputs(json(step.inputs["command"])); name && name->is_string())
      command = tool->find_command(name->get<std::string>());
  }
  for (const auto& [_, c] : tool->commands)
    if ((command == nullptr || command == &c) && c.risk) level = std::max(level, *c.risk);
  if (tool->status == ToolStatus::InProgress) level = std::max(level, RiskLevel::Medium);
  if (!tool->safe_for_agents) level = std::max(level, RiskLevel::High);
  return level;
}

std::string ToolExecutor::risk_reason(const Step& step) const {
  if (auto* mcp = mcp_for(step.executor)) return mcp->risk_reason(step);
  const std::string name = tool_name_of(step.executor);
  const RegisteredTool* tool = registry_->find(name);
  if (!tool) return fmt::format("tool '{}' is not in the registry", name);
  if (tool->status == ToolStatus::Pending || tool->status == ToolStatus::Planned)
    return fmt::format("tool '{}' has status {}: it is not ready to run", name,
                       tool_status_name(tool->status));
  if (tool->risk == RiskLevel::Critical) return fmt::format("the registry rates tool '{}' critical", name);
  for (const auto& [command_name, command] : tool->commands)
    if (command.risk == RiskLevel::Critical)
      return fmt::format("the registry rates tool '{}' {} critical", name, command_name);
  return "";
}

std::string ToolExecutor::describe(const AttemptSpec& spec) const {
  if (auto* mcp = mcp_for(spec.executor)) return mcp->describe(spec);
  const std::string name = tool_name_of(spec.executor);
  auto call = tool_invocation(*registry_, name, json(spec.inputs));
  std::string out;
  if (call) {
    std::vector<std::string> words;
    for (const auto& a : call->argv) words.push_back(shell_quote(a));
    out = join(words, " ");
  } else {
    out = fmt::format("tool:{} cannot run: {}", name, call.error().message);
  }
  return out + "\ninputs: " + json_text(spec.inputs);
}

Expected<std::unique_ptr<RunningAttempt>> ToolExecutor::start(const AttemptSpec& spec, EventLoop& loop,
                                                              DoneCallback done) {
  if (auto* mcp = mcp_for(spec.executor)) return mcp->start(spec, loop, std::move(done));
  auto call = tool_invocation(*registry_, tool_name_of(spec.executor), json(spec.inputs));
  if (!call) return refused_attempt(call.error().message, loop, std::move(done));
  if (auto missing = missing_program(*registry_, *call->tool, spec))
    return refused_attempt(*missing, loop, std::move(done), AttemptEnding::SetupFailed);
  AttemptSpec run = spec;
  run.argv = call->argv;
  // The contract and label are copied: the attempt may outlive this registry.
  return shell_.start(
      run, loop,
      [done = std::move(done), contract = call->command->output_contract, label = label_of(*call),
       from_file = spec.output_file.has_value()](AttemptOutcome outcome) {
        apply_output_contract(outcome, contract, label, from_file || !outcome.stdout_truncated);
        done(std::move(outcome));
      });
}

void apply_output_contract(AttemptOutcome& outcome, const JsonSchema& contract, const std::string& label,
                           bool result_complete) {
  if (outcome.ending != AttemptEnding::Exited) return;
  std::string problem;
  if (!result_complete) {
    problem = "its output was cut at max_output, so it cannot be checked against the contract";
  } else if (trim(outcome.result).empty()) {
    problem = "it printed nothing; its contract wants JSON";
  } else {
    json doc;
    try {
      doc = json::parse(outcome.result);
    } catch (const json::exception& e) {
      std::string what = e.what();
      if (auto end = what.find("] "); what.starts_with("[json.exception.") && end != std::string::npos)
        what = what.substr(end + 2);
      problem = fmt::format("its output is not JSON ({}); it starts '{}'", what,
                            quote_for_message(outcome.result, 60));
    }
    if (problem.empty()) {
      auto violations = contract.validate(doc);
      if (!violations.empty()) {
        constexpr std::size_t kShown = 5;
        std::string more =
            violations.size() > kShown ? fmt::format("; and {} more", violations.size() - kShown) : "";
        violations.resize(std::min(violations.size(), kShown));
        problem = fmt::format("its output violates the contract: {}{}", join(violations, "; "), more);
      }
    }
  }
  if (problem.empty()) return;
  std::string exit =
      outcome.exit_code == 0 ? "" : fmt::format("exited with code {}, and ", outcome.exit_code);
  outcome.ending = AttemptEnding::Error;
  outcome.message = fmt::format("{}{}: {}", exit, label, problem);
}

}  // namespace orch
