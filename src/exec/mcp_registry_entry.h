// exec/mcp_registry_entry.h — reading a registry entry of `kind: mcp` (an MCP server).
//
// The registry reader (tool_registry.cc) reads what every entry has (kind,
// description, status, safe_for_agents, risk, and `command` as words with a
// relative program path made absolute) and hands the rest of an MCP server's
// entry to read_mcp_server, through the RegistryFields it reads with, so every
// problem is "FILE:LINE: FIELD: message" like the rest of the file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "exec/tool_registry.h"

namespace orch {

// The checks a registry entry is read with; `pointer` is the JSON pointer of the
// object the key is in.
class RegistryFields {
 public:
  using ojson = nlohmann::ordered_json;
  virtual ~RegistryFields() = default;
  virtual void problem(const std::string& pointer, const std::string& message, bool at_key = false) = 0;
  virtual void only_keys(const ojson& object, const std::string& pointer,
                         const std::vector<std::string>& known, bool notes_allowed = true) = 0;
  virtual std::optional<std::string> text(const ojson& object, const std::string& pointer,
                                          const std::string& key) = 0;
  virtual std::optional<std::vector<std::string>> words(const ojson& object, const std::string& pointer,
                                                        const std::string& key, bool allow_empty_word) = 0;
  virtual std::optional<RiskLevel> risk(const ojson& object, const std::string& pointer) = 0;
};

// The keys an MCP server's entry may have.
inline const std::vector<std::string> kMcpEntryKeys = {"kind", "description",     "status", "safe_for_agents",
                                                       "risk", "command",         "env",    "cwd",
                                                       "url",  "max_concurrency", "tools"};

// Fills tool.mcp from the entry `value` (at `pointer`): exactly one of `command`
// and `url`; `env` (names → strings), `cwd` (relative to `base_dir`, the
// registry's folder), `max_concurrency` (1..64), `tools` (tool name → {risk}).
// The server's own name may not hold a '.' (steps name `tool:SERVER.TOOL`).
void read_mcp_server(RegistryFields& fields, const nlohmann::ordered_json& value, const std::string& pointer,
                     const std::filesystem::path& base_dir, RegisteredTool& tool);

}  // namespace orch
