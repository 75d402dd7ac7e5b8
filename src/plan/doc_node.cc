#include "plan/doc_node.h"

#include "util/yaml_json.h"

namespace orch::detail {

DocNode from_yaml(const YAML::Node& node, int max_depth) {
  DocNode out;
  int line = node.Mark().line;
  out.line = line >= 0 ? line + 1 : 0;
  if (max_depth <= 0) return out;
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      out.type = DocNode::Type::Scalar;
      out.scalar = node.Scalar();
      // yaml-cpp tags plain scalars "?" and quoted ones "!".
      out.quoted = node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str";
      break;
    case YAML::NodeType::Sequence:
      out.type = DocNode::Type::Sequence;
      out.items.reserve(node.size());
      for (const auto& item : node) out.items.push_back(from_yaml(item, max_depth - 1));
      break;
    case YAML::NodeType::Map:
      out.type = DocNode::Type::Map;
      out.entries.reserve(node.size());
      for (const auto& kv : node)
        out.entries.push_back({from_yaml(kv.first, max_depth - 1), from_yaml(kv.second, max_depth - 1)});
      break;
    default:
      break;
  }
  return out;
}

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
