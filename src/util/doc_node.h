// util/doc_node.h — a parsed YAML or JSON document, every node with its line.
//
// YAML (util/yaml_reader.h, on libyaml's event parser) and JSON plans
// (plan/json_reader.h, on RapidJSON's) both become this one tree, so readers
// have a single code path and every node knows its 1-based line. Mappings keep
// their keys in document order, duplicates included, so a reader can report
// them. util/yaml_json.h turns a tree into JSON data.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace orch::detail {

struct DocEntry;

struct DocNode {
  enum class Type { Null, Scalar, Sequence, Map };
  Type type = Type::Null;
  int line = 0;                // 1-based; 0 when unknown
  bool quoted = false;         // a quoted (or !!str) scalar: always a string, never a number or bool
  bool streamed = false;       // Sequence: the items went to a reader's ItemSink instead (below)
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

// Streaming, for both readers: with an ItemSink, the items of the plan's step
// list (the top-level sequence, or the sequence under the top-level key "steps",
// its first occurrence) are handed to the sink one by one as they are parsed and
// not kept (that sequence node is left empty with `streamed` set), so a
// 100,000-step plan is never held as a whole document and as a Plan at once.
enum class StreamedList { TopLevel, Steps };
// The node may be moved from or changed; it is discarded after the call.
using ItemSink = std::function<void(StreamedList list, DocNode& item)>;

}  // namespace orch::detail
