// exec/mcp_transport.h — how JSON-RPC messages reach one MCP server and come back.
//
// Two transports, as MCP defines them: stdio (orch starts the server and speaks
// one JSON message per line on its stdin and stdout; its stderr goes to a log
// file, never into the protocol) and streamable HTTP (each message POSTed to the
// server's endpoint; the answer is a JSON body or a stream of server-sent events;
// the session id the server gives at initialize is sent back on every request).
// Both run on the EventLoop they are started on (the MCP client's own thread,
// exec/mcp_client.h) and report through handlers called from that loop.
// Not thread-safe.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "exec/tool_registry.h"
#include "orch/error.h"
#include "orch/event_loop.h"
#include "util/jsonrpc.h"

namespace orch {

class McpTransport {
 public:
  struct Handlers {
    // A message from the server (a result or error for one of orch's requests,
    // or the server's own request or notification).
    std::function<void(jsonrpc::Message)> on_message;
    // The server is gone ("exited with status 1", "killed by signal 9"); called
    // once, after which nothing else is called.
    std::function<void(std::string why)> on_closed;
  };
  virtual ~McpTransport() = default;
  // Sends one message. What cannot be delivered comes back as an error for the
  // request (HTTP) or as on_closed (stdio).
  virtual void send(const nlohmann::json& message) = 0;
  // The protocol version agreed at initialize (HTTP sends it on later requests).
  virtual void set_protocol_version(const std::string&) {}
  // Ends the connection: stdio closes the server's stdin, waits `grace` for it
  // to exit, then SIGTERM to its process group, another `grace`, then SIGKILL;
  // HTTP ends its session (DELETE, turning the loop while it waits: never with a
  // grace from inside a handler). Blocks for at most about twice `grace`. No
  // handler is called afterwards.
  virtual void shut_down(std::chrono::milliseconds grace) = 0;
  // The last bytes the server wrote to its stderr log ("" when none or HTTP).
  virtual std::string stderr_tail() const { return ""; }
};

// Starts `server`'s command (argv, env, cwd) with its stderr appended to `stderr_log`.
Expected<std::unique_ptr<McpTransport>> start_stdio_transport(const RegisteredTool& server,
                                                              const std::filesystem::path& stderr_log,
                                                              EventLoop& loop,
                                                              McpTransport::Handlers handlers);
// Speaks to `server.mcp.url` over HTTP (libcurl, loaded on first use).
Expected<std::unique_ptr<McpTransport>> start_http_transport(const RegisteredTool& server, EventLoop& loop,
                                                             McpTransport::Handlers handlers);

}  // namespace orch
