// orch serve [--store PATH|URL] [--listen HOST:PORT] [--token-file F]
//
// The dashboard's server is the program orch-serve beside this binary
// (src/serve/main.cc says why it is a program of its own): this command checks
// its options, then hands them to it (execv), so `orch serve` is orch-serve.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
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
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path server = self.parent_path() / "orch-serve";
    std::vector<std::string> words = {"orch-serve", "--store", args->store, "--listen", args->listen};
    if (!args->token_file.empty()) {
      words.push_back("--token-file");
      words.push_back(args->token_file);
    }
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    ::execv(server.c_str(), argv.data());
    return report_error(
        Error{ErrorCode::Io, fmt::format("cannot start {}: {} (orch-serve is built and installed beside orch "
                                         "when cpp-httplib is there: scripts/install-deps.sh installs it)",
                                         server.string(), std::strerror(errno))});
  };
}

}  // namespace orch::cli
