// exec/registry_places.cc — where each value of a registry file was written (exec/registry_places.h).
#include "exec/registry_places.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace orch::detail {

std::string pointer_child(const std::string& pointer, const std::string& key) {
  return (nlohmann::json::json_pointer(pointer) / key).to_string();
}

std::string pointer_child(const std::string& pointer, std::size_t index) {
  return (nlohmann::json::json_pointer(pointer) / index).to_string();
}

std::string field_of_pointer(const std::string& pointer) {
  std::string out;
  std::size_t i = 1;
  while (i <= pointer.size() && !pointer.empty()) {
    std::size_t next = pointer.find('/', i);
    std::string token = pointer.substr(i, next == std::string::npos ? std::string::npos : next - i);
    bool index = !token.empty() &&
                 std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
    out += index ? "[" + token + "]" : (out.empty() ? token : "." + token);
    if (next == std::string::npos) break;
    i = next + 1;
  }
  return out.empty() ? "(top)" : out;
}

void RegistryPlaces::collect(const DocNode& node, const std::string& pointer, const std::string& field,
                             int key_line) {
  by_pointer[pointer] = Place{key_line, node.line > 0 ? node.line : key_line, field};
  if (node.is_map()) {
    std::map<std::string, int> seen;
    for (const auto& [key, value] : node.entries) {
      const std::string& name = key.scalar;
      std::string sub_field = field.empty() ? name : field + "." + name;
      if (auto [it, fresh] = seen.emplace(name, key.line); !fresh) {
        duplicates.push_back({key.line, fmt::format("{}: {}: duplicate key (first at line {})", key.line,
                                                    sub_field, it->second)});
        continue;  // the first value counts, as in yaml_to_json
      }
      collect(value, pointer_child(pointer, name), sub_field, key.line);
    }
  } else if (node.is_sequence()) {
    for (std::size_t i = 0; i < node.items.size(); ++i)
      collect(node.items[i], pointer_child(pointer, i), fmt::format("{}[{}]", field, i), node.items[i].line);
  }
}

const RegistryPlaces::Place* RegistryPlaces::find(const std::string& pointer) const {
  auto it = by_pointer.find(pointer);
  return it == by_pointer.end() ? nullptr : &it->second;
}

}  // namespace orch::detail
