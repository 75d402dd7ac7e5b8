// util/yaml_json.h — converting a parsed YAML document to nlohmann::json.
//
// Scalars follow the YAML 1.2 core schema, so a value means what it looks like:
//  - quoted scalars ('x', "x") and scalars tagged !!str are strings, always;
//  - plain scalars become null (~, null, Null, NULL, empty), bool (true/false in
//    lower, Title or UPPER case; not yes/no/on/off), integers (decimal, 0x hex,
//    0o octal; beyond int64 they become uint64 or double), floats (1.5, -2e3, .5),
//    and otherwise strings. .inf and .nan stay strings: JSON has no such numbers.
// Mapping keys are always strings: a null key (null, ~) is "null", a non-scalar key
// is written as its YAML text.
// Aliases are expanded, and YAML's merge key too: `<<: *defaults` (or a list,
// `<<: [*a, *b]`) adds the merged mappings' keys the mapping does not write
// itself; a '<<' whose value is not a mapping or a list of them throws
// YAML::ParserException at its mark. Sequences become arrays, mappings objects
// (nlohmann::json keeps keys sorted; a repeated key keeps its last value).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace orch {

// A cycle (`a: &a {b: *a}`: yaml-cpp shares an anchor's node with its aliases)
// and more than `max_nodes` nodes in all (aliases of aliases: "billion laughs")
// throw YAML::ParserException at the node's mark.
nlohmann::json yaml_to_json(const YAML::Node& node, std::size_t max_nodes = 1'000'000);

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
