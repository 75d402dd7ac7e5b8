// route/tool_route.h — which registry tool a request names, CLI-first (seed 004, Phase 3).
//
// A request is matched to tools only through the capabilities their sub-commands
// declare in the registry (exec/tool_registry.h, docs/tools.md): a capability
// ("count-lines") is named by a request that holds each of its words ("count",
// "lines") as whole words (words.h). Tool names, sub-command names and
// descriptions are not read: a tool called `say` or a sub-command called `run`
// would otherwise fire on every request that says "say" or "run", and prose
// descriptions hold words of every kind.
//
// The choice itself is select_tool's (exec/tool_select.cc), asked once per named
// capability, the capability with more words first: only a dry_run_validated or
// prod_ready tool that is safe_for_agents is chosen, prod_ready first, then the
// lower risk, then the name. When none qualifies, the reason says why (no
// registry; no capability named; the tools that offer it and what kept each out),
// and the caller falls back to a model ("no_match").
//
// Pure functions; thread-safe (a loaded registry is immutable).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "exec/tool_registry.h"

namespace orch::route {

struct ToolRoute {
  bool chosen = false;
  std::string tool;                // chosen: the tool
  std::string command;             // its sub-command
  std::string capability;          // the capability the request named
  std::string status;              // the tool's registry status ("prod_ready")
  std::string risk;                // the tool's level, raised by the sub-command's
  std::vector<std::string> named;  // every capability of the registry the request names
  std::string reason;              // why this tool, or why none
};

ToolRoute route_to_tool(const ToolRegistry* registry, const std::vector<std::string>& words);

// The capability gate's question: does a tool that may be chosen automatically
// offer a capability this request names? (route_to_tool(...).chosen)
bool covered_by_tool(const ToolRegistry* registry, std::string_view request);

}  // namespace orch::route
