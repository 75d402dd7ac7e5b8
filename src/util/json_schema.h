// util/json_schema.h — JSON Schema validation (valijson over nlohmann::json).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orch/error.h"

namespace orch {

class JsonSchema {
 public:
  // How deeply a schema, and a value checked against one, may nest: valijson
  // recurses once per level, and a deeper document would overflow the stack.
  static constexpr int kMaxSchemaDepth = 500;
  static constexpr int kMaxValueDepth = 500;
  // The longest chain of subschemas applied to one value ($ref, allOf, ...), and
  // that chain times the value's depth: valijson recurses through both.
  static constexpr int kMaxSchemaChain = 500;
  static constexpr long kMaxRecursion = 10000;
  // The most subschema applications to one value, each way through allOf, anyOf,
  // oneOf and $ref counted: alternatives that lead on to the same subschemas
  // multiply, and valijson tries every way (and collects an error for each).
  static constexpr long kMaxApplied = 10000;

  // Parses a schema document (draft 4/6/7 keywords as valijson supports them).
  // Fails (InvalidInput) with valijson's message when it is not a usable schema,
  // when it nests deeper than kMaxSchemaDepth, when it applies itself to the
  // same value without end ({"$ref": "#"}) or more than kMaxSchemaChain
  // subschemas to one value, or when a $ref is not a plain JSON pointer to a part
  // of the same schema ("#", "#/definitions/a").
  static Expected<JsonSchema> parse(const nlohmann::json& schema_doc);
  // Reads a schema from a JSON or YAML file.
  static Expected<JsonSchema> load_file(const std::string& path);
  // Returns one line per violation ("/steps/0/id: value is not a string"); empty = valid.
  // A value nested deeper than kMaxValueDepth, or whose depth times the schema's
  // longest chain passes kMaxRecursion, is not checked: one line says so.
  // A number without a fractional part (2.0, 1e3) is an integer, as JSON Schema
  // has it from draft 6 on.
  std::vector<std::string> validate(const nlohmann::json& doc) const;

 private:
  // validate() once the value's depth is known to be within bounds.
  std::vector<std::string> validate_shallow(const nlohmann::json& doc) const;
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace orch
