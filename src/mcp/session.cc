// mcp/session.cc — one MCP session's lifecycle and methods (mcp/session.h).
#include "mcp/session.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace orch::mcp {

namespace {

using json = nlohmann::json;

constexpr const char* kInstructions =
    "orch runs plans durably and checks every step. For a task, follow seed 000's trace: task_plan, then "
    "task_log each stage the trace's pipeline names (each answer says the legal next states), VERIFY "
    "before SUMMARIZE, then task_close. run starts a plan (steps of medium or high risk wait for a "
    "human's `orch approve`); status and logs follow it.";

std::string problems_text(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += "\n  " + p;
  return out;
}

}  // namespace

json call_result_json(const ToolResult& result) {
  json out = {{"content", json::array({{{"type", "text"}, {"text", result.text}}})},
              {"isError", result.is_error}};
  if (!result.is_error && !result.structured.is_null()) out["structuredContent"] = result.structured;
  return out;
}

std::optional<json> Session::handle(const jsonrpc::Message& m) {
  if (m.kind == jsonrpc::Kind::Notification) {
    if (m.method == "notifications/initialized" && phase_ == Phase::Initialized) phase_ = Phase::Ready;
    return std::nullopt;  // others (cancelled: the transport's; progress, roots...) need nothing from orch
  }
  if (m.kind != jsonrpc::Kind::Request) return std::nullopt;
  if (m.method == "ping") return jsonrpc::result(m.id, json::object());
  if (m.method == "initialize") {
    if (phase_ != Phase::New)
      return jsonrpc::error(
          m.id, jsonrpc::RpcError(jsonrpc::ErrorCode::InvalidRequest,
                                  "this session is already initialized: initialize is sent once"));
    return initialize(m);
  }
  if (phase_ == Phase::New)
    return jsonrpc::error(
        m.id, jsonrpc::RpcError(jsonrpc::ErrorCode::InvalidRequest,
                                fmt::format("{} before initialize: the session's first request must be "
                                            "initialize",
                                            m.method)));
  if (m.method == "tools/list") {
    if (m.params.is_object() && m.params.contains("cursor"))
      return jsonrpc::error(
          m.id, jsonrpc::RpcError(jsonrpc::ErrorCode::InvalidParams,
                                  "tools/list: unknown cursor (orch lists every tool in one page)"));
    json tools = json::array();
    for (const auto& t : catalog_.tools()) tools.push_back(t.listing);
    return jsonrpc::result(m.id, {{"tools", std::move(tools)}});
  }
  if (m.method == "tools/call") return call_tool(m);
  return jsonrpc::error(
      m.id, jsonrpc::RpcError(jsonrpc::ErrorCode::MethodNotFound,
                              fmt::format("orch mcp has no method '{}' (it offers tools: tools/list, "
                                          "tools/call; and ping)",
                                          m.method)));
}

json Session::initialize(const jsonrpc::Message& m) {
  if (!m.params.is_object() || !m.params.contains("protocolVersion") ||
      !m.params["protocolVersion"].is_string())
    return jsonrpc::error(
        m.id, jsonrpc::RpcError(jsonrpc::ErrorCode::InvalidParams,
                                "initialize: params.protocolVersion must be a string (e.g. \"2025-11-25\")"));
  const std::string asked = m.params["protocolVersion"].get<std::string>();
  protocol_version_ = kProtocolVersions[0];
  for (const char* v : kProtocolVersions)
    if (asked == v) protocol_version_ = v;
  if (m.params.contains("clientInfo") && m.params["clientInfo"].is_object())
    client_name_ = m.params["clientInfo"].value("name", std::string());
  phase_ = Phase::Initialized;
  return jsonrpc::result(m.id,
                         {{"protocolVersion", protocol_version_},
                          {"capabilities", {{"tools", {{"listChanged", false}}}}},
                          {"serverInfo", {{"name", "orch"}, {"title", "orch"}, {"version", ORCH_VERSION}}},
                          {"instructions", kInstructions}});
}

json Session::call_tool(const jsonrpc::Message& m) {
  if (!m.params.is_object() || !m.params.contains("name") || !m.params["name"].is_string())
    return jsonrpc::error(m.id, jsonrpc::RpcError(jsonrpc::ErrorCode::InvalidParams,
                                                  "tools/call: params.name must be the tool's name"));
  const std::string name = m.params["name"].get<std::string>();
  const ToolSpec* spec = catalog_.find(name);
  if (spec == nullptr)
    return jsonrpc::error(
        m.id, jsonrpc::RpcError(jsonrpc::ErrorCode::InvalidParams,
                                fmt::format("unknown tool '{}'{} (tools/list lists orch's tools)", name,
                                            did_you_mean(name, catalog_.names()))));
  json arguments = m.params.value("arguments", json::object());
  if (arguments.is_null()) arguments = json::object();
  if (!arguments.is_object())
    return jsonrpc::result(
        m.id, call_result_json(ToolResult::error(fmt::format("{}: arguments must be an object", name))));
  if (auto problems = spec->input.validate(arguments); !problems.empty())
    return jsonrpc::result(
        m.id, call_result_json(ToolResult::error(fmt::format(
                  "{}: the arguments do not match its inputSchema:{}", name, problems_text(problems)))));
  ToolResult result = call_(name, arguments);
  if (!result.is_error) {
    if (auto drift = spec->output.validate(result.structured); !drift.empty())
      result =
          ToolResult::error(fmt::format("{}: orch's answer does not follow schemas/{} (a bug in orch, please "
                                        "report it):{}",
                                        name, spec->output_schema_file, problems_text(drift)));
  }
  return jsonrpc::result(m.id, call_result_json(result));
}

}  // namespace orch::mcp
