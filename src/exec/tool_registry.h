// exec/tool_registry.h — the tools `tool:NAME` steps may run, and which may be chosen.
//
// A registry file (docs/tools.md; `--registry FILE`, default .orch/registry.yml when
// it exists) lists command-line tools with what orch must know to run them safely:
//
//   version: 1
//   tools:
//     filestats:
//       description: Counts lines, words and bytes of files.
//       command: [tools/filestats.sh]   # argv prefix; never split, never run by a shell
//       status: prod_ready              # planned | in_progress | dry_run_validated | prod_ready | pending
//       safe_for_agents: true
//       risk: low                       # low | medium | high | critical
//       commands:
//         count:
//           args:                       # how inputs become argv, in this order
//             - {input: limit, flag: --limit}   # "--limit" "5" (joined: true → "--limit5")
//             - {word: "--"}            # a fixed word
//             - {input: files}          # positional (an array: one argv element per item)
//           input_schema: {type: object, required: [files]}      # the argument schema
//           output_schema: {type: object, required: [lines]}     # the JSON output contract
//           capabilities: [count-lines]
//
// An entry with `kind: mcp` is an MCP server instead (docs/tools.md, "MCP servers"):
// `command` (stdio) or `url` (streamable HTTP), no `commands`; its tools are what
// the server's tools/list says, called by steps `tool:SERVER.TOOL`.
//
// Loading checks the file against schemas/registry.schema.json (embedded in the
// binary) and then its meaning: unknown keys (with a did-you-mean), bad statuses
// and risk levels, JSON Schemas that do not compile, inputs an input_schema
// declares but no `args` entry passes. Every problem is reported at once as
// "FILE:LINE: FIELD: message".
//
// A loaded registry is immutable and may be read from several threads.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "orch/error.h"
#include "orch/plan.h"
#include "util/json_schema.h"

namespace orch {

enum class ToolStatus { Planned, InProgress, DryRunValidated, ProdReady, Pending };
const char* tool_status_name(ToolStatus status);  // "planned", "in_progress", ...
std::optional<ToolStatus> parse_tool_status(std::string_view name);

// One entry of a sub-command's `args`: how one input becomes argv elements.
//   absent or null       → nothing
//   true / false         → with a flag: the flag alone / nothing; positional: "true" / "false"
//   string               → the string, as one element (never split, never shell-parsed)
//   number               → its JSON text ("5", "1.5")
//   object               → its compact JSON text, as one element
//   array                → each item as above (items may not be arrays), one value each
// A value V with a flag F is "F" "V", or "FV" when `joined`.
// An entry may instead be a fixed word ({word: "--"}): that element, always, at
// its place (so positional values can follow an end-of-options "--").
struct ToolArg {
  std::string input;  // empty for a fixed word
  std::string flag;   // empty: positional
  bool joined = false;
  std::optional<std::string> word;
};

struct ToolCommand {
  std::string name;
  std::string description;
  std::vector<std::string> argv;  // fixed words after the tool's command
  std::vector<ToolArg> args;
  std::optional<RiskLevel> risk;  // raises the tool's own level
  std::vector<std::string> capabilities;
  nlohmann::json input_schema = nlohmann::json::object();  // {} when none was given
  nlohmann::json output_schema;                            // the command's, else the tool's
  JsonSchema input_checker;                                // compiled input_schema
  JsonSchema output_contract;                              // compiled output_schema
};

enum class ToolKind { Cli, Mcp };

// What the registry says of one tool of an MCP server (`tools: {NAME: {risk: ...}}`).
struct McpToolRule {
  std::optional<RiskLevel> risk;  // replaces the level its annotations give (docs/tools.md, "Risk")
};

// How to reach an MCP server (a `kind: mcp` entry): exactly one of `command`
// (RegisteredTool::command, stdio) and `url` (streamable HTTP).
struct McpServerSpec {
  static constexpr int kDefaultMaxConcurrency = 4;
  std::string url;
  std::vector<std::pair<std::string, std::string>> env;  // added to orch's environment
  std::filesystem::path cwd;                             // empty: orch's working folder
  int max_concurrency = kDefaultMaxConcurrency;          // tools/call requests in flight at once
  std::map<std::string, McpToolRule> tools;              // per-tool rules, by the server's tool name
};

struct RegisteredTool {
  std::string name;
  std::string description;
  ToolKind kind = ToolKind::Cli;
  McpServerSpec mcp;                 // kind Mcp only
  std::vector<std::string> command;  // a relative program path is made absolute at load
  ToolStatus status = ToolStatus::Planned;
  bool safe_for_agents = false;
  RiskLevel risk = RiskLevel::Low;
  std::map<std::string, ToolCommand> commands;

