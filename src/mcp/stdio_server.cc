// mcp/stdio_server.cc — `orch mcp` over stdin/stdout (mcp/stdio_server.h).
#include "mcp/stdio_server.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace orch::mcp {

namespace {

using json = nlohmann::json;

class StdioServer {
 public:
  StdioServer(Session& session, int out_fd) : session_(session), out_fd_(out_fd) {}

  // The reader's side: one complete line.
  void on_line(std::string_view line);
  void on_end();
  // A line past kMaxMessageBytes: refused without being kept.
  void on_too_long();
  // The worker's loop, until on_end() and the queue is empty.
  void answer();
  bool write_failed() const { return write_failed_; }

 private:
  void send(const json& message);  // whole line, or write_failed_
  void cancel(const json& id);

  Session& session_;
  const int out_fd_;
  std::mutex write_mu_;
  bool write_failed_ = false;

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<jsonrpc::Message> queue_;
  bool ended_ = false;
  json running_;  // the id of the request the worker is answering; null when none
  bool running_cancelled_ = false;
};

void StdioServer::send(const json& message) {
  std::string text = jsonrpc::line(message);
  text += '\n';
  std::lock_guard lock(write_mu_);
  if (write_failed_) return;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(out_fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      write_failed_ = true;
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

void StdioServer::cancel(const json& id) {
  std::lock_guard lock(mu_);
  if (!running_.is_null() && running_ == id) {
    running_cancelled_ = true;
    return;
  }
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if (it->kind == jsonrpc::Kind::Request && it->id == id) {
      queue_.erase(it);
      return;
    }
}

void StdioServer::on_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  auto parsed = jsonrpc::parse(line);
  if (!parsed) {
    send(jsonrpc::error(parsed.error().id, parsed.error().error));
    return;
  }
  jsonrpc::Message& m = *parsed;
  if (m.kind == jsonrpc::Kind::Request && m.method == "ping") {
    send(jsonrpc::result(m.id, json::object()));  // at once, even while a request runs
    return;
  }
  if (m.kind == jsonrpc::Kind::Notification && m.method == "notifications/cancelled") {
    if (m.params.is_object() && m.params.contains("requestId")) cancel(m.params["requestId"]);
    return;
  }
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(m));
  }
  wake_.notify_one();
}

void StdioServer::on_too_long() {
  send(jsonrpc::error(nullptr, jsonrpc::RpcError(jsonrpc::ErrorCode::ParseError,
                                                 "a message longer than 16 MiB was refused")));
}

void StdioServer::on_end() {
  {
    std::lock_guard lock(mu_);
    ended_ = true;
  }
  wake_.notify_one();
}

void StdioServer::answer() {
  for (;;) {
    jsonrpc::Message m;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return ended_ || !queue_.empty(); });
      if (queue_.empty()) return;
      m = std::move(queue_.front());
      queue_.pop_front();
      running_ = m.kind == jsonrpc::Kind::Request ? m.id : json();
      running_cancelled_ = false;
    }
    std::optional<json> reply = session_.handle(m);
    bool cancelled = false;
    {
      std::lock_guard lock(mu_);
      cancelled = running_cancelled_;
      running_ = nullptr;
    }
    if (reply && !cancelled) send(*reply);
  }
}

}  // namespace

int serve_stdio(Session& session, int in_fd, int out_fd) {
  StdioServer server(session, out_fd);
  std::thread worker([&server] { server.answer(); });
  std::string buffer;
  bool skipping = false;  // inside a line longer than kMaxMessageBytes
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(in_fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view got(chunk, static_cast<std::size_t>(n));
    while (!got.empty()) {
      const std::size_t nl = got.find('\n');
      const std::string_view part = got.substr(0, nl);
      if (!skipping) buffer.append(part);
      if (!skipping && buffer.size() > kMaxMessageBytes) {
        server.on_too_long();
        buffer.clear();
        skipping = true;
      }
      if (nl == std::string_view::npos) break;
      if (!skipping) server.on_line(buffer);
      buffer.clear();
      skipping = false;
      got.remove_prefix(nl + 1);
    }
    if (server.write_failed()) break;
  }
  if (!skipping && !buffer.empty()) server.on_line(buffer);  // a last line without its newline
  server.on_end();
  worker.join();
  return server.write_failed() ? 1 : 0;
}

}  // namespace orch::mcp
