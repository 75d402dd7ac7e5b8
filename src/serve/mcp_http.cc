// serve/mcp_http.cc — MCP's streamable HTTP transport (serve/mcp_http.h).
#include "serve/mcp_http.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "mcp/session.h"
#include "serve/http_server.h"
#include "serve/listen.h"
#include "serve/token.h"
#include "util/jsonrpc.h"

namespace orch::serve {

namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxSessions = 64;
constexpr std::size_t kMaxBodyBytes = std::size_t{16} << 20;
std::atomic<httplib::Server*> g_mcp_server{nullptr};

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(jsonrpc::line(body), "application/json");
}

// An HTTP refusal with a JSON-RPC error body (id null: no request was read).
void refuse(httplib::Response& res, int status, const std::string& why) {
  send_json(res, status, jsonrpc::error(nullptr, jsonrpc::RpcError(jsonrpc::ErrorCode::InvalidRequest, why)));
}

class McpHttpServer {
 public:
  McpHttpServer(const mcp::ToolCatalog& catalog, mcp::OrchTools& tools, const McpHttpOptions& o)
      : catalog_(catalog), tools_(tools), o_(o) {}

  Expected<void> run() {
    httplib::Server svr;
    svr.set_payload_max_length(kMaxBodyBytes);
    reuse_address_only(svr);
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return guard(req, res) ? httplib::Server::HandlerResponse::Unhandled
                             : httplib::Server::HandlerResponse::Handled;
    });
    svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return;
      const char* why = res.status == 413   ? "the message is too large (16 MiB at most)"
                        : res.status == 404 ? "no such route: MCP is served at /mcp"
                                            : "bad request";
      refuse(res, res.status, why);
    });
    svr.Post("/mcp", [this](const httplib::Request& req, httplib::Response& res) { post(req, res); });
    svr.Delete("/mcp", [this](const httplib::Request& req, httplib::Response& res) { end(req, res); });
    svr.Get("/mcp", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Allow", "POST, DELETE");
      refuse(res, 405, "orch sends no messages of its own: no stream to GET; POST each message");
    });
    const int port = ORCH_TRY(bind_server(svr, o_.host, o_.port));
    origins_ = {origin_of(o_.host, port), fmt::format("http://localhost:{}", port),
                fmt::format("http://127.0.0.1:{}", port), fmt::format("http://[::1]:{}", port)};
    g_mcp_server = &svr;
    if (o_.on_listening) o_.on_listening(origins_.front() + "/mcp");
    svr.listen_after_bind();
    g_mcp_server = nullptr;
    return {};
  }

 private:
  // The token, the origin and the protocol version (mcp_http.h). False: refused.
  bool guard(const httplib::Request& req, httplib::Response& res) {
    const std::string auth = req.get_header_value("Authorization");
    if (!auth.starts_with("Bearer ") || !same_token(o_.token, std::string_view(auth).substr(7))) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"orch mcp\"");
      refuse(res, 401,
             "refused: every request needs `Authorization: Bearer TOKEN` (the token is in orch mcp's "
             "token file)");
      return false;
    }
    if (const std::string origin = req.get_header_value("Origin");
        !origin.empty() && std::find(origins_.begin(), origins_.end(), origin) == origins_.end()) {
      refuse(res, 403, fmt::format("refused: Origin {} is not this server's", origin));
      return false;
    }
    if (const std::string v = req.get_header_value("MCP-Protocol-Version"); !v.empty()) {
      const auto& known = mcp::kProtocolVersions;
      if (std::find(std::begin(known), std::end(known), v) == std::end(known)) {
        refuse(res, 400,
               fmt::format("MCP-Protocol-Version {} is not one orch speaks ({}, {}, {})", v, known[0],
                           known[1], known[2]));
        return false;
      }
    }
    return true;
  }

  void post(const httplib::Request& req, httplib::Response& res) {
    if (const std::string type = req.get_header_value("Content-Type");
        !type.starts_with("application/json")) {
      refuse(res, 415, "a message is sent as Content-Type: application/json");
      return;
    }
    auto parsed = jsonrpc::parse(req.body);
    if (!parsed) {
      send_json(res, 400, jsonrpc::error(parsed.error().id, parsed.error().error));
      return;
    }
    const jsonrpc::Message& m = *parsed;
    std::lock_guard hold(mu_);
    const std::string sid = req.get_header_value("Mcp-Session-Id");
    mcp::Session* session = nullptr;
    if (m.kind == jsonrpc::Kind::Request && m.method == "initialize" && sid.empty()) {
      if (sessions_.size() >= kMaxSessions) {
        refuse(res, 503, fmt::format("{} sessions are open: end one (DELETE /mcp) first", kMaxSessions));
        return;
      }
      auto id = random_hex(16);
      if (!id) {
        refuse(res, 500, id.error().message);
        return;
      }
      auto made = std::make_unique<mcp::Session>(
          catalog_, [this](const std::string& name, const json& args) { return tools_.call(name, args); });
      session = made.get();
      auto reply = session->handle(m);
      if (session->phase() != mcp::Session::Phase::New) {
        sessions_.emplace(*id, std::move(made));
        res.set_header("Mcp-Session-Id", *id);
      }
      send_json(res, 200, *reply);
      return;
    }
    if (sid.empty()) {
      refuse(res, 400,
             "no Mcp-Session-Id: send initialize first, then the session id it gave with each message");
      return;
    }
    auto found = sessions_.find(sid);
    if (found == sessions_.end()) {
      refuse(res, 404, "no such session (ended, or never made): initialize a new one");
      return;
    }
    auto reply = found->second->handle(m);
    if (!reply) {
      res.status = 202;
      return;
    }
    send_json(res, 200, *reply);
  }

  void end(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard hold(mu_);
    if (sessions_.erase(req.get_header_value("Mcp-Session-Id")) == 0) {
      refuse(res, 404, "no such session");
      return;
    }
    res.status = 200;
  }

  const mcp::ToolCatalog& catalog_;
  mcp::OrchTools& tools_;
  const McpHttpOptions& o_;
  std::vector<std::string> origins_;
  std::mutex mu_;  // the sessions, and the tools: one request at a time
  std::map<std::string, std::unique_ptr<mcp::Session>> sessions_;
};

}  // namespace

Expected<void> serve_mcp_http(const mcp::ToolCatalog& catalog, mcp::OrchTools& tools,
                              const McpHttpOptions& options) {
  McpHttpServer server(catalog, tools, options);
  return server.run();
}

void stop_mcp_http() {
  if (httplib::Server* svr = g_mcp_server.load()) svr->stop();
}

}  // namespace orch::serve
