#include "plan/fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "plan/duration.h"
#include "util/strings.h"
#include "util/yaml_json.h"

namespace orch::detail {

void ReadContext::error(int line, std::string message) const {
  out->push_back(Diagnostic{file, line, step_id, std::move(message)});
}

void check_data_value(const ReadContext& ctx, const DocNode& node) {
  std::vector<const DocNode*> todo{&node};
  while (!todo.empty()) {
    const DocNode* n = todo.back();
    todo.pop_back();
    if (n->is_scalar() && !n->quoted) {
      if (auto why = number_not_kept(n->scalar))
        ctx.error(n->line, fmt::format("{} {}: quote it to keep it as written", describe(*n), *why));
    } else if (n->is_sequence()) {
      for (const DocNode& item : n->items) todo.push_back(&item);
    } else if (n->is_map()) {
      std::map<std::string, int> seen;
      for (const DocEntry& e : n->entries) {
        if (e.key.is_scalar()) {
          if (auto [first, fresh] = seen.emplace(e.key.scalar, e.key.line); !fresh)
            ctx.error(e.key.line,
                      fmt::format("duplicate key '{}' (first at line {})", e.key.scalar, first->second));
        }
        todo.push_back(&e.value);
      }
    }
  }
}

std::string describe(const DocNode& node) {
  switch (node.type) {
    case DocNode::Type::Sequence:
      return "a list";
    case DocNode::Type::Map:
      return "a mapping";
    case DocNode::Type::Scalar:
      return fmt::format("'{}'", quote_for_message(node.scalar, 40));
    case DocNode::Type::Null:
      break;
  }
  return "nothing";
}

void for_each_field(const ReadContext& ctx, const DocNode& map, const std::vector<std::string>& allowed,
                    const std::function<void(const Field&)>& fn) {
  // Mappings are small: a linear scan beats a std::map's allocations here.
  std::vector<std::pair<std::string_view, int>> seen;  // key, line of its first occurrence
  seen.reserve(map.entries.size());
  for (const auto& [key_node, value] : map.entries) {
    int key_line = key_node.line;
    if (!key_node.is_scalar()) {
      ctx.error(key_line, fmt::format("keys must be plain names, got {}", describe(key_node)));
      continue;
    }
    const std::string& key = key_node.scalar;
    auto first = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == key; });
    if (first != seen.end()) {
      ctx.error(key_line, fmt::format("duplicate key '{}' (first at line {})", key, first->second));
      continue;
    }
    seen.emplace_back(key, key_line);
    if (key.starts_with("x-")) continue;  // extension keys: free for anchors and notes
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      // The one field a step cannot set for itself.
      const std::string hint = key == "kill_grace" ? " (it is set for the whole plan, under 'defaults:')"
                                                   : did_you_mean(key, allowed);
      ctx.error(key_line, fmt::format("unknown key '{}'{}", quote_for_message(key), hint));
      continue;
    }
    fn(Field{key, key_line, value});
  }
}

namespace {

// The value's own line when it has one, else the key's (a missing value has no useful mark).
int value_line(const Field& f) {
  int line = f.value.is_null() ? 0 : f.value.line;
  return line > 0 ? line : f.line;
}

bool expect_scalar(const ReadContext& ctx, const Field& f, const std::string& name, std::string_view what) {
  if (f.value.is_scalar()) return true;
  ctx.error(value_line(f), fmt::format("'{}' must be {}, got {}", name, what, describe(f.value)));
  return false;
}

}  // namespace

std::optional<std::string> read_string(const ReadContext& ctx, const Field& f, const std::string& name) {
  if (!expect_scalar(ctx, f, name, "a string")) return std::nullopt;
  return f.value.scalar;
}

