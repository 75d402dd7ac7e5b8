#include "route/table_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "util/json_schema.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch::route {

namespace {

// What a scalar means: a string when quoted, else by the YAML 1.2 core schema.
nlohmann::json scalar_value(const DocNode& node) {
  if (node.quoted) return node.scalar;
  return plain_yaml_scalar(node.scalar);
}

std::string kind_of(const DocNode& node) {
  switch (node.type) {
    case DocNode::Type::Null:
      return "empty";
    case DocNode::Type::Sequence:
      return "a list";
    case DocNode::Type::Map:
      return "a mapping";
    case DocNode::Type::Scalar:
      break;
  }
  nlohmann::json v = scalar_value(node);
  if (v.is_boolean() || v.is_number()) return quote_for_message(node.scalar, 40);
  return fmt::format("'{}'", quote_for_message(node.scalar, 40));
}

// True when `text` is one or more whole words exactly as words_of() would cut them.
bool whole_words(const std::string& text, bool single) {
  std::vector<std::string> words = words_of(text);
  if (words.empty() || (single && words.size() != 1)) return false;
  return join(words, " ") == text;
}

// `v` without the members whose value is null, at every depth: `key:` with
// nothing after it is a key left out, for the getters and so for the schema.
nlohmann::json without_empty_values(nlohmann::json v) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end();) it = it->is_null() ? v.erase(it) : std::next(it);
    for (auto& member : v) member = without_empty_values(std::move(member));
  } else if (v.is_array()) {
    for (auto& item : v) item = without_empty_values(std::move(item));
  }
  return v;
}

}  // namespace

std::string field_name(std::string_view field, std::string_view key) {
  return field.empty() ? std::string(key) : fmt::format("{}.{}", field, key);
}

std::string field_name(std::string_view field, std::size_t index) {
  return fmt::format("{}[{}]", field, index);
}

DocNode TableReader::parse(std::string_view text) {
  auto doc = detail::read_yaml_doc(text);
  if (!doc) {
    problem(doc.error().line, "(file)", "YAML syntax error: " + doc.error().message);
    return DocNode{};
  }
  return std::move(*doc);
}

void TableReader::problem(int line, std::string_view field, std::string_view message) {
  problems_.emplace_back(line, line > 0 ? fmt::format("{}:{}: {}: {}", file_, line, field, message)
                                        : fmt::format("{}: {}: {}", file_, field, message));
}

std::vector<std::string> TableReader::problems() const {
  auto sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [line, message] : sorted) out.push_back(std::move(message));
  return out;
}

bool TableReader::expect_map(const DocNode& node, std::string_view field, std::string_view what) {
  if (node.is_map()) return true;
  problem(node.line, field.empty() ? "(top)" : field,
          fmt::format("must be a mapping of {}, not {}", what, kind_of(node)));
  return false;
}

void TableReader::only_keys(const DocNode& map, std::string_view field,
                            const std::vector<std::string>& known) {
  std::map<std::string, int> seen;
  for (const auto& entry : map.entries) {
    const std::string& key = entry.key.scalar;
    if (auto [it, fresh] = seen.emplace(key, entry.key.line); !fresh) {
      problem(entry.key.line, field_name(field, key),
              fmt::format("repeated key (first at line {})", it->second));
    } else if (!known.empty() && std::find(known.begin(), known.end(), key) == known.end()) {
      problem(entry.key.line, field_name(field, key), "unknown key" + did_you_mean(key, known));
    }
  }
}

const DocNode* TableReader::find(const DocNode& map, std::string_view key) {
  for (const auto& entry : map.entries)
    if (entry.key.scalar == key) return &entry.value;
  return nullptr;
}

std::optional<std::string> TableReader::string_value(const DocNode& node, std::string_view field) {
  if (!node.is_scalar() || !scalar_value(node).is_string() || node.scalar.empty()) {
    problem(node.line, field, fmt::format("must be a non-empty string, not {}", kind_of(node)));
    return std::nullopt;
  }
  return node.scalar;
}

