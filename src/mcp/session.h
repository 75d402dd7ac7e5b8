// mcp/session.h — one MCP session of `orch mcp`: the protocol's lifecycle and
// methods, whatever carries the messages (mcp/stdio_server.h, the serve layer's
// streamable HTTP).
//
// Lifecycle (MCP 2025-11-25, "Lifecycle"): the first request is `initialize`;
// orch answers with the protocol version (the client's when orch speaks it —
// 2025-11-25, 2025-06-18 or 2025-03-26 — else its own latest, for the client to
// decide), its capabilities (tools) and serverInfo; then the client's
// `notifications/initialized`. Before `initialize`, every request but `ping` is
// refused (InvalidRequest, saying to initialize); a second `initialize` too.
//
// Methods: ping; tools/list (every tool in one page: orch has 13); tools/call:
// an unknown tool is a protocol error (InvalidParams, with a did-you-mean);
// arguments that do not match the tool's inputSchema are a tool error (isError,
// each failing path), as the specification asks, so that the model can correct
// them; a tool that fails is a tool error with orch's message; a tool that
// succeeds answers its document as structuredContent (checked against the
// tool's outputSchema first: a document that drifted is orch's bug, said as a
// tool error rather than sent) and one line of text.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "mcp/orch_tools.h"
#include "mcp/tool_catalog.h"
#include "util/jsonrpc.h"

namespace orch::mcp {

// The protocol versions orch speaks, newest first.
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

using ToolCaller = std::function<ToolResult(const std::string& name, const nlohmann::json& arguments)>;

class Session {
 public:
  enum class Phase {
    New,          // nothing yet: initialize (or ping) only
    Initialized,  // initialize answered; notifications/initialized expected
    Ready,        // the client said it is initialized
  };

  Session(const ToolCatalog& catalog, ToolCaller call) : catalog_(catalog), call_(std::move(call)) {}

  // The answer to one message: a result or an error for a request, nothing for
  // a notification or a response (orch sends no requests of its own).
  std::optional<nlohmann::json> handle(const jsonrpc::Message& message);

  Phase phase() const { return phase_; }
  const std::string& protocol_version() const { return protocol_version_; }
  const std::string& client_name() const { return client_name_; }

 private:
  nlohmann::json initialize(const jsonrpc::Message& m);
  nlohmann::json call_tool(const jsonrpc::Message& m);

  const ToolCatalog& catalog_;
  ToolCaller call_;
  Phase phase_ = Phase::New;
  std::string protocol_version_;
  std::string client_name_;
};

// The result of tools/call for `result`: content (one text item),
// structuredContent when there is a document, isError.
nlohmann::json call_result_json(const ToolResult& result);

}  // namespace orch::mcp
