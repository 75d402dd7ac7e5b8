// util/json_schema.cc — JsonSchema over valijson 1.0 (Debian's libvalijson-dev).
//
// valijson reports errors by exception only when VALIJSON_USE_EXCEPTIONS is set
// (otherwise it aborts the process), so it is set here, and every call into it is
// wrapped: nothing throws out of this file.
//
// valijson 1.0 checks 'pattern' with std::regex, which recurses once per character
// and overflows the stack on a string of some 100 KB (a step's JSON result can hold
// one). So before parsing, 'pattern' keywords are renamed to kPcrePatternKeyword,
// which a custom constraint checks with orch::Regex (PCRE2, bounded). A bad
// pattern is then reported when the schema is parsed, not when it is used.
// (patternProperties and format 'date' still use std::regex, on property names and
// date strings, which are short.)
#define VALIJSON_USE_EXCEPTIONS 1
#include "util/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <map>
#include <new>
#include <optional>
#include <stdexcept>
#include <utility>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>
#include <vector>

#include "util/read_file.h"
#include "util/regex.h"
#include "util/strings.h"
#include "util/yaml_json.h"

namespace orch {

namespace {

constexpr const char* kPcrePatternKeyword = "x-orch-pcre2-pattern";

// The 'pattern' keyword, checked with PCRE2. valijson copies constraints with
// clone() into memory it allocates, hence cloneInto/sizeOf.
class PcrePatternConstraint : public valijson::constraints::PolyConstraint {
 public:
  explicit PcrePatternConstraint(Regex regex) : regex_(std::move(regex)) {}

  bool validate(const valijson::adapters::Adapter& target, const std::vector<std::string>& context,
                valijson::ValidationResults* results) const override {
    if (!target.isString()) return true;  // 'pattern' applies to strings only
    auto matched = regex_.search(target.asString());
    if (matched && *matched) return true;
    if (results != nullptr) {
      results->pushError(context, matched ? fmt::format("String does not match pattern '{}'", regex_.pattern())
                                          : matched.error().message);
    }
    return false;
  }

 private:
  valijson::constraints::Constraint* cloneInto(void* memory) const override {
    return new (memory) PcrePatternConstraint(*this);
  }
  size_t sizeOf() const override { return sizeof(PcrePatternConstraint); }

