// util/yaml_reader.h — orch's YAML reader: libyaml's events into a DocNode tree.
//
// Every YAML text orch reads goes through here: plans (plan/loader.cc), the
// configuration and data files (models, workers, registry, route tables,
// RUN.yaml, .orch/task.yaml), JSON Schemas written in YAML, plan templates and
// the front matter of memory notes; util/yaml_json.h turns the tree into JSON.
// The tree is built straight from libyaml's parse events (no node graph), so a
// 100,000-step plan loads in a fraction of the time and memory.
//
// What the tree holds:
//  - every node carries the 1-based line where it starts (its anchor or tag, if
//    it has one); an empty value, the line of its `key:` or `-`;
//  - a scalar is `quoted` when it is quoted, a literal (|) or folded (>) block,
//    or tagged ! or !!str; the core schema's other tags (!!int, !!float, !!bool,
//    !!null, !!seq, !!map) are accepted and any other refused. A plain, untagged
//    empty, ~, null, Null or NULL is a Null node;
//  - an alias is a copy of its anchor's node, lines included. An alias with no
//    complete anchor of its name before it is an error, and anchors and aliases
//    may copy at most max_alias_nodes(text.size()) nodes in all (no "billion
//    laughs", no anchors nested around a long list);
//  - YAML's merge key (`<<: *defaults`, `<<: [*a, *b]`) adds the merged
//    mappings' keys the mapping does not write itself, where the `<<` was;
//  - with YamlDocuments::First, only the first document is read (unless it ends
//    with "...", what follows must be the end or a new "---"); with OnlyOne (a
//    plan file), a second document, or anything but comments after "...", is an
//    error at its line. A text with no document gives a Null node, line 0.
// Nesting is limited to kMaxYamlDepth levels. The text must be UTF-8 (or UTF-16
// with a byte order mark) without control characters other than tab and line
// breaks, as libyaml requires: anything else is an error with its line.
//
// Streaming: with an ItemSink, the items of a plan's step list go to the sink
// one by one and are not kept, as plan/json_reader.h does (doc_node.h says how);
// a step list that has an anchor is kept whole, so its aliases can copy it. For
// a text of kYamlRelayMinBytes or more, libyaml parses on a second thread while
// the sink reads the items on the caller's (util/item_relay.h): the sink is
// still called on the caller's thread, in order, and sees the same items.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"
#include "util/doc_node.h"

namespace orch::detail {

constexpr int kMaxYamlDepth = 500;

// From this size on, with a sink, the text is parsed on a second thread (a plan
// of a few thousand steps; below it, starting a thread costs more than it saves).
constexpr std::size_t kYamlRelayMinBytes = 256 * 1024;

// A million nodes, plus one per byte of the text: far more than aliases in a
// plan need (a 10-byte `env: *env` stands for a few nodes), far less than would
// exhaust memory.
constexpr std::size_t max_alias_nodes(std::size_t text_size) {
  return 1'000'000 + text_size;
}

struct YamlSyntaxError {
  int line = 0;         // 1-based; 0 when the error has no place (out of memory)
  std::string message;  // "did not find expected key (while parsing a block mapping that starts on line 3)"
};

// What may follow the first document: later ones, unread, or nothing (a plan
// file: a second document would be ignored without a word).
enum class YamlDocuments { First, OnlyOne };

// Parses the first YAML document of the text; on failure returns where and why
// (items already given to the sink then belong to a document that turned out to
// be broken). `problems`, when given, takes the misused merge keys (`<<: 5`, two
// `<<` in one mapping) instead of failing the document: each is reported there,
// its `<<` entry left out, and the rest is read, so a plan's other mistakes are
// listed with it. Without it they fail the document like a syntax error.
std::expected<DocNode, YamlSyntaxError> read_yaml_doc(std::string_view text, const ItemSink& sink = {},
                                                      YamlDocuments documents = YamlDocuments::First,
                                                      std::vector<YamlSyntaxError>* problems = nullptr);

}  // namespace orch::detail
