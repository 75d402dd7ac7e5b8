// mcp/embedded_files.h — the files `orch mcp` carries (src/mcp/embedded_files.cmake).
#pragma once

#include <map>
#include <string_view>

namespace orch::mcp {

// schemas/mcp-tools.json: the tools, their annotations and input schemas.
std::string_view tool_catalog_text();
// schemas/*.schema.json by file name ("trace.schema.json"): the tools' output schemas.
const std::map<std::string_view, std::string_view>& output_schema_texts();

}  // namespace orch::mcp
