// plan/json_reader.h — a strict JSON (RFC 8259) parser that keeps line numbers.
//
// The fast path for JSON plans: nlohmann::json does not say where a value was
// written, and the YAML reader (JSON is YAML) is slower. Numbers, true and false
// become plain scalars as written ("3", "1.5e3", "true"), strings quoted
// scalars, null a Null node, so DocNode gives them the same meaning as the YAML
// path does. Nesting is limited to kMaxJsonDepth levels.
//
// Streaming: with an ItemSink, the items of the plan's step list (the top-level
// array, or the array under the top-level key "steps", its first occurrence) go
// to the sink one by one and are not kept (doc_node.h says how).
#pragma once

#include <string>
#include <string_view>

#include "orch/error.h"
#include "util/doc_node.h"

namespace orch::detail {

constexpr int kMaxJsonDepth = 500;

struct JsonSyntaxError {
  int line = 0;
  std::string message;  // "expected ',' or '}' after an object member"
};

// Parses one JSON document; on failure returns where and why (items already given
// to the sink then belong to a document that turned out to be broken).
std::expected<DocNode, JsonSyntaxError> read_json_doc(std::string_view text, const ItemSink& sink = {});

}  // namespace orch::detail