  Regex regex_;
};

class PcrePatternBuilder : public valijson::ConstraintBuilder {
 public:
  valijson::constraints::Constraint* make(const valijson::adapters::Adapter& value) const override {
    std::string pattern;
    if (!value.asString(pattern)) throw std::runtime_error("'pattern' must be a string");
    auto regex = Regex::compile(pattern);
    if (!regex) throw std::runtime_error(regex.error().message);
    return new PcrePatternConstraint(std::move(*regex));
  }
};

// Keywords whose value is a map from names to subschemas, and keywords whose
// value is data, not a schema.
bool is_schema_map_keyword(const std::string& key) {
  return key == "properties" || key == "patternProperties" || key == "definitions" || key == "$defs" ||
         key == "dependencies" || key == "dependentSchemas";
}
bool is_data_keyword(const std::string& key) {
  return key == "enum" || key == "const" || key == "default" || key == "examples" || key == "required" ||
         key == "type" || key == "$ref" || key == "$id" || key == "id" || key == "$schema";
}

// The keywords of JSON Schema draft 7 (and of drafts 4 and 6, which valijson also
// reads), with $defs (2019-09's definitions, which a $ref reaches all the same).
const std::vector<std::string>& draft7_keywords() {
  static const std::vector<std::string> kKeywords = {"$schema",
                                                     "$id",
                                                     "id",
                                                     "$ref",
                                                     "$comment",
                                                     "$defs",
                                                     "title",
                                                     "description",
                                                     "default",
                                                     "readOnly",
                                                     "writeOnly",
                                                     "examples",
                                                     "multipleOf",
                                                     "maximum",
                                                     "exclusiveMaximum",
                                                     "minimum",
                                                     "exclusiveMinimum",
                                                     "maxLength",
                                                     "minLength",
                                                     "pattern",
                                                     "additionalItems",
                                                     "items",
                                                     "maxItems",
                                                     "minItems",
                                                     "uniqueItems",
                                                     "contains",
                                                     "maxProperties",
                                                     "minProperties",
                                                     "required",
                                                     "additionalProperties",
                                                     "definitions",
                                                     "properties",
                                                     "patternProperties",
                                                     "dependencies",
                                                     "propertyNames",
                                                     "const",
                                                     "enum",
                                                     "type",
                                                     "format",
                                                     "contentMediaType",
                                                     "contentEncoding",
                                                     "if",
                                                     "then",
                                                     "else",
                                                     "allOf",
                                                     "anyOf",
                                                     "oneOf",
                                                     "not"};
  return kKeywords;
}

// Keywords of the 2019-09 and 2020-12 drafts that change what validates. valijson
// (draft 7) would pass over them without a word, and the check would hold where
// the schema's author meant it to fail. What draft 7 writes instead, when it can.
std::optional<std::string> later_draft_keyword(const std::string& key) {
  static const std::map<std::string, std::string> kLater = {
      {"prefixItems", "'items' with a list of schemas"},
      {"unevaluatedProperties", "'additionalProperties' beside the 'properties' it is about"},
      {"unevaluatedItems", "'additionalItems'"},
      {"dependentRequired", "'dependencies' with a list of names"},
      {"dependentSchemas", "'dependencies' with a schema"},
      {"minContains", ""},
      {"maxContains", ""},
      {"$anchor", "a '$ref' to '#/definitions/NAME'"},
      {"$dynamicRef", "'$ref'"},
      {"$dynamicAnchor", ""},
      {"$recursiveRef", "'$ref'"},
      {"$recursiveAnchor", ""}};
  auto it = kLater.find(key);
  if (it == kLater.end()) return std::nullopt;
  return it->second;
}

// What a schema object says that orch would silently not check: a keyword of a
// later draft, or a misspelt one ('requird'). Other keys are annotations, left
// alone ('x-unit', OpenAPI's 'example' and 'nullable').
std::string keyword_problem(const nlohmann::json& object, const std::string& at) {
  for (const auto& [key, value] : object.items()) {
    if (auto instead = later_draft_keyword(key))
      return fmt::format(
          "'{}' at #{} is a keyword of JSON Schema 2019-09/2020-12, which orch does not read: it validates "
          "draft 7 and would pass over it{}",
          key, at, instead->empty() ? std::string() : fmt::format(" (draft 7 writes it as {})", *instead));
    const auto& known = draft7_keywords();
    if (std::find(known.begin(), known.end(), key) != known.end() || key.starts_with("x-") ||
        key == "example" || key == "nullable")
      continue;
    if (auto near = closest_match(key, known))
      return fmt::format("unknown keyword '{}' at #{} (did you mean '{}'?): orch would pass over it", key, at,
                         *near);
  }
  return "";
}

// Renames every string 'pattern' keyword of a schema (and of every subschema,
// including ones under unknown keys that a $ref may point to) to kPcrePatternKeyword.
void route_patterns_to_pcre2(nlohmann::json& schema) {
  if (schema.is_array()) {
    for (auto& item : schema) route_patterns_to_pcre2(item);
    return;
  }
  if (!schema.is_object()) return;
  if (auto it = schema.find("pattern"); it != schema.end() && it->is_string()) {
    nlohmann::json pattern = std::move(*it);
    schema.erase(it);
    schema[kPcrePatternKeyword] = std::move(pattern);
  }
  for (auto& [key, value] : schema.items()) {
    if (is_data_keyword(key)) continue;
    if (is_schema_map_keyword(key) && value.is_object()) {
      for (auto& [name, subschema] : value.items()) route_patterns_to_pcre2(subschema);
      continue;
    }
    route_patterns_to_pcre2(value);
  }
}

// valijson names the offending value as {"<root>", "[steps]", "[0]", "[id]"};
// orch reports a JSON pointer ("/steps/0/id", "" for the root).
std::string json_pointer(const std::vector<std::string>& context) {
  std::string pointer;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string_view token = part;
    if (token.size() >= 2 && token.front() == '[' && token.back() == ']') token = token.substr(1, token.size() - 2);
    pointer += '/';
    for (char c : token) {
      if (c == '~') pointer += "~0";
      else if (c == '/') pointer += "~1";
      else pointer += c;
    }
  }
  return pointer;
}

// valijson follows each failure inside an object or array with one line per
// enclosing level ("Failed to validate item #1 in array."); those repeat what the
// deeper line already says and are dropped.
template <class Violations>
bool is_summary_of_deeper_error(const std::string& pointer, const std::string& description,
                                const Violations& all) {
  if (description.rfind("Failed to validate against schema associated with property name", 0) != 0 &&
      description.rfind("Failed to validate item #", 0) != 0) {
    return false;
  }
  for (const auto& other : all) {
    if (other.pointer.size() > pointer.size() && other.pointer.compare(0, pointer.size(), pointer) == 0 &&
        other.pointer[pointer.size()] == '/') {
      return true;
    }
  }
  return false;
}

// " (value: 5)" for the offending value when it is short enough to help.
std::string value_preview(const nlohmann::json& doc, const std::string& pointer) {
  try {
    const nlohmann::json& value = doc.at(nlohmann::json::json_pointer(pointer));
    if (value.is_structured()) return "";
    constexpr std::size_t kPreview = 40;
    // Only the start of a long string is dumped (it may be megabytes).
    nlohmann::json shown = value.is_string() && value.get_ref<const std::string&>().size() > kPreview
                               ? nlohmann::json(value.get_ref<const std::string&>().substr(0, kPreview))
                               : value;
    std::string text = shown.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() > kPreview) text = text.substr(0, kPreview - 3) + "...";
    return fmt::format(" (value: {})", text);
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

// How deeply `doc` nests (a scalar is 0, [] and {} are 1), counted without
// recursion; stops counting past `limit`.
int nesting_depth(const nlohmann::json& doc, int limit) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&doc, 0}};
  while (!todo.empty()) {
    auto [value, depth] = todo.back();
    todo.pop_back();
    if (!value->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    if (deepest > limit) return deepest;
    for (const auto& child : *value) todo.emplace_back(&child, depth + 1);
  }
  return deepest;
}

