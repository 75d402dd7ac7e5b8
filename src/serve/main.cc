// orch-serve: what `orch serve` runs (the orch binary execs it, cli/cmd_serve.cc).
//
// A program of its own because cpp-httplib is a shared library built against
// the shared libstdc++, which the orch binary does not load (it links its C++
// library statically, for the start-up time of every other command): the HTTP
// server and its C++ objects stay in one process with one libstdc++.
//
//   orch serve [--store PATH|URL] [--listen HOST:PORT] [--token-file F]
//
// Exit status: 0 stopped by a signal (SIGINT, SIGTERM); 2 bad arguments, a
// ledger that is not there, a token file that is not one, or a non-loopback
// address without --token-file; 1 it could not listen (the port in use) or the
// ledger failed.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>

#include "cli/common.h"
#include "orch/clock.h"
#include "orch/engine.h"
#include "serve/http_server.h"
#include "serve/listen.h"
#include "serve/mcp_main.h"
#include "serve/token.h"

namespace {

using namespace orch;

int run(int argc, char** argv) {
  CLI::App app{"orch serve: a live web dashboard over the ledger, with Prometheus /metrics (docs/serve.md)",
               "orch serve"};
  std::string store = cli::kDefaultStore;
  std::string listen = "127.0.0.1:8470";
  std::string token_file;
  app.add_option("--store", store, std::string(cli::kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(cli::kStoreEnv);
  app.add_option("--listen", listen, "HOST:PORT to listen on (default 127.0.0.1:8470; port 0: any free one)");
  app.add_option("--token-file", token_file,
                 "the token's file (default: serve.token beside the ledger); made, 0600, at the first start");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitSucceeded : kExitInvalid;
  }
  auto where = serve::parse_listen(listen);
  if (!where) return cli::report_error(where.error());
  serve::ServeOptions options;
  options.host = where->first;
  options.port = where->second;
  if (!serve::is_loopback(options.host) && token_file.empty())
    return cli::report_error(
        Error{ErrorCode::InvalidInput,
              fmt::format("--listen {}: not a loopback address: orch serve then needs "
                          "every request to carry its token; say which with --token-file F",
                          listen)});
  auto ledger = cli::open_ledger(store, true);
  if (!ledger) return cli::report_error(ledger.error());
  const std::filesystem::path token_path =
      token_file.empty() ? (*ledger)->runs().folder() / "serve.token" : std::filesystem::path(token_file);
  auto token = serve::load_or_make_token(token_path);
  if (!token) return cli::report_error(token.error());
  options.token = token->value;
  options.on_listening = [&](const std::string& url) {
    std::fprintf(stderr, "orch serve: %s (ledger %s)\n", url.c_str(), store.c_str());
    if (token->made)
      std::fprintf(stderr,
                   "orch serve: a new token, printed this once (kept in %s): %s\n"
                   "orch serve: open %s#token=%s to approve, deny and cancel from the page\n",
                   token_path.c_str(), token->value.c_str(), url.c_str(), token->value.c_str());
    else
      std::fprintf(stderr, "orch serve: the token is in %s\n", token_path.c_str());
    std::fflush(stderr);
  };
  return serve::serve_until_signal(
      "orch serve", [&] { return serve::serve(**ledger, Clock::system(), options); }, serve::stop_serving);
}

}  // namespace

int main(int argc, char** argv) {
  // `orch mcp` (cli/cmd_mcp.cc) runs `orch-serve mcp ...`: the MCP server.
  if (argc > 1 && std::string_view(argv[1]) == "mcp") return serve::mcp_main(argc - 1, argv + 1);
  return run(argc, argv);
}
