// exec/mcp_session.h — one MCP server as a run uses it: started on first use,
// shared by every call, restarted once, shut down at the end.
//
// The session owns the server's transport and speaks the MCP lifecycle over it:
// `initialize` (protocolVersion 2025-11-25; the server's answer must be one of
// the versions mcp_protocol.h accepts), then `notifications/initialized`, then
// the requests that waited for it. It answers the server's `ping` (and refuses
// its other requests, MethodNotFound: orch offers no client capabilities).
//
// tools/call requests are held to the server's max_concurrency in flight; the
// rest wait in order. A request can be cancelled: its reply is then never
// called, and the server is told (`notifications/cancelled` with the reason).
//
// When the server dies, every request in flight fails with "MCP server X
// exited (status …) during tools/call Y" (its stderr's last lines after it); the
// next request starts it again, once. After its second death, or when it cannot
// be started or initialized at all, the session is dead: every request fails at
// once with the reason, for the rest of the session.
//
// Lives on one EventLoop's thread (the MCP client's, exec/mcp_client.h).
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "exec/mcp_transport.h"
#include "exec/tool_registry.h"
#include "orch/error.h"
#include "orch/event_loop.h"

namespace orch {

class McpSession {
 public:
  using json = nlohmann::json;
  // The request's result, or an Error whose message says why there is none.
  using Reply = std::function<void(Expected<json>)>;

  // `server` must outlive the session. The server's stderr is appended to `stderr_log`.
  McpSession(const RegisteredTool& server, EventLoop& loop, std::filesystem::path stderr_log);
  ~McpSession();  // shut_down()
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;

  // Sends `method` once the server is ready (starting it when it is not
  // running). `label` names the request in failures ("tools/call write_file").
  // Returns an id for cancel().
  std::uint64_t request(std::string method, json params, std::string label, Reply reply);
  // Drops the request: its reply is never called; a request already sent is
  // cancelled at the server with `reason`.
  void cancel(std::uint64_t id, const std::string& reason);
  // Ends the server cleanly (stdin closed, SIGTERM after 2 s, then SIGKILL);
  // what waits fails with "the run ended". The session can start again after.
  void shut_down();

  // How many times the server died during a request or between them.
  int deaths() const { return deaths_; }
  // Why it may not start again, or "" while it may.
  const std::string& dead_reason() const { return dead_; }

 private:
  enum class State { Stopped, Starting, Ready };
  struct Pending {
    std::string method;
    json params;
    std::string label;
    Reply reply;
    bool sent = false;
  };

  void start_server();
  void on_message(jsonrpc::Message message);
  void on_closed(const std::string& why);
  void on_initialized(Expected<json> result);
  void pump();  // sends what may be sent now
  // Lets go of the transport, destroying it in the loop's next turn: this may be
  // called from inside one of its handlers, which must not see it destroyed.
  std::shared_ptr<McpTransport> retire_transport();
  void send(std::uint64_t id, Pending& pending);
  bool limited(const Pending& pending) const { return pending.method == "tools/call"; }
  void fail_all(const std::string& why, bool only_sent);
  void finish(std::uint64_t id, Expected<json> result);

  const RegisteredTool& server_;
  EventLoop& loop_;
  std::filesystem::path stderr_log_;
  std::unique_ptr<McpTransport> transport_;
  State state_ = State::Stopped;
  std::uint64_t next_id_ = 1;
  std::uint64_t initialize_id_ = 0;
  EventLoop::TimerId initialize_timer_ = 0;
  std::map<std::uint64_t, Pending> pending_;  // by JSON-RPC id, in the order asked
  int calls_in_flight_ = 0;
  int deaths_ = 0;
  std::string dead_;
};

}  // namespace orch