// What parsing and validating a schema would recurse through, looked at first
// without recursion. A schema that applies itself to the same value again without
// ever descending into it — {"$ref": "#"}, or a definition reached from itself
// through $ref, allOf/anyOf/oneOf, not, if/then/else or dependencies — never
// finishes: valijson recurses until the stack overflows. So does a long enough
// chain of such subschemas, once per level of the value.
struct SchemaShape {
  std::string problem;       // why the schema is refused; "" when it is not
  int chain = 1;             // the most subschemas applied to one value, one after another
  std::int64_t applied = 1;  // the most subschema applications to one value, repeats counted
};

SchemaShape schema_shape(const nlohmann::json& root) {
  using Pointer = nlohmann::json::json_pointer;
  SchemaShape shape;
  // Every schema object in the document (a definition may be reached from a $ref
  // anywhere), and every $ref checked: only a JSON pointer into this same schema,
  // written plainly, is followed. valijson would also follow other spellings of
  // the same place ("#/", "%61", an id's URI) that the cycle search below would not.
  std::vector<Pointer> starts;
  // What a place in the document holds: a schema (or a list of schemas), or a
  // map from names to schemas (properties, definitions, ...), whose keys are
  // names — "type", "$ref" — not keywords.
  enum class Holds { Schema, NamedSchemas };
  struct Place {
    const nlohmann::json* value;
    Pointer at;
    Holds holds;
    bool keyword = true;  // reached through keywords (not a value under an unknown key): a schema's keys are
                          // its keywords
  };
  std::vector<Place> walk{{&root, Pointer(), Holds::Schema, true}};
  const auto& known = draft7_keywords();
  while (!walk.empty()) {
    auto [value, at, holds, keyword] = std::move(walk.back());
    walk.pop_back();
    if (holds == Holds::NamedSchemas) {
      for (const auto& [name, child] : value->items()) {
        if (child.is_structured()) walk.push_back({&child, at / name, Holds::Schema, keyword});
      }
      continue;
    }
    if (value->is_object()) {
      starts.push_back(at);
      if (keyword) {
        shape.problem = keyword_problem(*value, at.to_string());
        if (!shape.problem.empty()) return shape;
      }
      if (auto ref = value->find("$ref"); ref != value->end()) {
        const std::string text = ref->is_string() ? ref->get<std::string>() : ref->dump();
        bool usable = ref->is_string() && (text == "#" || (text.starts_with("#/") && !text.ends_with("/") &&
                                                           text.find('%') == std::string::npos));
        if (usable && text != "#") {
          try {
            usable = root.contains(Pointer(text.substr(1)));
          } catch (const nlohmann::json::exception&) {
            usable = false;
          }
        }
        if (!usable) {
          shape.problem = fmt::format(
              "$ref '{}' at #{}: only a reference to a part of this same schema is supported ('#', or "
              "'#/definitions/NAME' naming a part that exists)",
              text, at.to_string());
          return shape;
        }
      }
      for (const auto& [key, child] : value->items()) {
        if (!child.is_structured() || is_data_keyword(key)) continue;
        const bool known_key = keyword && std::find(known.begin(), known.end(), key) != known.end();
        walk.push_back({&child, at / key,
                        is_schema_map_keyword(key) && child.is_object() ? Holds::NamedSchemas : Holds::Schema,
                        known_key});
      }
    } else if (value->is_array()) {
      for (std::size_t i = 0; i < value->size(); ++i)
        walk.push_back({&(*value)[i], at / i, Holds::Schema, keyword});
    }
  }
  // The schemas a schema applies to the very value it is applied to.
  // Only schema objects are asked, and every $ref in one was checked above: a
  // string naming a part that exists. (Defensive all the same: nothing throws.)
  auto edges = [&](const Pointer& at) {
    std::vector<Pointer> out;
    const nlohmann::json* found = nullptr;
    try {
      found = &root.at(at);
    } catch (const nlohmann::json::exception&) {
      return out;
    }
    const nlohmann::json& node = *found;
    if (!node.is_object()) return out;
    if (auto ref = node.find("$ref"); ref != node.end() && ref->is_string()) {
      const std::string& text = ref->get_ref<const std::string&>();
      try {
        Pointer target = text == "#" ? Pointer() : Pointer(text.substr(1));
        if (root.contains(target)) out.push_back(std::move(target));
      } catch (const nlohmann::json::exception&) {
      }
    }
    for (const char* key : {"allOf", "anyOf", "oneOf"}) {
      if (auto list = node.find(key); list != node.end() && list->is_array()) {
        for (std::size_t i = 0; i < list->size(); ++i) out.push_back(at / key / i);
      }
    }
    for (const char* key : {"not", "if", "then", "else"}) {
      if (node.contains(key)) out.push_back(at / key);
    }
    for (const char* key : {"dependencies", "dependentSchemas"}) {
      if (auto map = node.find(key); map != node.end() && map->is_object()) {
        for (const auto& [name, value] : map->items()) {
          if (value.is_object()) out.push_back(at / key / name);
        }
      }
    }
    return out;
  };
  // A depth-first search without recursion: a cycle is refused, naming it; on an
  // acyclic graph, the longest chain below each node is known when it finishes.
  enum class Mark { Unseen, OnPath, Finished };
  std::map<std::string, Mark> marks;
  std::map<std::string, int> longest;
  // How many subschemas a node applies to its value, counting each path through
  // allOf/anyOf/oneOf/$ref: two alternatives that both lead on to the same next
  // ones double it at every link (capped, so the sum cannot overflow).
  constexpr std::int64_t kCap = std::int64_t{1} << 40;
  std::map<std::string, std::int64_t> applied;
  for (const Pointer& start : starts) {
    if (marks[start.to_string()] != Mark::Unseen) continue;
    struct Frame {
      Pointer at;
      std::vector<Pointer> next;
      std::size_t i = 0;
    };
    std::vector<Frame> path;
    marks[start.to_string()] = Mark::OnPath;
    path.push_back({start, edges(start)});
    while (!path.empty()) {
      Frame& top = path.back();
      if (top.i == top.next.size()) {
        int below = 0;
        std::int64_t under = 1;
        for (const Pointer& n : top.next) {
          below = std::max(below, longest[n.to_string()]);
          under = std::min(kCap, under + applied[n.to_string()]);
        }
        const std::string key = top.at.to_string();
        longest[key] = below + 1;
        applied[key] = under;
        shape.chain = std::max(shape.chain, below + 1);
        shape.applied = std::max(shape.applied, under);
        marks[key] = Mark::Finished;
        path.pop_back();
        continue;
      }
      Pointer next = top.next[top.i++];
      Mark& mark = marks[next.to_string()];
      if (mark == Mark::Finished) continue;
      if (mark == Mark::OnPath) {
        std::string loop;
        bool in_loop = false;
        for (const Frame& f : path) {
          in_loop = in_loop || f.at == next;
          if (in_loop) loop += "#" + f.at.to_string() + " -> ";
        }
        shape.problem = fmt::format("it applies itself to the same value without end ({}#{})", loop, next.to_string());
        return shape;
      }
      mark = Mark::OnPath;
      auto next_edges = edges(next);
      path.push_back({std::move(next), std::move(next_edges)});
    }
  }
  return shape;
}

