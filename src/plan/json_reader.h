// plan/json_reader.h — a strict JSON (RFC 8259) parser that keeps line numbers.
//
// The fast path for JSON plans: nlohmann::json does not say where a value was
// written, and yaml-cpp (which does) is an order of magnitude slower. Numbers,
// true and false become plain scalars as written ("3", "1.5e3", "true"), strings
// quoted scalars, null a Null node, so DocNode gives them the same meaning as
// the YAML path does. Nesting is limited to kMaxJsonDepth levels.
//
// Streaming: with an ItemSink, the items of the plan's step list (the top-level
// array, or the array under the top-level key "steps", its first occurrence) are
// handed to the sink one by one as they are parsed and not kept (that sequence
// node is left empty with `streamed` set), so a 100,000-step plan is never held
// as a whole document and as a Plan at once.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "orch/error.h"
#include "plan/doc_node.h"

namespace orch::detail {

constexpr int kMaxJsonDepth = 500;

struct JsonSyntaxError {
  int line = 0;
  std::string message;  // "expected ',' or '}' after an object member"
};

enum class StreamedList { TopLevel, Steps };
// The node may be moved from or changed; it is discarded after the call.
using ItemSink = std::function<void(StreamedList list, DocNode& item)>;

// Parses one JSON document; on failure returns where and why (items already given
// to the sink then belong to a document that turned out to be broken).
std::expected<DocNode, JsonSyntaxError> read_json_doc(std::string_view text, const ItemSink& sink = {});

}  // namespace orch::detail