std::optional<std::int64_t> read_int(const ReadContext& ctx, const Field& f, const std::string& name) {
  if (!expect_scalar(ctx, f, name, "an integer")) return std::nullopt;
  std::string_view text = trim(f.value.scalar);
  std::string_view digits = !text.empty() && text[0] == '+' ? text.substr(1) : text;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) {
    ctx.error(value_line(f), fmt::format("'{}' is out of range: {}", name, describe(f.value)));
    return std::nullopt;
  }
  // `2.0` is the integer 2, as JSON Schema (and so the plan schema) has it.
  std::string_view rest(end, static_cast<std::size_t>(digits.data() + digits.size() - end));
  const bool whole_fraction =
      !rest.empty() && rest[0] == '.' && rest.find_first_not_of('0', 1) == std::string_view::npos;
  if (digits.empty() || ec != std::errc() || (!rest.empty() && !whole_fraction)) {
    // Another notation YAML 1.2 or JSON has for a number (1e3, 0x10, 0o17, 10e-1):
    // an integer if its value is one.
    const nlohmann::json number = plain_yaml_scalar(std::string(text));
    if (number.is_number_integer() && !number.is_number_unsigned()) return number.get<std::int64_t>();
    if (number.is_number_unsigned() || number_too_large(text) ||
        (number.is_number_float() && std::isfinite(number.get<double>()) &&
         std::trunc(number.get<double>()) == number.get<double>() &&
         std::fabs(number.get<double>()) >= 0x1p63)) {
      ctx.error(value_line(f), fmt::format("'{}' is out of range: {}", name, describe(f.value)));
      return std::nullopt;
    }
    if (number.is_number_float() && std::trunc(number.get<double>()) == number.get<double>())
      return static_cast<std::int64_t>(number.get<double>());
    ctx.error(value_line(f), fmt::format("'{}' must be an integer, got {}", name, describe(f.value)));
    return std::nullopt;
  }
  return value;
}

std::optional<int> read_small_int(const ReadContext& ctx, const Field& f, const std::string& name) {
  auto value = read_int(ctx, f, name);
  if (!value) return std::nullopt;
  if (*value > INT_MAX || *value < INT_MIN) {
    ctx.error(value_line(f), fmt::format("'{}' is out of range: {}", name, *value));
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

std::optional<double> read_number(const ReadContext& ctx, const Field& f, const std::string& name) {
  if (!expect_scalar(ctx, f, name, "a number")) return std::nullopt;
  nlohmann::json value = plain_yaml_scalar(std::string(trim(f.value.scalar)));
  if (number_too_large(trim(f.value.scalar))) {
    ctx.error(value_line(f), fmt::format("'{}' is out of range: {}", name, describe(f.value)));
    return std::nullopt;
  }
  if (!value.is_number() || !std::isfinite(value.get<double>())) {
    ctx.error(value_line(f), fmt::format("'{}' must be a number, got {}", name, describe(f.value)));
    return std::nullopt;
  }
  return value.get<double>();
}

std::optional<Millis> read_duration(const ReadContext& ctx, const Field& f, const std::string& name) {
  if (!expect_scalar(ctx, f, name, "a duration such as 30s or 5m")) return std::nullopt;
  auto value = duration_or_reason(f.value.scalar);
  if (!value) {
    ctx.error(value_line(f), fmt::format("bad duration '{}' for '{}': {}", quote_for_message(f.value.scalar),
                                         name, value.error().message));
    return std::nullopt;
  }
  return *value;
}

std::optional<std::int64_t> read_size(const ReadContext& ctx, const Field& f, const std::string& name) {
  if (!expect_scalar(ctx, f, name, "a size such as 16MiB")) return std::nullopt;
  auto value = size_or_reason(f.value.scalar);
  if (!value) {
    ctx.error(value_line(f), fmt::format("bad size '{}' for '{}': {}", quote_for_message(f.value.scalar),
                                         name, value.error().message));
    return std::nullopt;
  }
  return *value;
}

std::optional<std::vector<std::string>> read_string_list(const ReadContext& ctx, const Field& f,
                                                         const std::string& name, bool allow_single,
                                                         std::vector<int>* item_lines) {
  std::vector<std::string> items;
  if (allow_single && f.value.is_scalar()) {
    items.push_back(f.value.scalar);
    if (item_lines) item_lines->push_back(value_line(f));
    return items;
  }
  if (!f.value.is_sequence()) {
    ctx.error(value_line(f), fmt::format("'{}' must be a list, got {}", name, describe(f.value)));
    return std::nullopt;
  }
  bool ok = true;
  for (const auto& item : f.value.items) {
    if (!item.is_scalar()) {
      ctx.error(item.line ? item.line : f.line,
                fmt::format("items of '{}' must be strings, got {}", name, describe(item)));
      ok = false;
      continue;
    }
    items.push_back(item.scalar);
    if (item_lines) item_lines->push_back(item.line ? item.line : f.line);
  }
  if (!ok) return std::nullopt;
  return items;
}

}  // namespace orch::detail