std::optional<std::string> TableReader::string(const DocNode& map, std::string_view field,
                                               std::string_view key, bool required) {
  const DocNode* value = find(map, key);
  if (!value || value->is_null()) {
    if (required) problem(value ? value->line : map.line, field_name(field, key), "missing");
    return std::nullopt;
  }
  return string_value(*value, field_name(field, key));
}

std::optional<std::int64_t> TableReader::integer(const DocNode& map, std::string_view field,
                                                 std::string_view key, std::int64_t min, bool required) {
  const DocNode* value = find(map, key);
  if (!value || value->is_null()) {
    if (required) problem(value ? value->line : map.line, field_name(field, key), "missing");
    return std::nullopt;
  }
  return integer_value(*value, field_name(field, key), min);
}

std::optional<std::int64_t> TableReader::integer_value(const DocNode& node, std::string_view field,
                                                       std::int64_t min) {
  nlohmann::json v = node.is_scalar() ? scalar_value(node) : nlohmann::json();
  if (!v.is_number_integer() || v.get<std::int64_t>() < min) {
    problem(node.line, field,
            fmt::format("must be a whole number of at least {}, not {}", min, kind_of(node)));
    return std::nullopt;
  }
  return v.get<std::int64_t>();
}

std::optional<double> TableReader::number(const DocNode& map, std::string_view field, std::string_view key,
                                          double min, double max, bool required) {
  const DocNode* value = find(map, key);
  if (!value || value->is_null()) {
    if (required) problem(value ? value->line : map.line, field_name(field, key), "missing");
    return std::nullopt;
  }
  nlohmann::json v = value->is_scalar() ? scalar_value(*value) : nlohmann::json();
  if (!v.is_number() || v.get<double>() < min || v.get<double>() > max) {
    problem(value->line, field_name(field, key),
            fmt::format("must be a number from {} to {}, not {}", min, max, kind_of(*value)));
    return std::nullopt;
  }
  return v.get<double>();
}

std::optional<bool> TableReader::boolean(const DocNode& map, std::string_view field, std::string_view key) {
  const DocNode* value = find(map, key);
  if (!value || value->is_null()) return std::nullopt;
  nlohmann::json v = value->is_scalar() ? scalar_value(*value) : nlohmann::json();
  if (!v.is_boolean()) {
    problem(value->line, field_name(field, key),
            fmt::format("must be true or false, not {}", kind_of(*value)));
    return std::nullopt;
  }
  return v.get<bool>();
}

std::vector<std::string> TableReader::string_list(const DocNode& node, std::string_view field) {
  std::vector<std::string> out;
  if (!node.is_sequence()) {
    problem(node.line, field, fmt::format("must be a list of strings, not {}", kind_of(node)));
    return out;
  }
  for (std::size_t i = 0; i < node.items.size(); ++i)
    if (auto s = string_value(node.items[i], field_name(field, i))) out.push_back(std::move(*s));
  return out;
}

void TableReader::check_schema(const DocNode& root, const JsonSchema& schema, std::string_view schema_name) {
  for (const std::string& v : schema.validate(without_empty_values(yaml_to_json(root)))) {
    const std::string pointer = v.substr(0, v.find(':'));
    problem(line_of_pointer(root, pointer), pointer.empty() ? "(file)" : pointer,
            fmt::format("{}: {}", schema_name, v.substr(std::min(v.size(), pointer.size() + 2))));
  }
}

int TableReader::line_of_pointer(const DocNode& root, std::string_view pointer) {
  const DocNode* node = &root;
  int line = root.line;
  std::size_t start = 1;
  while (start <= pointer.size() && node) {
    std::size_t end = pointer.find('/', start);
    if (end == std::string_view::npos) end = pointer.size();
    const std::string_view token = pointer.substr(start, end - start);
    start = end + 1;
    const DocNode* next = nullptr;
    if (node->is_map()) {
      next = find(*node, token);
    } else if (node->is_sequence() && !token.empty() &&
               std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const std::size_t i = std::stoul(std::string(token));
      if (i < node->items.size()) next = &node->items[i];
    }
    if (!next) break;
    node = next;
    if (node->line > 0) line = node->line;
  }
  return line;
}

