#include "util/yaml_json.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "util/strings.h"
#include "util/yaml_writer.h"

namespace orch {

namespace {

bool is_digits(std::string_view s, int base) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                         : (c >= '0' && c < static_cast<char>('0' + base));
    if (!ok) return false;
  }
  return true;
}

// Integers: [-+]?[0-9]+, 0x[0-9a-fA-F]+, 0o[0-7]+.
std::optional<nlohmann::json> parse_int(std::string_view text) {
  std::string_view digits = text;
  bool negative = false;
  int base = 10;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'o')) {
    if (digits.size() != text.size()) return std::nullopt;  // no sign on hex/octal
    base = digits[1] == 'x' ? 16 : 8;
    digits.remove_prefix(2);
  }
  if (!is_digits(digits, base)) return std::nullopt;

  std::uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (ec == std::errc() && end == digits.data() + digits.size()) {
    if (!negative) {
      if (magnitude <= static_cast<std::uint64_t>(INT64_MAX)) return nlohmann::json(static_cast<std::int64_t>(magnitude));
      return nlohmann::json(magnitude);
    }
    if (magnitude <= static_cast<std::uint64_t>(INT64_MAX)) return nlohmann::json(-static_cast<std::int64_t>(magnitude));
    if (magnitude == static_cast<std::uint64_t>(INT64_MAX) + 1) return nlohmann::json(INT64_MIN);
  }
  // Too big for 64 bits: keep the magnitude approximately, as JSON parsers do.
  if (base != 10) return std::nullopt;
  double value = 0;
  auto [dend, dec] = std::from_chars(text.data() + (text[0] == '+' ? 1 : 0), text.data() + text.size(), value);
  if (dec == std::errc() && dend == text.data() + text.size()) return nlohmann::json(value);
  return std::nullopt;
}

// Floats: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool parse_float_syntax(std::string_view text) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  std::size_t int_digits = digits();
  std::size_t frac_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    frac_digits = digits();
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

std::optional<nlohmann::json> parse_float(std::string_view text) {
  if (!parse_float_syntax(text)) return std::nullopt;
  // from_chars rejects a leading '+'.
  std::string_view number = text[0] == '+' ? text.substr(1) : text;
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  return nlohmann::json(value);
}

}  // namespace

bool number_too_large(std::string_view text) {
  std::string_view number = !text.empty() && text[0] == '+' ? text.substr(1) : text;
  if (number.empty() || !parse_float_syntax(number)) return false;
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc::result_out_of_range) return false;
  // Out of range one way or the other: too large unless it is too close to 0.
  // The decimal exponent of its first significant digit says which.
  const std::size_t e = number.find_first_of("eE");
  const std::string_view mantissa = number.substr(0, e);
  long long exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view exp = number.substr(e + 1);
    if (!exp.empty() && exp[0] == '+') exp.remove_prefix(1);
    auto [p, err] = std::from_chars(exp.data(), exp.data() + exp.size(), exponent);
    if (err == std::errc::result_out_of_range) return exp[0] != '-';
  }
  const std::size_t point = mantissa.find('.');
  const std::string_view whole = mantissa.substr(0, point);
  const std::size_t first = whole.find_first_not_of("-0");
  if (first != std::string_view::npos) return static_cast<long long>(whole.size() - first) - 1 + exponent > 0;
  return false;  // 0.000...1e-400 and the like: too small, not too large
}

namespace {

// A decimal's value as 0.DIGITS × 10^exponent, DIGITS without leading or trailing
// zeros ("" for zero), so two spellings of one number compare equal. `text` is
// written as parse_float_syntax (or the chars of a double) has it.
struct Decimal {
  std::string digits;
  long long exponent = 0;
  bool operator==(const Decimal&) const = default;
};

std::optional<Decimal> decimal_of(std::string_view text) {
  std::size_t i = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  Decimal out;
  std::optional<std::size_t> point;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.')
      point = out.digits.size();
    else
      out.digits.push_back(text[i]);
  }
  const std::size_t lead = out.digits.find_first_not_of('0');
  if (lead == std::string::npos) return Decimal{};  // zero, whatever its exponent
  long long exponent = 0;
  if (i < text.size()) {
    std::string_view exp = text.substr(i + 1);
    if (!exp.empty() && exp[0] == '+') exp.remove_prefix(1);
    auto [end, ec] = std::from_chars(exp.data(), exp.data() + exp.size(), exponent);
    if (ec != std::errc() || end != exp.data() + exp.size()) return std::nullopt;
  }
  const auto whole = static_cast<long long>(point.value_or(out.digits.size()));
  out.digits = out.digits.substr(lead, out.digits.find_last_not_of('0') + 1 - lead);
  out.exponent = whole - static_cast<long long>(lead) + exponent;
  return out;
}

