// orch serve [--store PATH|URL] [--listen HOST:PORT] [--token-file F]
//
// The dashboard's server is the program orch-serve beside this binary
// (src/serve/main.cc says why it is a program of its own): this command checks
// its options, then hands them to it (execv), so `orch serve` is orch-serve.
#include <fmt/format.h>

#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/detached_driver.h"
#include "orch/engine.h"

namespace orch::cli {

namespace {
struct ServeArgs {
  std::string store = kDefaultStore;
  std::string listen = "127.0.0.1:8470";
  std::string token_file;
};
}  // namespace

Command add_serve(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Serve a live web dashboard of the ledger, with Prometheus /metrics (docs/serve.md).");
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv);
  sub->add_option("--listen", args->listen,
                  "HOST:PORT to listen on (default 127.0.0.1:8470; port 0: any free one). An address beyond "
                  "loopback needs --token-file");
  sub->add_option(
      "--token-file", args->token_file,
      "the token's file (default: serve.token beside the ledger), made with mode 0600 at the first "
      "start; approve, deny and cancel need the token");
  return [args]() -> int {
    std::vector<std::string> words = {"--store", args->store, "--listen", args->listen};
    if (!args->token_file.empty()) {
      words.push_back("--token-file");
      words.push_back(args->token_file);
    }
    return exec_orch_serve(words);
  };
}

}  // namespace orch::cli
