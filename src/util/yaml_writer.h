// util/yaml_writer.h — JSON data written as YAML text, on libyaml's emitter.
//
// For the YAML orch writes itself (the planner's single-step plan) and for the
// text of a mapping key that is not a scalar (yaml_json.h). The text reads back,
// through read_yaml_doc and yaml_to_json, as exactly the JSON it came from:
//  - a string is plain only when it is a simple word no YAML reader takes for
//    anything else: letters, digits, '_', '-', '.' and '/', starting with a
//    letter or '_', and none of true, false, null, yes, no, on, off, y, n in any
//    case (YAML 1.1 readers take those for booleans). Any other string is
//    double-quoted ("true", "1e3", "", "- x", "a: b", "#"), control characters
//    and line breaks as escapes; other UTF-8 is written as it is;
//  - integers as written; a double as JSON writes it (the shortest text that
//    reads back as the same double), a non-finite one (not JSON data) as null;
//  - object keys in the object's order; an empty object or array is {} or [].
// Block layout: one key or item per line, nested mappings indented two spaces
// (a list under a key is not indented: libyaml's layout), ending with a line
// break. Flow layout: one line, `{a: 1, b: [x, "2"]}`, without a line break.
// Lines are never folded, however long.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "orch/error.h"

namespace orch {

enum class YamlLayout { Block, Flow };

// Fails (InvalidInput) only when a string or key is not valid UTF-8: YAML text
// cannot hold it.
Expected<std::string> yaml_text(const nlohmann::ordered_json& value, YamlLayout layout = YamlLayout::Block);
Expected<std::string> yaml_text(const nlohmann::json& value, YamlLayout layout = YamlLayout::Block);

}  // namespace orch