bool ends_with_json(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

}  // namespace

// A parsed schema owns all its subschemas and no longer refers to the document
// it was parsed from. Validation only reads it, so one Impl is shared by copies.
struct JsonSchema::Impl {
  valijson::Schema schema;
  int chain = 1;  // SchemaShape::chain
};

Expected<JsonSchema> JsonSchema::parse(const nlohmann::json& schema_doc) {
  // Parsing and validating both recurse once per level of the schema.
  if (nesting_depth(schema_doc, kMaxSchemaDepth) > kMaxSchemaDepth)
    return fail(ErrorCode::InvalidInput,
                fmt::format("not a usable JSON Schema: it nests deeper than {} levels", kMaxSchemaDepth));
  const SchemaShape shape = schema_shape(schema_doc);
  if (!shape.problem.empty())
    return fail(ErrorCode::InvalidInput, fmt::format("not a usable JSON Schema: {}", shape.problem));
  if (shape.chain > kMaxSchemaChain)
    return fail(ErrorCode::InvalidInput,
                fmt::format("not a usable JSON Schema: it applies {} subschemas to one value, one inside the other "
                            "($ref, allOf, anyOf, oneOf, not, if/then/else); at most {}",
                            shape.chain, kMaxSchemaChain));
  if (shape.applied > kMaxApplied)
    return fail(ErrorCode::InvalidInput,
                fmt::format("not a usable JSON Schema: it applies {} subschemas to one value, counting each "
                            "way through allOf, anyOf, oneOf and $ref (alternatives that lead on to the same "
                            "ones multiply); at most {}",
                            shape.applied >= (std::int64_t{1} << 40) ? std::string("over a trillion")
                                                                     : std::to_string(shape.applied),
                            kMaxApplied));
  auto impl = std::make_shared<Impl>();
  impl->chain = shape.chain;
  try {
    nlohmann::json routed = schema_doc;
    route_patterns_to_pcre2(routed);
    valijson::SchemaParser parser;
    parser.addConstraintBuilder(kPcrePatternKeyword, new PcrePatternBuilder);  // the parser deletes it
    valijson::adapters::NlohmannJsonAdapter adapter(routed);
    parser.populateSchema(adapter, impl->schema);
  } catch (const std::exception& e) {
    return fail(ErrorCode::InvalidInput, fmt::format("not a usable JSON Schema: {}", e.what()));
  }
  JsonSchema out;
  out.impl_ = std::move(impl);
  return out;
}

