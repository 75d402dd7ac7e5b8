// exec/tool_executor.h — `executor: tool:NAME`: one run of a registry tool per attempt.
//
// A tool step names the tool in its executor and the sub-command and arguments in
// its inputs (docs/tools.md):
//
//   - id: stats
//     executor: tool:filestats
//     inputs: {command: count, files: [notes.txt]}
//
// start() builds the argv from the registry (tool_invocation: the tool's command,
// the sub-command's fixed argv, then each `args` entry), checks the rendered
// inputs against the sub-command's argument schema, and runs it exactly as the
// shell executor runs a command (it *is* the shell executor underneath: own
// process group, capped and masked output files, timeout, cancel). Inputs that do
// not fit end the attempt with AttemptEnding::Error before anything is spawned.
//
// The output contract: whenever the process ran to its end, its result (stdout,
// or the step's output file) must be JSON satisfying the sub-command's
// output_schema. Otherwise the attempt ends Error with a message naming the tool,
// the sub-command and each failing JSON path ("/lines: value is not an integer"),
// so a tool step's result always satisfies its contract. The exit code is left to
// the postconditions: the default is [exit_zero].
//
// A step naming a tool of an MCP server (`tool:SERVER.TOOL`, a `kind: mcp`
// entry) is the McpExecutor's: every method below hands it over.
//
// Risk (for the engine's risk guard): the step's declared risk, raised to the
// tool's and the sub-command's levels; at least medium for an in_progress tool,
// at least high for one that is not safe_for_agents; critical for a tool that is
// missing from the registry, pending or planned.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exec/mcp_executor.h"
#include "exec/shell_executor.h"
#include "exec/tool_registry.h"
#include "orch/executor.h"

namespace orch {

class ToolExecutor final : public Executor {
 public:
  // `registry` may be empty (no registry file): every tool step then fails validation.
  explicit ToolExecutor(std::shared_ptr<const ToolRegistry> registry);

  // The tool exists, inputs.command names one of its sub-commands, every other
  // input is an argument; when no input holds a placeholder, the inputs match the
  // argument schema too (otherwise that is checked when an attempt starts).
  void check_step(const Step& step, Diagnostics& out) const override;
  // [exit_zero]; the output contract is checked by the executor itself.
  std::vector<Postcondition> default_post() const override;
  RiskLevel risk(const Step& step) const override;
  // A missing, pending or planned tool, or one (or a sub-command) the registry rates critical.
  std::string risk_reason(const Step& step) const override;
  // The exact argv, shell-quoted, then "inputs: " and the inputs as JSON.
  std::string describe(const AttemptSpec& spec) const override;
  // A tool of an MCP server runs where its server is: in the run's driver.
  bool runs_in_driver(const AttemptSpec& spec) const override { return mcp_for(spec.executor) != nullptr; }
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                  DoneCallback done) override;

  const ToolRegistry& registry() const { return *registry_; }
  // The executor of the registry's MCP servers' tools (`orch tools list` asks it too).
  McpExecutor& mcp() const { return *mcp_; }

 private:
  // The MCP executor when `executor` names a tool of an MCP server, else null.
  McpExecutor* mcp_for(const std::string& executor) const;

  std::shared_ptr<const ToolRegistry> registry_;
  ShellExecutor shell_;
  std::unique_ptr<McpExecutor> mcp_;
};

// The step's inputs with every template rendered, when none holds a placeholder
// ("$${" escapes become "${"); nullopt when some value can only be known at run time.
std::optional<nlohmann::json> literal_inputs(const nlohmann::json& value);

// "tool:NAME" → "NAME" ("" when `executor` is not a tool executor name).
std::string tool_name_of(const std::string& executor);

// Applies the output contract to a finished attempt: when it ran to its end
// (ending Exited), a result that is not JSON or violates `contract` turns the
// ending into Error with the reason (`label` names the tool and sub-command).
// `result_complete` is false when the result was cut at max_output.
void apply_output_contract(AttemptOutcome& outcome, const JsonSchema& contract, const std::string& label,
                           bool result_complete);

}  // namespace orch
