// flows/plan_yaml.h — writing a plan built in code (as JSON) as YAML text.
//
// For the plans the planner writes itself (the single step). Strings that YAML
// could read as something else (numbers, booleans, null, text with ':' or '#')
// are double-quoted, so the text reads back as exactly the JSON it came from.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace orch::flows {

std::string to_yaml(const nlohmann::ordered_json& value);

}  // namespace orch::flows
