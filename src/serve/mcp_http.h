// serve/mcp_http.h — `orch mcp --listen HOST:PORT`: MCP's streamable HTTP
// transport (MCP 2025-11-25, "Transports"), at http://HOST:PORT/mcp.
//
//   POST /mcp     one JSON-RPC message. A request is answered with its response
//                 as application/json (orch never needs a stream for it); a
//                 notification or a response with 202 and no body. `initialize`
//                 (without a session) makes a session and names it in the
//                 `Mcp-Session-Id` header; every later message carries it (400
//                 without it, 404 for a session that is not, or no longer, there).
//   DELETE /mcp   ends the session named by `Mcp-Session-Id`.
//   GET /mcp      405: orch sends no messages of its own, so it offers no stream.
//
// Every request needs `Authorization: Bearer TOKEN` (401 otherwise, with
// WWW-Authenticate); a request whose `Origin` is not this server's loopback
// origin is refused (403, against DNS rebinding); an `MCP-Protocol-Version`
// header orch does not speak is 400; a body that is not application/json is
// 415; more than 16 MiB is 413. Sessions share the server's tools and are
// answered one request at a time; at most 64 live at once (503 past that).
// Listening is on loopback only.
#pragma once

#include <functional>
#include <string>

#include "mcp/orch_tools.h"
#include "mcp/tool_catalog.h"
#include "orch/error.h"

namespace orch::serve {

struct McpHttpOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string token;
  std::function<void(const std::string& url)> on_listening;
};

// Serves until stop_mcp_http() (a signal). An error when it cannot listen.
Expected<void> serve_mcp_http(const mcp::ToolCatalog& catalog, mcp::OrchTools& tools,
                              const McpHttpOptions& options);
void stop_mcp_http();

}  // namespace orch::serve
