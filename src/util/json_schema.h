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
  // Parses a schema document (draft 4/6/7 keywords as valijson supports them).
  // Fails (InvalidInput) with valijson's message when it is not a usable schema.
  static Expected<JsonSchema> parse(const nlohmann::json& schema_doc);
  // Reads a schema from a JSON or YAML file.
  static Expected<JsonSchema> load_file(const std::string& path);
  // Returns one line per violation ("/steps/0/id: value is not a string"); empty = valid.
  std::vector<std::string> validate(const nlohmann::json& doc) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace orch
