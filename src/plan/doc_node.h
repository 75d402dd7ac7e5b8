// plan/doc_node.h — a parsed YAML or JSON document, as the plan loader reads it.
//
// Plans come as YAML (parsed by yaml-cpp) or JSON (parsed by json_reader.h, a
// fast path: yaml-cpp needs ~25 µs per step, too slow for 100,000-step plans).
// Both become this one tree, so the loader has a single code path and every
// node knows its 1-based line. Mappings keep their keys in document order,
// duplicates included, so the loader can report them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace orch::detail {

struct DocEntry;

struct DocNode {
  enum class Type { Null, Scalar, Sequence, Map };
  Type type = Type::Null;
  int line = 0;                // 1-based; 0 when unknown
  bool quoted = false;         // a quoted (or !!str) scalar: always a string, never a number or bool
  bool streamed = false;       // Sequence: the items went to a reader's item sink instead (json_reader.h)
  std::string scalar;          // Scalar: the text
  std::vector<DocNode> items;  // Sequence
  std::vector<DocEntry> entries;  // Map: (key, value)

  bool is_null() const { return type == Type::Null; }
  bool is_scalar() const { return type == Type::Scalar; }
  bool is_sequence() const { return type == Type::Sequence; }
  bool is_map() const { return type == Type::Map; }
};

// A struct rather than std::pair: std::pair<DocNode, DocNode> inside DocNode
// names an incomplete type, which clang with libstdc++ rejects.
struct DocEntry {
  DocNode key;
  DocNode value;
};

// Converts a yaml-cpp tree (aliases expanded). Nesting beyond `max_depth` is cut
// off as null; yaml-cpp's own parser limits depth well below it.
DocNode from_yaml(const YAML::Node& node, int max_depth = 1000);

// Scalars by the YAML 1.2 core schema (util/yaml_json.h): quoted ones are strings.
nlohmann::ordered_json to_ordered_json(const DocNode& node);
nlohmann::json to_json(const DocNode& node);

}  // namespace orch::detail
