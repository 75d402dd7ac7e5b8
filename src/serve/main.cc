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
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <thread>

#include "cli/common.h"
#include "orch/clock.h"
#include "orch/engine.h"
#include "serve/http_server.h"
#include "serve/token.h"

namespace {

using namespace orch;

// "HOST:PORT", "[::1]:PORT" or ":PORT" (loopback).
Expected<std::pair<std::string, int>> parse_listen(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return fail(ErrorCode::InvalidInput,
                fmt::format("--listen {}: give HOST:PORT (e.g. 127.0.0.1:8470)", text));
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";
  const std::string port_text = text.substr(colon + 1);
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535)
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("--listen {}: '{}' is not a port (0 to 65535; 0 picks a free one)", text, port_text));
  return std::make_pair(host, port);
}

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
  auto where = parse_listen(listen);
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
  // Signals are waited for by a thread of their own, which stops the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    serve::stop_serving();
  });
  auto served = serve::serve(**ledger, Clock::system(), options);
  if (!served) {
    waiter.detach();
    return cli::report_error(served.error());
  }
  waiter.join();
  std::fprintf(stderr, "orch serve: stopped\n");
  return kExitSucceeded;
}

}  // namespace

int main(int argc, char** argv) {
  return run(argc, argv);
}
