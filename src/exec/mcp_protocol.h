// exec/mcp_protocol.h — what orch's MCP client says and reads, message by message.
//
// The Model Context Protocol (revision 2025-11-25) as the client side of a
// `kind: mcp` registry entry uses it: the initialize request and the versions
// orch accepts in its answer, the tools of a tools/list page, a tools/call
// result, and the risk a tool's annotations give. Plain functions over JSON
// (util/jsonrpc.h builds the envelopes); no I/O, so each rule is tested alone.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "orch/error.h"
#include "orch/plan.h"

namespace orch::mcp {

using json = nlohmann::json;

// The version orch asks for, and every version it accepts in the answer.
inline constexpr const char* kProtocolVersion = "2025-11-25";
inline constexpr const char* kAcceptedVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

// The params of orch's `initialize` request (no client capabilities: orch
// offers no roots, sampling or elicitation).
json initialize_params();
// The protocol version of the server's answer to `initialize`, or an error
// naming what it answered when orch does not speak that version.
Expected<std::string> accepted_version(const json& initialize_result);

// A tool's behaviour hints (absent when the server did not say). MCP's defaults
// for what is absent: readOnlyHint false, destructiveHint true, idempotentHint
// false, openWorldHint true — so a tool with no annotations may destroy.
struct ToolAnnotations {
  std::optional<bool> read_only;
  std::optional<bool> destructive;
  std::optional<bool> idempotent;
  std::optional<bool> open_world;
  // By the spec's defaults: destructiveHint only means anything when the tool
  // is not read-only.
  bool may_destroy() const { return !read_only.value_or(false) && destructive.value_or(true); }
};

struct ToolInfo {
  std::string name;
  std::string title;
  std::string description;
  json input_schema = json::object();
  json output_schema;  // null when the tool gives none
  ToolAnnotations annotations;
  json annotations_json;  // as the server sent them (null when none)
};

struct ToolPage {
  std::vector<ToolInfo> tools;
  std::string next_cursor;  // "" on the last page
};
// One tools/list result; an error says what is wrong with it.
Expected<ToolPage> parse_tool_page(const json& result);

// A tools/call result.
struct CallResult {
  bool is_error = false;
  std::string text;                // the text content blocks, joined by newlines
  std::optional<json> structured;  // structuredContent, when present
};
Expected<CallResult> parse_call_result(const json& result);

// The level a tool's annotations give: Medium when it may destroy (by the
// spec's defaults, above), else Low.
RiskLevel annotation_risk(const ToolAnnotations& annotations);

}  // namespace orch::mcp
