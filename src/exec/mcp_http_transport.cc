// exec/mcp_http_transport.cc — an MCP server reached at a URL (streamable HTTP).
//
// Every message orch sends is one POST to the endpoint (Accept: application/json,
// text/event-stream). The server answers a request with a JSON body, or with a
// stream of server-sent events that carries the response (and maybe its own
// requests and notifications first) and then ends; a notification or a response
// is accepted with 202 and no body. The Mcp-Session-Id the server gives in its
// answer to initialize is sent on every later request, with MCP-Protocol-Version;
// shutting down DELETEs the session. An exchange that fails (no connection, an
// HTTP error) comes back as a JSON-RPC error for the request it carried.
#include <fmt/format.h>

#include <map>

#include "exec/http_client.h"
#include "exec/mcp_transport.h"
#include "util/strings.h"

namespace orch {

namespace {

// The events of a text/event-stream body: each one's `data:` lines, joined.
std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> events;
  std::string data;
  bool has_data = false;
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    std::string_view line(body.data() + start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (has_data) events.push_back(data);
      data.clear();
      has_data = false;
    } else if (line.starts_with("data:")) {
      line.remove_prefix(5);
      if (line.starts_with(" ")) line.remove_prefix(1);
      if (has_data) data += '\n';
      data += line;
      has_data = true;
    }
    if (end == body.size()) break;
    start = end + 1;
  }
  if (has_data) events.push_back(data);
  return events;
}

class HttpTransport final : public McpTransport {
 public:
  HttpTransport(const RegisteredTool& server, EventLoop& loop, Handlers handlers)
      : url_(server.mcp.url), loop_(loop), http_(loop), handlers_(std::move(handlers)) {}

  void send(const nlohmann::json& message) override {
    if (closed_) return;
    HttpRequest request;
    request.url = url_;
    request.headers = base_headers();
    request.headers.emplace_back("Content-Type", "application/json");
    request.headers.emplace_back("Accept", "application/json, text/event-stream");
    request.body = jsonrpc::line(message);
    const nlohmann::json id = message.contains("method") && message.contains("id") ? message["id"] : nullptr;
    const bool initialize = message.value("method", "") == "initialize";
    const auto key = next_++;
    in_flight_[key] = http_.start(std::move(request), [this, key, id, initialize](HttpResponse response) {
      in_flight_.erase(key);
      answered(response, id, initialize);
    });
  }

  void set_protocol_version(const std::string& version) override { version_ = version; }

  void shut_down(std::chrono::milliseconds grace) override {
    if (closed_) return;
    closed_ = true;
    for (const auto& [_, request] : in_flight_) http_.cancel(request);
    in_flight_.clear();
    // No grace: dropped at once (this may be inside a handler, where the loop
    // must not be turned); the server ends the session by its own timeout.
    if (session_.empty() || grace.count() == 0) return;
    HttpRequest request;
    request.method = "DELETE";
    request.url = url_;
    request.headers = base_headers();
    request.timeout = std::max(grace, std::chrono::milliseconds(100));
    const auto until = std::chrono::steady_clock::now() + request.timeout;
    bool done = false;
    http_.start(std::move(request), [&done](HttpResponse) { done = true; });
    while (!done && std::chrono::steady_clock::now() < until) loop_.run_once(std::chrono::milliseconds(50));
  }

 private:
  std::vector<std::pair<std::string, std::string>> base_headers() const {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!session_.empty()) headers.emplace_back("Mcp-Session-Id", session_);
    if (!version_.empty()) headers.emplace_back("MCP-Protocol-Version", version_);
    return headers;
  }

  void answered(const HttpResponse& response, const nlohmann::json& id, bool initialize) {
    if (closed_) return;
    if (response.status == 0 || response.status >= 400) {
      if (id.is_null()) return;  // a notification or response that did not land: nothing waits for it
      std::string why = response.status == 0 ? fmt::format("{}: {}", url_, response.error)
                                             : fmt::format("{}: HTTP {}: {}", url_, response.status,
                                                           quote_for_message(response.body, 200));
      jsonrpc::Message error;
      error.kind = jsonrpc::Kind::Error;
      error.id = id;
      error.error = jsonrpc::RpcError(jsonrpc::ErrorCode::InternalError, why);
      handlers_.on_message(std::move(error));
      return;
    }
    if (initialize)
      if (auto session = response.header("mcp-session-id")) session_ = *session;
    const std::string type = response.header("content-type").value_or("");
    std::vector<std::string> bodies;
    if (type.find("text/event-stream") != std::string::npos)
      bodies = sse_data(response.body);
    else if (!trim(response.body).empty())
      bodies.push_back(response.body);
    for (const std::string& body : bodies) {
      auto message = jsonrpc::parse(body);
      if (!message) continue;
      handlers_.on_message(std::move(*message));
      if (closed_) return;
    }
  }

  std::string url_;
  EventLoop& loop_;
  HttpClient http_;
  Handlers handlers_;
  std::string session_;
  std::string version_;
  std::map<std::uint64_t, HttpClient::RequestId> in_flight_;
  std::uint64_t next_ = 1;
  bool closed_ = false;
};

}  // namespace

Expected<std::unique_ptr<McpTransport>> start_http_transport(const RegisteredTool& server, EventLoop& loop,
                                                             McpTransport::Handlers handlers) {
  return std::unique_ptr<McpTransport>(std::make_unique<HttpTransport>(server, loop, std::move(handlers)));
}

}  // namespace orch
