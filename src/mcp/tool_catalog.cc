// mcp/tool_catalog.cc — the tools of `orch mcp` (mcp/tool_catalog.h).
#include "mcp/tool_catalog.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "mcp/embedded_files.h"

namespace orch::mcp {

namespace {

using json = nlohmann::json;

Expected<ToolSpec> read_tool(const json& entry, std::size_t index) {
  const std::string where = fmt::format("tools[{}]", index);
  if (!entry.is_object()) return fail(ErrorCode::InvalidInput, where + ": not an object");
  for (const char* key : {"name", "title", "description", "outputSchema"})
    if (!entry.contains(key) || !entry[key].is_string())
      return fail(ErrorCode::InvalidInput, fmt::format("{}: '{}' must be a string", where, key));
  for (const char* key : {"annotations", "inputSchema"})
    if (!entry.contains(key) || !entry[key].is_object())
      return fail(ErrorCode::InvalidInput, fmt::format("{}: '{}' must be an object", where, key));
  ToolSpec spec;
  spec.name = entry["name"].get<std::string>();
  spec.output_schema_file = entry["outputSchema"].get<std::string>();
  const auto& schemas = output_schema_texts();
  auto file = schemas.find(spec.output_schema_file);
  if (file == schemas.end())
    return fail(ErrorCode::InvalidInput,
                fmt::format("tool '{}': outputSchema: no schemas/{}", spec.name, spec.output_schema_file));
  json output = json::parse(file->second, nullptr, false);
  // MCP: a tool's outputSchema describes an object (structuredContent is one).
  if (!output.is_object() || output.value("type", "") != "object")
    return fail(ErrorCode::InvalidInput, fmt::format("tool '{}': schemas/{} does not describe an object",
                                                     spec.name, spec.output_schema_file));
  if (entry["inputSchema"].value("type", "") != "object")
    return fail(ErrorCode::InvalidInput,
                fmt::format("tool '{}': inputSchema: type must be object", spec.name));
  auto input = JsonSchema::parse(entry["inputSchema"]);
  if (!input)
    return fail(ErrorCode::InvalidInput,
                fmt::format("tool '{}': inputSchema: {}", spec.name, input.error().message));
  auto compiled_output = JsonSchema::parse(output);
  if (!compiled_output)
    return fail(ErrorCode::InvalidInput,
                fmt::format("tool '{}': schemas/{}: {}", spec.name, spec.output_schema_file,
                            compiled_output.error().message));
  spec.input = std::move(*input);
  spec.output = std::move(*compiled_output);
  spec.listing = {{"name", spec.name},
                  {"title", entry["title"]},
                  {"description", entry["description"]},
                  {"inputSchema", entry["inputSchema"]},
                  {"outputSchema", std::move(output)},
                  {"annotations", entry["annotations"]}};
  spec.listing["annotations"]["title"] = entry["title"];
  return spec;
}

}  // namespace

Expected<ToolCatalog> parse_tool_catalog(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("tools") || !doc["tools"].is_array())
    return fail(ErrorCode::InvalidInput, "the tool catalogue must be an object with a 'tools' array");
  ToolCatalog catalog;
  for (std::size_t i = 0; i < doc["tools"].size(); ++i) {
    auto spec = ORCH_TRY(read_tool(doc["tools"][i], i));
    if (catalog.find(spec.name) != nullptr)
      return fail(ErrorCode::InvalidInput, fmt::format("tool '{}' is listed twice", spec.name));
    catalog.tools_.push_back(std::move(spec));
  }
  return catalog;
}

const ToolCatalog& ToolCatalog::shipped() {
  static const ToolCatalog catalog = [] {
    auto parsed = parse_tool_catalog(tool_catalog_text());
    if (!parsed) {
      std::fprintf(stderr, "orch mcp: schemas/mcp-tools.json as compiled in: %s\n",
                   parsed.error().message.c_str());
      std::abort();
    }
    return std::move(*parsed);
  }();
  return catalog;
}

const ToolSpec* ToolCatalog::find(std::string_view name) const {
  for (const auto& t : tools_)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> ToolCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& t : tools_) out.push_back(t.name);
  return out;
}

}  // namespace orch::mcp