Expected<JsonSchema> JsonSchema::load_file(const std::string& path) {
  // Read as every file orch reads: at most 64 MiB (a path such as /dev/zero stops
  // there), a named pipe never waited on.
  auto read = read_file_text(path);
  if (!read) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return fail(ErrorCode::NotFound, fmt::format("schema file '{}' does not exist", path));
    const std::string prefix = path + ": ";
    const std::string& m = read.error().message;
    return fail(ErrorCode::Io, fmt::format("schema file '{}' cannot be read: {}", path,
                                           m.starts_with(prefix) ? m.substr(prefix.size()) : m));
  }
  std::string text = std::move(*read);

  nlohmann::json doc;
  if (ends_with_json(path)) {
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      // Drop nlohmann's "[json.exception.parse_error.101] " id; keep "parse error at line 3, column 1: ...".
      std::string_view what = e.what();
      if (auto end = what.find("] "); what.starts_with("[json.exception.") && end != std::string_view::npos) {
        what.remove_prefix(end + 2);
      }
      return fail(ErrorCode::InvalidInput, fmt::format("schema file '{}': {}", path, what));
    }
  } else {
    auto yaml = read_yaml_json(text);
    if (!yaml)
      return fail(ErrorCode::InvalidInput, fmt::format("schema file '{}': line {}: {}", path,
                                                       yaml.error().line, yaml.error().message));
    doc = std::move(*yaml);
  }
  auto schema = parse(doc);
  if (!schema) return fail(schema.error().code, fmt::format("schema file '{}': {}", path, schema.error().message));
  return schema;
}

