#include "plan/doc_node.h"

#include "util/yaml_json.h"

namespace orch::detail {

namespace {

template <class Json>
Json convert(const DocNode& node) {
  switch (node.type) {
    case DocNode::Type::Scalar:
      if (node.quoted) return Json(node.scalar);
      return Json(plain_yaml_scalar(node.scalar));
    case DocNode::Type::Sequence: {
      Json arr = Json::array();
      for (const auto& item : node.items) arr.push_back(convert<Json>(item));
      return arr;
    }
    case DocNode::Type::Map: {
      Json obj = Json::object();
      for (const auto& [key, value] : node.entries) {
        // A repeated key keeps its first value, as the loader does.
        if (!obj.contains(key.scalar)) obj[key.scalar] = convert<Json>(value);
      }
      return obj;
    }
    case DocNode::Type::Null:
      break;
  }
  return Json(nullptr);
}

}  // namespace

nlohmann::ordered_json to_ordered_json(const DocNode& node) {
  return convert<nlohmann::ordered_json>(node);
}
nlohmann::json to_json(const DocNode& node) {
  return convert<nlohmann::json>(node);
}

}  // namespace orch::detail