bool is_yaml_special(std::string_view text, std::string_view word) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) text.remove_prefix(1);
  if (text.size() != word.size() + 1 || text[0] != '.') return false;
  std::string lower(word), title(word), upper(word);
  title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (word == "nan") title = "NaN";
  text.remove_prefix(1);
  return text == lower || text == title || text == upper;
}

}  // namespace

std::optional<std::string> number_not_kept(std::string_view text) {
  if (is_yaml_special(text, "inf")) return "is YAML's infinity, and JSON has no such number";
  if (is_yaml_special(text, "nan") && text[0] == '.')
    return "is YAML's not-a-number, and JSON has no such number";
  const std::string_view number = !text.empty() && text[0] == '+' ? text.substr(1) : text;
  if (number.empty() || !parse_float_syntax(number)) return std::nullopt;
  const nlohmann::json value = plain_yaml_scalar(std::string(text));
  if (value.is_number_integer()) return std::nullopt;
  if (!value.is_number_float())
    return number_too_large(text) ? "is too large for a number" : "is too close to zero for a number";
  // As a placeholder renders it.
  const std::string kept = value.dump();
  if (decimal_of(number) == decimal_of(kept)) return std::nullopt;
  return fmt::format("has more digits than a number keeps (it would be read as {})", kept);
}

nlohmann::json plain_yaml_scalar(const std::string& text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  char first = text[0];
  if ((first >= '0' && first <= '9') || first == '-' || first == '+' || first == '.') {
    if (auto i = parse_int(text)) return *i;
    if (auto f = parse_float(text)) return *f;
  }
  return text;
}

namespace {

template <class Json>
Json convert(const detail::DocNode& node) {
  switch (node.type) {
    case detail::DocNode::Type::Scalar:
      if (node.quoted) return Json(node.scalar);
      return Json(plain_yaml_scalar(node.scalar));
    case detail::DocNode::Type::Sequence: {
      Json arr = Json::array();
      for (const auto& item : node.items) arr.push_back(convert<Json>(item));
      return arr;
    }
    case detail::DocNode::Type::Map: {
      Json obj = Json::object();
      for (const auto& [key, value] : node.entries) {
        std::string name = yaml_key(key);
        if (!obj.contains(name)) obj[std::move(name)] = convert<Json>(value);
      }
      return obj;
    }
    case detail::DocNode::Type::Null:
      break;
  }
  return Json(nullptr);
}

}  // namespace

std::string yaml_key(const detail::DocNode& key) {
  if (key.is_scalar()) return key.scalar;
  if (key.is_null()) return "null";
  auto text = yaml_text(yaml_to_ordered_json(key), YamlLayout::Flow);
  return text ? std::move(*text) : yaml_to_ordered_json(key).dump();
}

nlohmann::json yaml_to_json(const detail::DocNode& node) {
  return convert<nlohmann::json>(node);
}

nlohmann::ordered_json yaml_to_ordered_json(const detail::DocNode& node) {
  return convert<nlohmann::ordered_json>(node);
}

std::optional<detail::YamlSyntaxError> duplicate_key(const detail::DocNode& node) {
  std::optional<detail::YamlSyntaxError> found;  // the one on the earliest line so far
  auto keep_earlier = [&found](std::optional<detail::YamlSyntaxError> e) {
    if (e && (!found || e->line < found->line)) found = std::move(e);
  };
  if (node.is_map()) {
    std::map<std::string, int> seen;  // key -> its first line
    for (const auto& [key, value] : node.entries) {
      std::string name = yaml_key(key);
      if (auto [first, fresh] = seen.emplace(name, key.line); !fresh)
        keep_earlier(detail::YamlSyntaxError{
            key.line, fmt::format("key '{}' is written twice in one mapping (first at line {})",
                                  quote_for_message(name), first->second)});
      keep_earlier(duplicate_key(value));
    }
  } else if (node.is_sequence()) {
    for (const auto& item : node.items) keep_earlier(duplicate_key(item));
  }
  return found;
}

std::expected<nlohmann::json, detail::YamlSyntaxError> read_yaml_json(std::string_view text) {
  auto doc = detail::read_yaml_doc(text);
  if (!doc) return std::unexpected(std::move(doc).error());
  if (auto duplicate = duplicate_key(*doc)) return std::unexpected(std::move(*duplicate));
  return yaml_to_json(*doc);
}

}  // namespace orch
