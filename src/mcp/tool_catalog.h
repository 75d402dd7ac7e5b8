// mcp/tool_catalog.h — the tools `orch mcp` offers, as tools/list gives them.
//
// One source of truth: schemas/mcp-tools.json (compiled in) has each tool's
// name, title, description, annotations and inputSchema, and names the schema
// file its structuredContent follows — the same schemas/*.schema.json that the
// command's --json output is checked against. The catalogue is read once;
// each tool's inputSchema is compiled to check a call's arguments before the
// tool runs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"
#include "util/json_schema.h"

namespace orch::mcp {

struct ToolSpec {
  std::string name;
  std::string output_schema_file;  // "trace.schema.json"
  nlohmann::json listing;          // the tools/list entry: name, title, description, annotations, schemas
  JsonSchema input;                // the compiled inputSchema
  JsonSchema output;               // the compiled outputSchema
};

class ToolCatalog {
 public:
  // The compiled-in catalogue. A catalogue that does not load is a build defect:
  // orch mcp says so and stops (the `mcp` unit tests load it on every build).
  static const ToolCatalog& shipped();

  const std::vector<ToolSpec>& tools() const { return tools_; }
  const ToolSpec* find(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  friend Expected<ToolCatalog> parse_tool_catalog(std::string_view text);
  std::vector<ToolSpec> tools_;
};

// Reads a catalogue (schemas/mcp-tools.json's form), its output schemas taken
// from the compiled-in schemas/ files. InvalidInput naming the tool and field.
Expected<ToolCatalog> parse_tool_catalog(std::string_view text);

}  // namespace orch::mcp
