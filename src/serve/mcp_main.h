// serve/mcp_main.h — `orch mcp` (docs/mcp.md): what orch-serve runs when its
// first argument is `mcp` (cli/cmd_mcp.cc execs it so).
#pragma once

namespace orch::serve {

// argv[0] is "mcp"; the options are cli/mcp_flags.h's. Returns the exit code.
int mcp_main(int argc, char** argv);

}  // namespace orch::serve
