#include "exec/mcp_protocol.h"

#include <fmt/format.h>

namespace orch::mcp {

namespace {

std::optional<bool> hint(const json& annotations, const char* name) {
  if (!annotations.is_object()) return std::nullopt;
  auto it = annotations.find(name);
  if (it == annotations.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

std::string string_member(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

json initialize_params() {
  return json{{"protocolVersion", kProtocolVersion},
              {"capabilities", json::object()},
              {"clientInfo", {{"name", "orch"}, {"version", ORCH_VERSION}}}};
}

Expected<std::string> accepted_version(const json& result) {
  if (!result.is_object() || !result.contains("protocolVersion") || !result["protocolVersion"].is_string())
    return fail(ErrorCode::InvalidInput, "its answer to initialize has no protocolVersion");
  const std::string version = result["protocolVersion"].get<std::string>();
  for (const char* accepted : kAcceptedVersions)
    if (version == accepted) return version;
  return fail(ErrorCode::InvalidInput,
              fmt::format("it speaks MCP {}; orch speaks 2025-11-25, 2025-06-18 and 2025-03-26", version));
}

Expected<ToolPage> parse_tool_page(const json& result) {
  if (!result.is_object() || !result.contains("tools") || !result["tools"].is_array())
    return fail(ErrorCode::InvalidInput, "its tools/list result has no `tools` list");
  ToolPage page;
  for (const json& item : result["tools"]) {
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string())
      return fail(ErrorCode::InvalidInput,
                  fmt::format("its tools/list has a tool with no name: {}", item.dump().substr(0, 200)));
    ToolInfo tool;
    tool.name = item["name"].get<std::string>();
    tool.title = string_member(item, "title");
    tool.description = string_member(item, "description");
    if (auto it = item.find("inputSchema"); it != item.end() && it->is_object()) tool.input_schema = *it;
    if (auto it = item.find("outputSchema"); it != item.end() && it->is_object()) tool.output_schema = *it;
    if (auto it = item.find("annotations"); it != item.end() && it->is_object()) {
      tool.annotations_json = *it;
      tool.annotations = ToolAnnotations{hint(*it, "readOnlyHint"), hint(*it, "destructiveHint"),
                                         hint(*it, "idempotentHint"), hint(*it, "openWorldHint")};
    }
    page.tools.push_back(std::move(tool));
  }
  if (auto it = result.find("nextCursor"); it != result.end() && it->is_string())
    page.next_cursor = it->get<std::string>();
  return page;
}

Expected<CallResult> parse_call_result(const json& result) {
  if (!result.is_object()) return fail(ErrorCode::InvalidInput, "its tools/call result is not an object");
  CallResult out;
  if (auto it = result.find("isError"); it != result.end() && it->is_boolean())
    out.is_error = it->get<bool>();
  if (auto it = result.find("content"); it != result.end() && it->is_array()) {
    for (const json& block : *it) {
      if (!block.is_object() || string_member(block, "type") != "text") continue;
      if (!out.text.empty()) out.text += "\n";
      out.text += string_member(block, "text");
    }
  }
  if (auto it = result.find("structuredContent"); it != result.end() && !it->is_null()) out.structured = *it;
  return out;
}

RiskLevel annotation_risk(const ToolAnnotations& annotations) {
  return annotations.may_destroy() ? RiskLevel::Medium : RiskLevel::Low;
}

}  // namespace orch::mcp
