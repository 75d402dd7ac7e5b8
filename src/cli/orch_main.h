// cli/orch_main.h — the whole command line of orch: parses argv, runs a subcommand,
// and returns the process exit code (docs/cli.md).
#pragma once

namespace orch {

int orch_main(int argc, char** argv);

}  // namespace orch
