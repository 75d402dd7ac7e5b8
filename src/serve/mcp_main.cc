// serve/mcp_main.cc — `orch mcp`: the tools opened once, then served over
// stdio (mcp/stdio_server.h) or, with --listen, streamable HTTP (serve/mcp_http.h).
#include "serve/mcp_main.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/common.h"
#include "cli/mcp_flags.h"
#include "mcp/orch_tools.h"
#include "mcp/session.h"
#include "mcp/stdio_server.h"
#include "orch/engine.h"
#include "serve/http_server.h"
#include "serve/listen.h"
#include "serve/mcp_http.h"
#include "serve/token.h"

namespace orch::serve {

namespace {

int serve_stdin(const mcp::ToolCatalog& catalog, mcp::OrchTools& tools) {
  // The protocol owns standard output: it gets a descriptor of its own, and
  // descriptor 1 becomes stderr, so that nothing else printed (a library's
  // line, a progress note) can slip between two messages.
  const int protocol = ::dup(STDOUT_FILENO);
  if (protocol < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    return cli::report_error(Error{ErrorCode::Io, "cannot set standard output apart for the protocol"});
  signal(SIGPIPE, SIG_IGN);  // a client gone: the write fails, the server ends
  mcp::Session session(catalog, [&tools](const std::string& name, const nlohmann::json& args) {
    return tools.call(name, args);
  });
  const int code = mcp::serve_stdio(session, STDIN_FILENO, protocol);
  ::close(protocol);
  return code == 0 ? kExitSucceeded : kExitFailed;
}

int serve_http(const cli::McpArgs& args, const mcp::ToolCatalog& catalog, mcp::OrchTools& tools) {
  auto where = parse_listen(args.listen);
  if (!where) return cli::report_error(where.error());
  if (!is_loopback(where->first))
    return cli::report_error(
        Error{ErrorCode::InvalidInput,
              fmt::format("--listen {}: orch mcp listens on a loopback address only "
                          "(127.0.0.1, ::1, localhost): it runs plans for whoever holds the "
                          "token",
                          args.listen)});
  const std::filesystem::path token_path =
      args.token_file.empty() ? tools.ledger_folder() / "mcp.token" : std::filesystem::path(args.token_file);
  auto token = load_or_make_token(token_path);
  if (!token) return cli::report_error(token.error());
  McpHttpOptions options;
  options.host = where->first;
  options.port = where->second;
  options.token = token->value;
  options.on_listening = [&](const std::string& url) {
    std::fprintf(stderr, "orch mcp: %s (token in %s)\n", url.c_str(), token_path.c_str());
    std::fflush(stderr);
  };
  return serve_until_signal(
      "orch mcp", [&] { return serve_mcp_http(catalog, tools, options); }, stop_mcp_http);
}

}  // namespace

int mcp_main(int argc, char** argv) {
  CLI::App app{"orch mcp: orch's tools for agents over the Model Context Protocol (docs/mcp.md)", "orch mcp"};
  cli::McpArgs args;
  cli::add_mcp_flags(app, args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitSucceeded : kExitInvalid;
  }
  const mcp::ToolCatalog& catalog = mcp::ToolCatalog::shipped();
  mcp::ServerOptions options;
  options.flags = args.flags;
  auto tools = mcp::OrchTools::open(options);
  if (!tools) return cli::report_error(tools.error());
  return args.listen.empty() ? serve_stdin(catalog, **tools) : serve_http(args, catalog, **tools);
}

}  // namespace orch::serve
