#include "exec/mcp_client.h"

#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "exec/mcp_session.h"
#include "orch/event_loop.h"

namespace orch {

namespace {
constexpr int kMaxToolPages = 1000;
}  // namespace

McpClient::McpClient(std::shared_ptr<const ToolRegistry> registry, std::filesystem::path log_folder)
    : registry_(std::move(registry)),
      log_folder_(std::move(log_folder)),
      loop_(std::make_unique<EventLoop>()) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  thread_ = std::thread([this] { run(); });
}

McpClient::~McpClient() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
  ::close(wake_fd_);
}

void McpClient::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void McpClient::run() {
  // Signals are the main thread's to take (the engine's handlers); a write to a
  // server that has gone is EPIPE here, never SIGPIPE.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  loop_->watch(wake_fd_, POLLIN, [this](short) {
    std::uint64_t count = 0;
    [[maybe_unused]] auto n = ::read(wake_fd_, &count, sizeof count);
  });
  while (true) {
    std::deque<std::function<void()>> tasks;
    bool stopping = false;
    {
      std::lock_guard lock(mutex_);
      tasks.swap(tasks_);
      stopping = stopping_;
    }
    // What was asked before the end is done first: a cancel posted by the run's
    // last attempt still reaches its server (notifications/cancelled).
    for (auto& task : tasks) task();
    if (stopping) break;
    loop_->run_once(std::chrono::milliseconds(1000));
  }
  // The end of the run: every server shut down cleanly, one after the other.
  bool keep_logs = false;
  for (auto& [_, session] : sessions_) {
    session->shut_down();
    if (session->deaths() > 0 || !session->dead_reason().empty()) keep_logs = true;
  }
  sessions_.clear();
  loop_->unwatch(wake_fd_);
  loop_.reset();
  std::error_code ec;
  if (!keep_logs) std::filesystem::remove_all(log_folder_, ec);
}

std::filesystem::path McpClient::stderr_log(const std::string& server) const {
  return log_folder_ / (server + ".stderr.log");
}

McpSession* McpClient::session(const std::string& server) {
  if (auto it = sessions_.find(server); it != sessions_.end()) return it->second.get();
  const RegisteredTool* tool = registry_->find(server);
  if (tool == nullptr || tool->kind != ToolKind::Mcp) return nullptr;
  std::error_code ec;
  std::filesystem::create_directories(log_folder_, ec);
  auto made = std::make_unique<McpSession>(*tool, *loop_, stderr_log(server));
  McpSession* out = made.get();
  sessions_[server] = std::move(made);
  return out;
}

Expected<std::vector<mcp::ToolInfo>> McpClient::tools(const std::string& server,
                                                      std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (auto it = tools_.find(server); it != tools_.end()) {
    // A failure is not remembered once its listing has ended: ask again. One
    // still in flight (it outlived a caller's wait) is waited for, not repeated.
    if (it->second || listing_.contains(server)) return it->second;
    tools_.erase(it);
  }
  const bool in_flight = !listing_.insert(server).second;
  lock.unlock();
  if (!in_flight) post_listing(server);
  lock.lock();
  const bool answered = tools_ready_.wait_for(lock, timeout, [&] { return tools_.contains(server); });
  if (!answered)
    tools_.emplace(
        server,
        fail(ErrorCode::Io, fmt::format("MCP server '{}' did not list its tools within {} s", server,
                                        std::chrono::duration_cast<std::chrono::seconds>(timeout).count())));
  return tools_.at(server);
}

void McpClient::post_listing(const std::string& server) {
  post([this, server] {
    McpSession* s = session(server);
    auto finish = [this, server](Expected<std::vector<mcp::ToolInfo>> result) {
      std::lock_guard done_lock(mutex_);
      listing_.erase(server);
      tools_.insert_or_assign(server, std::move(result));
      tools_ready_.notify_all();
    };
    if (s == nullptr) {
      finish(fail(ErrorCode::NotFound, fmt::format("'{}' is not an MCP server of the registry", server)));
      return;
    }
    // One page after the other, following nextCursor; `page` holds itself until the last.
    auto found = std::make_shared<std::vector<mcp::ToolInfo>>();
    auto page = std::make_shared<std::function<void(std::string, int)>>();
    *page = [this, s, server, found, page, finish](std::string cursor, int number) {
      json params = cursor.empty() ? json::object() : json{{"cursor", cursor}};
      s->request("tools/list", params, "tools/list", [=](Expected<json> result) {
        auto next =
            result ? mcp::parse_tool_page(*result) : Expected<mcp::ToolPage>(std::unexpected(result.error()));
        if (next && !next->next_cursor.empty() && number < kMaxToolPages) {
          for (auto& tool : next->tools) found->push_back(std::move(tool));
          (*page)(next->next_cursor, number + 1);
          return;
        }
        if (next) {
          for (auto& tool : next->tools) found->push_back(std::move(tool));
          finish(std::move(*found));
        } else {
          std::string why = next.error().message;
          if (!why.starts_with("MCP server"))
            why = fmt::format("MCP server '{}': tools/list: {}", server, why);
          finish(fail(ErrorCode::InvalidInput, why));
        }
        *page = nullptr;  // the listing is over: let it go
      });
    };
    (*page)("", 1);
  });
}

std::uint64_t McpClient::call(const std::string& server, const std::string& tool, json arguments,
                              CallDone done) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = next_call_++;
  }
  post([this, id, server, tool, arguments = std::move(arguments), done = std::move(done)]() mutable {
    McpSession* s = session(server);
    if (s == nullptr) {
      done(fail(ErrorCode::NotFound, fmt::format("'{}' is not an MCP server of the registry", server)));
      return;
    }
    const std::uint64_t request =
        s->request("tools/call", json{{"name", tool}, {"arguments", std::move(arguments)}},
                   "tools/call " + tool, [this, id, done = std::move(done)](Expected<json> result) {
                     calls_.erase(id);
                     if (!result)
                       done(std::unexpected(result.error()));
                     else
                       done(mcp::parse_call_result(*result));
                   });
    calls_[id] = {s, request};
  });
  return id;
}

void McpClient::cancel(std::uint64_t call, std::string reason) {
  post([this, call, reason = std::move(reason)] {
    auto it = calls_.find(call);
    if (it == calls_.end()) return;
    auto [s, request] = it->second;
    calls_.erase(it);
    s->cancel(request, reason);
  });
}

}  // namespace orch
