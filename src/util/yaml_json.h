// util/yaml_json.h — YAML data as nlohmann::json, by the YAML 1.2 core schema.
//
// The tree comes from read_yaml_doc (util/yaml_reader.h), which has already
// expanded aliases (with their limits) and merge keys (`<<: *defaults`, or a
// list, `<<: [*a, *b]`: the merged mappings' keys the mapping does not write
// itself). Scalars follow the YAML 1.2 core schema, so a value means what it
// looks like:
//  - quoted scalars ('x', "x"), literal and folded blocks, and scalars tagged
//    !!str are strings, always;
//  - plain scalars become null (~, null, Null, NULL, empty), bool (true/false in
//    lower, Title or UPPER case; not yes/no/on/off), integers (decimal, 0x hex,
//    0o octal; beyond int64 they become uint64 or double), floats (1.5, -2e3, .5),
//    and otherwise strings. .inf and .nan stay strings: JSON has no such numbers.
// Mapping keys are always strings (yaml_key): a null key (null, ~) is "null", a
// non-scalar key is written as its YAML text in flow style (`[a, b]`).
// Sequences become arrays, mappings objects (nlohmann::json keeps keys sorted,
// ordered_json in the document's order). A key written twice in one mapping
// keeps its first value; read_yaml_json refuses it, with its line.
#pragma once

#include <cstddef>
#include <expected>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "util/doc_node.h"
#include "util/yaml_reader.h"

namespace orch {

nlohmann::json yaml_to_json(const detail::DocNode& node);
nlohmann::ordered_json yaml_to_ordered_json(const detail::DocNode& node);

// The first YAML document of `text` as JSON: read_yaml_doc, then yaml_to_json.
// Every problem is an error value with its 1-based line: a syntax error, a tab
// or control character, an alias past the limits or inside the node it names,
// a misused merge key, or a key written twice in one mapping.
std::expected<nlohmann::json, detail::YamlSyntaxError> read_yaml_json(std::string_view text);

// The first key written twice in one mapping of `node` (by its JSON name, so
// `1:` and `"1":` are the same key), in the order of the text, as "key 'x' is
// written twice in one mapping (first at line N)" at the second one's line.
std::optional<detail::YamlSyntaxError> duplicate_key(const detail::DocNode& node);

// A mapping key as JSON names it, by the rules above.
std::string yaml_key(const detail::DocNode& key);

// The value a plain (unquoted) YAML scalar stands for, by the rules above.
nlohmann::json plain_yaml_scalar(const std::string& text);

// Whether `text` is written as a number (as plain_yaml_scalar reads one) that is
// too large for a double, such as 1e309: plain_yaml_scalar keeps it as text, and
// a field that wants a number says it is too large rather than not a number.
bool number_too_large(std::string_view text);

// Why the plain scalar `text`, written as a number, would not keep its value as
// JSON data, or nullopt when it would (or is not written as one): YAML's .inf and
// .nan (JSON has no such numbers: plain_yaml_scalar keeps the text), a number a
// double cannot hold (1e999, 1e-400: kept as text too), or one with more digits
// than a double keeps (an integer beyond 64 bits, 0.1000000000000000000001: it
// would be rounded). Data a plan keeps as written (inputs, inline schemas) is
// checked with it, so a value never changes without a word.
std::optional<std::string> number_not_kept(std::string_view text);

}  // namespace orch