std::optional<Keyword> TableReader::keyword(const DocNode& node, std::string_view field) {
  Keyword k;
  k.line = node.line;
  auto not_whole = [&](std::string_view f, const std::string& text, bool single) {
    std::vector<std::string> words = words_of(text);
    problem(node.line, f,
            fmt::format("'{}' is not {}: requests are lower-cased and cut at every character that is not a "
                        "letter or digit, so it would be read as '{}' and never match as written",
                        quote_for_message(text, 40),
                        single ? "one whole lower-case word" : "whole lower-case words", join(words, " ")));
  };
  if (node.is_scalar()) {
    auto text = string_value(node, field);
    if (!text) return std::nullopt;
    if (!whole_words(*text, false)) {
      not_whole(field, *text, false);
      return std::nullopt;
    }
    k.text = *text;
    k.phrase = words_of(*text);
    return k;
  }
  if (!node.is_map()) {
    problem(node.line, field,
            fmt::format(
                "must be a word, a phrase, or {{word: W, forms: [...]}} / {{stem: S, forms: [...]}}, not {}",
                kind_of(node)));
    return std::nullopt;
  }
  only_keys(node, field, {"word", "stem", "forms", "weight"});
  const std::size_t before = problems_.size();
  auto word = string(node, field, "word", false);
  auto stem = string(node, field, "stem", false);
  if (word.has_value() == stem.has_value()) {
    if (problems_.size() == before)
      problem(node.line, field,
              "needs exactly one of `word` (the word matches) and `stem` (only its forms match)");
    return std::nullopt;
  }
  if (const DocNode* forms = find(node, "forms"); forms && !forms->is_null())
    k.forms = string_list(*forms, field_name(field, "forms"));
  if (auto w = number(node, field, "weight", 0.01, 10.0, false)) k.weight = *w;
  if (word) {
    if (!whole_words(*word, !k.forms.empty())) not_whole(field_name(field, "word"), *word, !k.forms.empty());
    k.text = *word;
    k.phrase = words_of(*word);
  } else {
    if (!whole_words(*stem, true)) not_whole(field_name(field, "stem"), *stem, true);
    if (k.forms.empty())
      problem(node.line, field_name(field, "forms"), "a stem needs the forms it stands for");
    k.text = *stem;
    k.stem = *stem;
  }
  for (std::size_t i = 0; i < k.forms.size(); ++i) {
    const std::string& form = k.forms[i];
    if (!whole_words(form, true)) {
      not_whole(field_name(field_name(field, "forms"), i), form, true);
    } else if (stem && !form.starts_with(*stem)) {
      problem(node.line, field_name(field_name(field, "forms"), i),
              fmt::format("'{}' does not start with the stem '{}'", form, *stem));
    }
  }
  if (problems_.size() != before) return std::nullopt;
  return k;
}

std::vector<Keyword> TableReader::keywords(const DocNode& node, std::string_view field) {
  std::vector<Keyword> out;
  if (!node.is_sequence() || node.items.empty()) {
    problem(node.line, field, fmt::format("must be a non-empty list of keywords, not {}", kind_of(node)));
    return out;
  }
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < node.items.size(); ++i) {
    auto k = keyword(node.items[i], field_name(field, i));
    if (!k) continue;
    if (auto [it, fresh] = seen.emplace(k->text, k->line); !fresh) {
      problem(k->line, field_name(field, i),
              fmt::format("'{}' is repeated (first at line {})", k->text, it->second));
      continue;
    }
    out.push_back(std::move(*k));
  }
  return out;
}

}  // namespace orch::route
