// exec/mcp_client.h — the MCP servers of a tool registry, on a thread of their own.
//
// One McpClient serves one orch process (one run): each `kind: mcp` server of
// the registry is started the first time something asks for it — `orch
// validate`/`orch run` listing its tools to check a step's arguments, an
// attempt calling a tool — and then shared by everything that asks, until the
// client is destroyed, which shuts every server down cleanly (exec/mcp_session.h).
//
// The servers live on the client's own thread and EventLoop, not on the
// engine's: a server outlives every attempt and the engine's loop, its stdout
// is read (and its pings answered) even while no step calls it, and the
// blocking calls of validation need no loop of their own. Replies come back on
// that thread; the executor hands them to the engine's loop (exec/mcp_executor.cc).
//
// Thread-safe: every method may be called from any thread (not from a reply).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "exec/mcp_protocol.h"
#include "exec/tool_registry.h"
#include "orch/error.h"

namespace orch {

class EventLoop;
class McpSession;

class McpClient {
 public:
  using json = nlohmann::json;
  using CallDone = std::function<void(Expected<mcp::CallResult>)>;

  // `registry` must list the servers that will be asked for. Servers' stderr
  // logs go to `log_folder` (created when needed) as SERVER.stderr.log.
  McpClient(std::shared_ptr<const ToolRegistry> registry, std::filesystem::path log_folder);
  ~McpClient();
  McpClient(const McpClient&) = delete;
  McpClient& operator=(const McpClient&) = delete;

  // Every tool of `server` (tools/list, all pages), asked once and remembered;
  // waits at most `timeout`. A server that cannot be asked is an error saying why.
  Expected<std::vector<mcp::ToolInfo>> tools(const std::string& server, std::chrono::milliseconds timeout);

  // tools/call of `tool` on `server` with `arguments`; `done` is called once,
  // on the client's thread, unless the call is cancelled first. Returns the
  // call's id for cancel().
  std::uint64_t call(const std::string& server, const std::string& tool, json arguments, CallDone done);
  // Drops a call: `done` is not called (or has been already); the server is
  // told to stop (notifications/cancelled with `reason`).
  void cancel(std::uint64_t call, std::string reason);

  // Where `server`'s stderr goes.
  std::filesystem::path stderr_log(const std::string& server) const;

 private:
  void post(std::function<void()> task);           // runs `task` on the client's thread
  void post_listing(const std::string& server);    // tools/list, every page, into tools_
  void run();                                      // the thread
  McpSession* session(const std::string& server);  // client thread only

  std::shared_ptr<const ToolRegistry> registry_;
  std::filesystem::path log_folder_;

  std::mutex mutex_;
  std::condition_variable tools_ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  int wake_fd_ = -1;  // eventfd: a task was posted
  std::thread thread_;
  std::map<std::string, Expected<std::vector<mcp::ToolInfo>>> tools_;  // under mutex_
  std::set<std::string> listing_;  // the servers whose tools/list is in flight, under mutex_
  std::uint64_t next_call_ = 1;                                        // under mutex_

  // Client thread only.
  std::unique_ptr<EventLoop> loop_;
  std::map<std::string, std::unique_ptr<McpSession>> sessions_;
  std::map<std::uint64_t, std::pair<McpSession*, std::uint64_t>> calls_;  // call → (session, request)
};

}  // namespace orch
