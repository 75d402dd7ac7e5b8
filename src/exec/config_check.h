// exec/config_check.h — reading an executor's YAML configuration file (models,
// workers) with every problem collected as "FILE: FIELD: what", unknown keys
// with a did-you-mean. Header-only: a handful of small checks.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"
#include "orch/plan_loader.h"
#include "util/doc_node.h"
#include "util/read_file.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch {

// Each key written twice in one mapping of `node`, as "FILE:LINE: FIELD: duplicate
// key (first at line N)": converted to JSON, one value would silently win.
inline void collect_duplicate_keys(const detail::DocNode& node, const std::string& field,
                                   const std::string& file, std::vector<std::string>& out) {
  if (node.is_map()) {
    std::map<std::string, int> seen;
    for (const detail::DocEntry& e : node.entries) {
      const std::string sub = field.empty() ? e.key.scalar : field + "." + e.key.scalar;
      if (auto [first, fresh] = seen.emplace(e.key.scalar, e.key.line); !fresh) {
        out.push_back(
            fmt::format("{}:{}: {}: duplicate key (first at line {})", file, e.key.line, sub, first->second));
        continue;
      }
      collect_duplicate_keys(e.value, sub, file, out);
    }
  } else if (node.is_sequence()) {
    std::size_t i = 0;
    for (const detail::DocNode& item : node.items)
      collect_duplicate_keys(item, fmt::format("{}[{}]", field, i++), file, out);
  }
}

// A configuration file's YAML (or JSON) text as JSON, read by orch's YAML
// reader (util/yaml_reader.h: aliases and merge keys with their limits, a
// cyclic alias refused); a syntax error is "FILE:LINE: YAML syntax error: ..."
// and a key written twice in one mapping "FILE:LINE: FIELD: duplicate key (first
// at line N)" (InvalidInput).
inline Expected<nlohmann::json> parse_config_yaml(const std::string& text, const std::string& file) {
  auto doc = detail::read_yaml_doc(text);
  if (!doc)
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}:{}: YAML syntax error: {}", file, doc.error().line, doc.error().message));
  std::vector<std::string> duplicates;
  collect_duplicate_keys(*doc, "", file, duplicates);
  if (!duplicates.empty()) return fail(ErrorCode::InvalidInput, join(duplicates, "\n"));
  return yaml_to_json(*doc);
}

// The whole text of a configuration file; NotFound "FILE: cannot read the WHAT
// file: why" (no such file, a folder, no permission).
inline Expected<std::string> read_config_file(const std::filesystem::path& file, const char* what) {
  auto text = read_file_text(file);
  if (text) return std::move(*text);
  std::string why = text.error().message;  // "FILE: why"
  if (const std::string prefix = file.string() + ": "; why.starts_with(prefix)) why.erase(0, prefix.size());
  return fail(ErrorCode::NotFound, fmt::format("{}: cannot read the {} file: {}", file.string(), what, why));
}

// A name a plan writes after `tool:` or `worker:` (and a tool's sub-command):
// letters, digits, '_', '.' and '-', starting with a letter or digit, at most
// 64 characters. Nothing that a shell, a path or the `KIND:NAME` form would
// read differently.
inline bool is_executor_name(std::string_view name) {
  auto ok = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  };
  return !name.empty() && name.size() <= 64 && std::isalnum(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), ok);
}
inline constexpr const char* kExecutorNameRule =
    "letters, digits, '_', '.' and '-', starting with a letter or digit (at most 64)";

// "a.b" (or "b" at the top).
inline std::string config_field(const std::string& field, const std::string& key) {
  return field.empty() ? key : field + "." + key;
}

// Collects every problem; each message is "FILE: FIELD: what".
class ConfigChecker {
 public:
  explicit ConfigChecker(std::string file) : file_(std::move(file)) {}

  void problem(const std::string& field, const std::string& message) {
    problems_.push_back(fmt::format("{}: {}: {}", file_, field, message));
  }
  bool ok() const { return problems_.empty(); }
  Error error() const { return Error{ErrorCode::InvalidInput, join(problems_, "\n")}; }

  // Unknown keys of `object` (a map at `field`), with a did-you-mean.
  void only_keys(const nlohmann::json& object, const std::string& field,
                 const std::vector<std::string>& known) {
    for (const auto& [key, value] : object.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end())
        problem(config_field(field, key), "unknown key" + did_you_mean(key, known));
    }
  }

  std::optional<std::string> string(const nlohmann::json& object, const std::string& field,
                                    const std::string& key, bool required) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
      if (required) problem(config_field(field, key), "missing");
      return std::nullopt;
    }
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
      problem(config_field(field, key), "must be a non-empty string");
      return std::nullopt;
    }
    return it->get<std::string>();
  }

  std::optional<double> number(const nlohmann::json& object, const std::string& field, const std::string& key,
                               double min) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    if (!it->is_number() || it->get<double>() < min) {
      problem(config_field(field, key), fmt::format("must be a number >= {}", min));
      return std::nullopt;
    }
    return it->get<double>();
  }

  std::optional<std::chrono::milliseconds> duration(const nlohmann::json& object, const std::string& field,
                                                    const std::string& key) {
    auto text = string(object, field, key, false);
    if (!text) return std::nullopt;
    auto d = parse_duration(*text);
    if (!d || d->count() <= 0) {
      problem(config_field(field, key), d ? "must be longer than 0" : d.error().message);
      return std::nullopt;
    }
    return *d;
  }

  // A size: "64MiB", "512k", "1000000" (as parse_size reads them), above 0.
  std::optional<std::int64_t> size(const nlohmann::json& object, const std::string& field,
                                   const std::string& key) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    Expected<std::int64_t> n =
        std::unexpected(Error{ErrorCode::InvalidInput, "must be a size such as 64MiB"});
    if (it->is_number_integer() || it->is_number_unsigned()) {
      n = it->get<std::int64_t>();
    } else if (it->is_string()) {
      n = parse_size(it->get<std::string>());
    }
    if (!n || *n <= 0) {
      problem(config_field(field, key), n ? "must be larger than 0" : n.error().message);
      return std::nullopt;
    }
    return *n;
  }

 private:
  std::string file_;
  std::vector<std::string> problems_;
};

}  // namespace orch
