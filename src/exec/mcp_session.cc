#include "exec/mcp_session.h"

#include <fmt/format.h>

#include <vector>

#include "exec/mcp_protocol.h"

namespace orch {

namespace {

constexpr std::chrono::milliseconds kInitializeTimeout{30'000};
constexpr std::chrono::milliseconds kShutdownGrace{2'000};

// The server's last stderr lines, to follow a failure ("" when it said nothing).
std::string stderr_note(const std::string& tail) {
  if (tail.empty()) return "";
  constexpr std::size_t kShown = 400;
  std::string shown = tail.size() > kShown ? "…" + tail.substr(tail.size() - kShown) : tail;
  return fmt::format("; its stderr ends: {}", shown);
}

}  // namespace

McpSession::McpSession(const RegisteredTool& server, EventLoop& loop, std::filesystem::path stderr_log)
    : server_(server), loop_(loop), stderr_log_(std::move(stderr_log)) {}

McpSession::~McpSession() {
  shut_down();
}

std::uint64_t McpSession::request(std::string method, json params, std::string label, Reply reply) {
  const std::uint64_t id = next_id_++;
  pending_[id] = Pending{std::move(method), std::move(params), std::move(label), std::move(reply), false};
  if (!dead_.empty()) {
    loop_.defer([this, id] { finish(id, fail(ErrorCode::Spawn, dead_)); });
    return id;
  }
  if (state_ == State::Stopped) start_server();
  if (state_ == State::Ready) pump();
  return id;
}

void McpSession::cancel(std::uint64_t id, const std::string& reason) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  if (it->second.sent) {
    if (limited(it->second)) --calls_in_flight_;
    if (transport_)
      transport_->send(
          jsonrpc::notification("notifications/cancelled", {{"requestId", id}, {"reason", reason}}));
  }
  pending_.erase(it);
  if (state_ == State::Ready) pump();
}

void McpSession::shut_down() {
  if (initialize_timer_ != 0) loop_.cancel_timer(initialize_timer_);
  initialize_timer_ = 0;
  if (transport_) {
    transport_->shut_down(kShutdownGrace);
    transport_.reset();
  }
  state_ = State::Stopped;
  fail_all(fmt::format("MCP server '{}' was shut down before it answered", server_.name), false);
}

void McpSession::start_server() {
  state_ = State::Starting;
  McpTransport::Handlers handlers{[this](jsonrpc::Message m) { on_message(std::move(m)); },
                                  [this](std::string why) { on_closed(why); }};
  auto transport = server_.mcp.url.empty()
                       ? start_stdio_transport(server_, stderr_log_, loop_, std::move(handlers))
                       : start_http_transport(server_, loop_, std::move(handlers));
  if (!transport) {
    state_ = State::Stopped;
    dead_ = transport.error().message;
    loop_.defer([this] { fail_all(dead_, false); });
    return;
  }
  transport_ = std::move(*transport);
  initialize_id_ = next_id_++;
  transport_->send(jsonrpc::request(initialize_id_, "initialize", mcp::initialize_params()));
  initialize_timer_ = loop_.add_timer(kInitializeTimeout, [this] {
    initialize_timer_ = 0;
    on_initialized(fail(ErrorCode::Io, fmt::format("no answer to initialize within {} s",
                                                   kInitializeTimeout.count() / 1000)));
  });
}

void McpSession::on_initialized(Expected<json> result) {
  if (initialize_timer_ != 0) loop_.cancel_timer(initialize_timer_);
  initialize_timer_ = 0;
  initialize_id_ = 0;
  Expected<std::string> version =
      result ? mcp::accepted_version(*result) : Expected<std::string>(std::unexpected(result.error()));
  if (!version) {
    std::string tail = transport_ ? transport_->stderr_tail() : "";
    if (transport_) transport_->shut_down(std::chrono::milliseconds(0));
    retire_transport();  // this may run inside the transport's own handler
    state_ = State::Stopped;
    dead_ = fmt::format("MCP server '{}' could not be initialized: {}{}", server_.name,
                        version.error().message, stderr_note(tail));
    fail_all(dead_, false);
    return;
  }
  transport_->set_protocol_version(*version);
  transport_->send(jsonrpc::notification("notifications/initialized"));
  state_ = State::Ready;
  pump();
}

void McpSession::on_message(jsonrpc::Message message) {
  using jsonrpc::Kind;
  if (message.kind == Kind::Request) {
    if (message.method == "ping")
      transport_->send(jsonrpc::result(message.id, json::object()));
    else
      transport_->send(jsonrpc::error(
          message.id,
          jsonrpc::RpcError(jsonrpc::ErrorCode::MethodNotFound,
                            fmt::format("orch's MCP client does not offer '{}'", message.method))));
    return;
  }
  if (message.kind == Kind::Notification) return;  // progress, logging, list changes: nothing waits on them
  if (!message.id.is_number_unsigned() && !message.id.is_number_integer()) return;
  const auto id = message.id.get<std::uint64_t>();
  Expected<json> result =
      message.kind == Kind::Result
          ? Expected<json>(std::move(message.result))
          : fail(ErrorCode::InvalidInput, message.error.message.empty()
                                              ? fmt::format("error {}", message.error.code)
                                              : message.error.message);
  if (id != 0 && id == initialize_id_) {
    on_initialized(std::move(result));
    return;
  }
  finish(id, std::move(result));
}

void McpSession::on_closed(const std::string& why) {
  std::shared_ptr<McpTransport> gone = retire_transport();
  if (initialize_timer_ != 0) loop_.cancel_timer(initialize_timer_);
  initialize_timer_ = 0;
  const std::string note = stderr_note(gone ? gone->stderr_tail() : "");
  const bool starting = state_ == State::Starting;
  state_ = State::Stopped;
  ++deaths_;
  std::vector<std::uint64_t> in_flight;
  for (const auto& [id, pending] : pending_)
    if (pending.sent) in_flight.push_back(id);
  for (std::uint64_t id : in_flight) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    finish(id, fail(ErrorCode::Spawn, fmt::format("MCP server '{}' exited ({}) during {}{}", server_.name,
                                                  why, it->second.label, note)));
  }
  if (deaths_ >= 2 || starting) {
    dead_ = starting
                ? fmt::format("MCP server '{}' exited ({}) before it answered initialize{}", server_.name,
                              why, note)
                : fmt::format("MCP server '{}' is dead: it exited twice during the run (the last time: {}){}",
                              server_.name, why, note);
    fail_all(dead_, false);
    return;
  }
  if (!pending_.empty()) start_server();  // once: the calls that waited go to the new server
}

std::shared_ptr<McpTransport> McpSession::retire_transport() {
  std::shared_ptr<McpTransport> gone(std::move(transport_));
  if (gone) loop_.defer([gone] {});
  return gone;
}

void McpSession::pump() {
  for (auto& [id, pending] : pending_) {
    if (state_ != State::Ready || !transport_) return;
    if (pending.sent) continue;
    if (limited(pending) && calls_in_flight_ >= server_.mcp.max_concurrency) continue;
    send(id, pending);
  }
}

void McpSession::send(std::uint64_t id, Pending& pending) {
  pending.sent = true;
  if (limited(pending)) ++calls_in_flight_;
  transport_->send(jsonrpc::request(id, pending.method, pending.params));
}

void McpSession::fail_all(const std::string& why, bool only_sent) {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, pending] : pending_)
    if (!only_sent || pending.sent) ids.push_back(id);
  for (std::uint64_t id : ids) finish(id, fail(ErrorCode::Spawn, why));
}

void McpSession::finish(std::uint64_t id, Expected<json> result) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  if (it->second.sent && limited(it->second)) --calls_in_flight_;
  Reply reply = std::move(it->second.reply);
  pending_.erase(it);
  if (reply) reply(std::move(result));
  if (state_ == State::Ready) pump();
}

}  // namespace orch
