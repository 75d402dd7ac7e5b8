// cli/mcp_flags.h — the options of `orch mcp` (docs/mcp.md), declared once:
// `orch mcp` checks them and hands them to orch-serve, which parses them again
// with the same declarations (src/serve/mcp_main.cc).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/task_env.h"

namespace orch::cli {

struct McpArgs {
  TaskFlags flags;         // --store, --workspace, --models, --registry, --workers, the planner's
  std::string listen;      // HOST:PORT: streamable HTTP instead of stdio
  std::string token_file;  // with --listen: the bearer token's file
};

void add_mcp_flags(CLI::App& app, McpArgs& args);

// The same options as words, for orch-serve's command line (only those given).
std::vector<std::string> mcp_words(const McpArgs& args);

}  // namespace orch::cli