  const ToolCommand* find_command(const std::string& name) const;
  std::vector<std::string> command_names() const;
  // dry_run_validated or prod_ready, and safe_for_agents.
  bool selectable() const;
};

class ToolRegistry {
 public:
  std::map<std::string, RegisteredTool> tools;
  std::string file;  // where it was read from ("" for an empty registry)

  const RegisteredTool* find(const std::string& name) const;
  std::vector<std::string> names() const;
  // "SERVER.TOOL" → the `kind: mcp` entry SERVER and "TOOL" (a server's name has
  // no '.', so the first one splits); nullopt when `name` is a CLI tool's name or
  // names no MCP server.
  std::optional<std::pair<const RegisteredTool*, std::string>> find_mcp(const std::string& name) const;
};

// Reads and checks a registry file (YAML, or JSON when the name ends in .json).
// NotFound when it cannot be read; InvalidInput listing every problem.
Expected<ToolRegistry> load_tool_registry(const std::filesystem::path& file);
// The same, from text: `file` labels the messages; relative program paths in
// `command` resolve against `base_dir` (left as written when it is empty).
Expected<ToolRegistry> parse_tool_registry(const std::string& text, const std::string& file,
                                           const std::filesystem::path& base_dir = {});

// schemas/registry.schema.json, as compiled into orch.
const char* tool_registry_schema_text();

// ---- CLI-first selection ------------------------------------------------------

// What a caller needs; empty fields match anything. A capability is matched whole
// against a sub-command's `capabilities` (never as a substring).
struct ToolNeed {
  std::string tool;        // a tool's name
  std::string command;     // a sub-command's name
  std::string capability;  // a capability a sub-command declares
};

struct ToolChoice {
  const RegisteredTool* tool = nullptr;
  const ToolCommand* command = nullptr;  // null when the need named neither a command nor a
                                         // capability and the tool has several
};

// Chooses a tool for `need`, CLI-first: only a tool whose status is
// dry_run_validated or prod_ready AND that is safe_for_agents is ever chosen.
// Among several, prod_ready before dry_run_validated, then the lower risk, then
// the name. When none qualifies, a NotFound error says why: which tools matched
// the need and what kept each out ("tool 'x' is in_progress"), or that nothing
// matched (with a did-you-mean for a misspelt tool or capability).
Expected<ToolChoice> select_tool(const ToolRegistry& registry, const ToolNeed& need);

// ---- from inputs to argv -----------------------------------------------------

struct ToolInvocation {
  const RegisteredTool* tool = nullptr;
  const ToolCommand* command = nullptr;
  std::vector<std::string> argv;
};

// The argv a `tool:NAME` step runs, from its (rendered) inputs: `command` names the
// sub-command, every other input is an argument. Fails (InvalidInput) naming the
// problem: an unknown tool or sub-command (did-you-mean), an input no `args` entry
// passes, inputs that do not match the input_schema (each failing path), a value
// that cannot be an argv element. Before the schema check, a string input whose
// input_schema property has type integer, number or boolean (and not string) is
// read as that type when it parses as one — placeholders always render text.
Expected<ToolInvocation> tool_invocation(const ToolRegistry& registry, const std::string& tool,
                                         const nlohmann::json& inputs);
// A placeholder renders text: a string argument whose schema property wants an
// integer, number or boolean (and not a string) is read as one when it parses as one.
void coerce_rendered_text(nlohmann::json& arguments, const nlohmann::json& schema);
// Only the names: the tool, inputs.command and that every other input is passed by
// an `args` entry (argv left empty). For checking a plan whose input values hold
// placeholders, which only an attempt can fill.
Expected<ToolInvocation> resolve_tool_call(const ToolRegistry& registry, const std::string& tool,
                                           const nlohmann::json& inputs);

}  // namespace orch
