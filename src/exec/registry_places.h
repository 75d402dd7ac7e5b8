// exec/registry_places.h — where each value of a registry file was written:
// JSON pointers into the document, the line of each key and value, and the
// field's name for messages ("tools.jq.commands.query.args[0].flag"). Shared
// by the registry's reader (tool_registry.cc) and its MCP entries
// (mcp_registry_entry.cc), so every problem reads "FILE:LINE: FIELD: message".
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "util/doc_node.h"

namespace orch::detail {

// "/tools/jq" + "status" → "/tools/jq/status" (nlohmann's JSON pointer escapes `~` and `/`).
std::string pointer_child(const std::string& pointer, const std::string& key);
std::string pointer_child(const std::string& pointer, std::size_t index);

// "/tools/jq/commands/q/args/0" → "tools.jq.commands.q.args[0]"; "(top)" for "".
std::string field_of_pointer(const std::string& pointer);

struct RegistryPlaces {
  struct Place {
    int key_line = 0;
    int value_line = 0;
    std::string field;
  };
  std::map<std::string, Place> by_pointer;
  std::vector<std::pair<int, std::string>> duplicates;  // (line, "LINE: FIELD: message")

  // Walks `node` (at `pointer`, named `field`), noting each value's place and
  // each duplicate key (the first value counts, as in yaml_to_json).
  void collect(const DocNode& node, const std::string& pointer, const std::string& field, int key_line);
  const Place* find(const std::string& pointer) const;
};

}  // namespace orch::detail
