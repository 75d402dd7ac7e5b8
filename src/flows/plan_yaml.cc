#include "flows/plan_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>

namespace orch::flows {

namespace {

// Plain only when it is a simple word YAML cannot read as anything but a string.
bool plain_safe(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) != 0 || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' || c == '/'))
      return false;
  std::string lower(s);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* word : {"true", "false", "null", "yes", "no", "on", "off", "y", "n"})
    if (lower == word) return false;
  return true;
}

void emit(YAML::Emitter& out, const nlohmann::ordered_json& v) {
  if (v.is_object()) {
    if (v.empty()) {
      out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
      return;
    }
    out << YAML::BeginMap;
    for (const auto& [key, value] : v.items()) {
      out << YAML::Key;
      if (plain_safe(key)) {
        out << key;
      } else {
        out << YAML::DoubleQuoted << key;
      }
      out << YAML::Value;
      emit(out, value);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    if (v.empty()) {
      out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
      return;
    }
    out << YAML::BeginSeq;
    for (const auto& item : v) emit(out, item);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (plain_safe(s)) {
      out << s;
    } else {
      out << YAML::DoubleQuoted << s;
    }
  } else if (v.is_null()) {
    out << YAML::Null;
  } else if (v.is_boolean()) {
    out << v.get<bool>();
  } else if (v.is_number_integer()) {
    out << v.get<std::int64_t>();
  } else if (v.is_number_unsigned()) {
    out << v.get<std::uint64_t>();
  } else {
    out << v.get<double>();
  }
}

}  // namespace

std::string to_yaml(const nlohmann::ordered_json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

}  // namespace orch::flows