namespace {

bool is_integral_float(const nlohmann::json& value) {
  if (!value.is_number_float()) return false;
  const double v = value.get<double>();
  return std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < 0x1p63;
}

bool has_integral_float(const nlohmann::json& value) {
  if (is_integral_float(value)) return true;
  if (!value.is_structured()) return false;
  for (const auto& item : value)
    if (has_integral_float(item)) return true;
  return false;
}

// JSON Schema (from draft 6) counts a number without a fractional part as an
// integer: 2.0 and 1e3 are integers. valijson goes by how the number was
// written, so those become integers before it sees them.
void integral_floats_to_integers(nlohmann::json& value) {
  if (is_integral_float(value)) {
    value = static_cast<std::int64_t>(value.get<double>());
    return;
  }
  if (!value.is_structured()) return;
  for (auto& item : value) integral_floats_to_integers(item);
}

}  // namespace

std::vector<std::string> JsonSchema::validate(const nlohmann::json& doc) const {
  if (!impl_) return {"no schema loaded"};
  // valijson recurses once per level of the value and, at each, once per
  // subschema of the longest chain applied to it: the product is what is bounded.
  // Measured without recursion, before anything here recurses into the value.
  const int depth = nesting_depth(doc, kMaxValueDepth);
  if (depth > kMaxValueDepth)
    return {fmt::format("(root): the value nests deeper than {} levels", kMaxValueDepth)};
  if (static_cast<long>(depth) * impl_->chain > kMaxRecursion)
    return {fmt::format("(root): the value nests {} levels deep and the schema applies up to {} subschemas at "
                        "each: more than orch checks ({} in all)",
                        depth, impl_->chain, kMaxRecursion)};
  if (has_integral_float(doc)) {
    nlohmann::json normalized = doc;
    integral_floats_to_integers(normalized);
    return validate_shallow(normalized);
  }
  return validate_shallow(doc);
}

std::vector<std::string> JsonSchema::validate_shallow(const nlohmann::json& doc) const {
  std::vector<std::string> lines;
  try {
    // A Validator caches compiled 'pattern' regexes; one per call keeps
    // validate() safe to call from several threads on one JsonSchema.
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter adapter(doc);
    if (validator.validate(impl_->schema, adapter, &results)) return lines;
    struct Violation {
      std::string pointer;
      std::string description;
    };
    std::vector<Violation> violations;
    valijson::ValidationResults::Error error;
    while (results.popError(error)) violations.push_back({json_pointer(error.context), error.description});
    for (const auto& v : violations) {
      if (is_summary_of_deeper_error(v.pointer, v.description, violations)) continue;
      std::string_view description = v.description;
      if (description.ends_with('.')) description.remove_suffix(1);
      lines.push_back(fmt::format("{}: {}{}", v.pointer.empty() ? "(root)" : v.pointer, description,
                                  value_preview(doc, v.pointer)));
    }
    // valijson fails a `false` schema without saying why.
    if (lines.empty()) lines.push_back("(root): no value is allowed by the schema");
  } catch (const std::exception& e) {
    // A 'patternProperties' regex std::regex cannot compile, for instance.
    lines.push_back(fmt::format("schema could not be applied: {}", e.what()));
  }
  return lines;
}

}  // namespace orch
