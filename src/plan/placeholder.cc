// The placeholder language (placeholder.h): parsing templates, rendering them.
//
// Parsing is strict on purpose: anything that looks like a placeholder ("${...}")
// but is not one of the known forms is an error with a did-you-mean, so a typo
// fails validation instead of reaching a process as literal text. "$${" is a
// literal "${" (before "{", "$$" is one "$"); "#E<digits>" is the seed's form ("#Error" is text) and
// "##E<digit>" a literal "#E<digit>" (so text from outside, like a CSS colour "#E0E0E0", can always be passed
// through escape_placeholders()).
#include "orch/placeholder.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "util/strings.h"

namespace orch {

namespace {

constexpr std::string_view kKnownForms =
    "${steps.ID.result}, ${steps.ID.json.PATH}, ${inputs.NAME}, ${attempt.number}, "
    "${attempt.previous_failure}";

std::vector<std::string> split_dots(std::string_view s) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    parts.emplace_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

// parts[from, to) joined with dots.
std::string join_range(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to && i < parts.size(); ++i) {
    if (i > from) out += '.';
    out += parts[i];
  }
  return out;
}

std::string joined_tail(const std::vector<std::string>& parts, std::size_t from) {
  return join_range(parts, from, parts.size());
}

Error unknown(std::string_view source, std::string_view hint) {
  return Error{ErrorCode::InvalidInput, fmt::format("unknown placeholder '{}'{}", source, hint)};
}

std::string suggest(std::string_view form) {
  return fmt::format(" (did you mean '{}'?)", form);
}

// `${steps.ID.result}` / `${steps.ID.json[.PATH]}`. Ids may contain dots, so the
// id is everything between "steps." and the first "result"/"json" segment.
Expected<Segment> parse_steps_form(const std::vector<std::string>& parts, std::string_view source) {
  std::size_t kind_at = 0;
  for (std::size_t i = 2; i < parts.size() && kind_at == 0; ++i)
    if (parts[i] == "result" || parts[i] == "json") kind_at = i;
  if (kind_at == 0) {
    // No "result"/"json" segment: a typo of one ("${steps.a.reslt}"), or left out ("${steps.a}").
    if (parts.size() < 2 || parts[1].empty())
      return std::unexpected(unknown(source, " (write '${steps.ID.result}' with the id of an earlier step)"));
    bool typo = parts.size() > 2;
    std::string id = typo ? join_range(parts, 1, parts.size() - 1) : joined_tail(parts, 1);
    bool json_like = typo && edit_distance(parts.back(), "json") < edit_distance(parts.back(), "result");
    return std::unexpected(
        unknown(source, suggest(fmt::format("${{steps.{}.{}}}", id, json_like ? "json" : "result"))));
  }
  Segment seg;
  seg.text = join_range(parts, 1, kind_at);
  for (std::size_t i = 1; i < kind_at; ++i)
    if (parts[i].empty())
      return std::unexpected(unknown(source, " (write '${steps.ID.result}' with the id of an earlier step)"));
  if (parts[kind_at] == "result") {
    if (kind_at + 1 != parts.size())
      return std::unexpected(unknown(
          source, suggest(fmt::format("${{steps.{}.json.{}}}", seg.text, joined_tail(parts, kind_at + 1)))));
    seg.kind = Segment::Kind::StepResult;
    return seg;
  }
  seg.kind = Segment::Kind::StepJson;
  seg.json_path.assign(parts.begin() + static_cast<std::ptrdiff_t>(kind_at) + 1, parts.end());
  for (const auto& p : seg.json_path)
    if (p.empty())
      return std::unexpected(Error{ErrorCode::InvalidInput,
                                   fmt::format("placeholder '{}' has an empty JSON path segment", source)});
  return seg;
}

// Parses the text between "${" and "}" (`inner`); `source` is the whole "${...}".
Expected<Segment> parse_placeholder(std::string_view inner, std::string_view source) {
  // `${ steps.a.result }`: a placeholder has no spaces; suggest it without them.
  if (std::string_view bare = trim(inner); bare.size() != inner.size() && !bare.empty()) {
    const std::string without = fmt::format("${{{}}}", bare);
    if (parse_placeholder(bare, without)) return std::unexpected(unknown(source, suggest(without)));
  }
  std::vector<std::string> parts = split_dots(inner);
  const std::string& head = parts[0];
  if (head == "steps") return parse_steps_form(parts, source);
  if (head == "inputs") {
    if (parts.size() == 2 && is_identifier(parts[1])) {
      Segment seg;
      seg.kind = Segment::Kind::Input;
      seg.text = parts[1];
      return seg;
    }
    return std::unexpected(unknown(source, " (write '${inputs.NAME}' with NAME an input of this step)"));
  }
  if (head == "attempt") {
    Segment seg;
    seg.kind = parts.size() == 2 && parts[1] == "number" ? Segment::Kind::AttemptNumber
                                                         : Segment::Kind::PreviousFailure;
    if (parts.size() == 2 && (parts[1] == "number" || parts[1] == "previous_failure")) return seg;
    std::string field = joined_tail(parts, 1);
    auto near = closest_match(field, {"number", "previous_failure"});
    return std::unexpected(unknown(
        source, near ? suggest(fmt::format("${{attempt.{}}}", *near))
                     : std::string(" (did you mean '${attempt.number}' or '${attempt.previous_failure}'?)")));
  }
  // An unknown head: a typo of a known one ("${step.a.result}", "${input.x}"), or
  // something else entirely (often a shell variable in an `sh` script).
  std::string tail = joined_tail(parts, 1);
  std::string name = parts.size() > 1 ? parts[1] : "NAME";
  std::vector<std::string> candidates{
      fmt::format("${{steps.{}.result}}", parts.size() > 1 ? parts[1] : "ID"),
      fmt::format("${{steps.{}}}", tail),
      fmt::format("${{inputs.{}}}", name),
      "${attempt.number}",
      "${attempt.previous_failure}",
  };
  if (auto near = closest_match(source, candidates); near && parts.size() > 1)
    return std::unexpected(unknown(source, suggest(*near)));
  if (auto near = closest_match(head, {"steps", "inputs", "attempt"}))
    return std::unexpected(
        unknown(source, suggest(fmt::format("${{{}{}{}}}", *near, tail.empty() ? "" : ".", tail))));
  if (parts.size() == 1 && is_identifier(head))
    return std::unexpected(
        unknown(source, fmt::format(" (to leave '{}' for the shell write '${}'; placeholders are {})", source,
                                    source, kKnownForms)));
  return std::unexpected(
      unknown(source, fmt::format(" (placeholders are {}; write '$${{' for a literal '${{')", kKnownForms)));
}

void add_literal(Template& t, std::string_view text, std::size_t offset) {
  if (text.empty()) return;
  if (!t.segments.empty() && t.segments.back().kind == Segment::Kind::Literal) {
    t.segments.back().text += text;
    return;
  }
  Segment seg;
  seg.kind = Segment::Kind::Literal;
  seg.text = std::string(text);
  seg.offset = offset;
  t.segments.push_back(std::move(seg));
}

bool is_ascii_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::size_t dollar_run(std::string_view text, std::size_t at) {
  std::size_t end = at;
  while (end < text.size() && text[end] == '$') ++end;
  return end < text.size() && text[end] == '{' ? end - at : 0;
}

bool Template::has_placeholders() const {
  for (const auto& s : segments)
    if (s.kind != Segment::Kind::Literal) return true;
  return false;
}

Expected<Template> parse_template(std::string_view text) {
  Template t;
  std::size_t literal_start = 0;
  std::size_t i = 0;
  auto flush = [&](std::size_t end) {
    add_literal(t, text.substr(literal_start, end - literal_start), literal_start);
  };
  while (i < text.size()) {
    if (const std::size_t n = dollar_run(text, i); n >= 2) {
      // Right before `{`, each `$$` is one literal `$`, and an odd `$` left over
      // starts a placeholder: `$${` is `${`, `$$${inputs.price}` is `$` and the price.
      flush(i);
      add_literal(t, std::string(n / 2, '$'), i);
      i += n - n % 2;  // at the `{`, which is text, or at the `$` of a placeholder
      literal_start = i;
    } else if (text.compare(i, 3, "##E") == 0 && i + 3 < text.size() && is_ascii_digit(text[i + 3])) {
      flush(i);
      add_literal(t, "#E", i);
      i += 3;
      literal_start = i;
    } else if (text.compare(i, 2, "${") == 0) {
      std::size_t close = text.find('}', i + 2);
      if (close == std::string_view::npos)
        return fail(ErrorCode::InvalidInput, fmt::format("unterminated '${{': '{}' has no closing '}}'",
                                                         quote_for_message(text.substr(i), 40)));
      std::string_view source = text.substr(i, close + 1 - i);
      auto seg = parse_placeholder(text.substr(i + 2, close - i - 2), source);
      if (!seg) return std::unexpected(seg.error());
      flush(i);
      seg->offset = i;
      seg->source = std::string(source);
      t.segments.push_back(std::move(*seg));
      i = close + 1;
      literal_start = i;
    } else if (text.compare(i, 2, "#E") == 0 && i + 2 < text.size() && is_ascii_digit(text[i + 2])) {
      std::size_t end = i + 2;
      while (end < text.size() && is_ascii_digit(text[end])) ++end;
      int index = 0;
      auto [ptr, ec] = std::from_chars(text.data() + i + 2, text.data() + end, index);
      if (ec != std::errc() || ptr != text.data() + end)
        return fail(ErrorCode::InvalidInput,
                    fmt::format("step index in '{}' is too large", text.substr(i, end - i)));
      flush(i);
      Segment seg;
      seg.kind = Segment::Kind::IndexResult;
      seg.index = index;
      seg.offset = i;
      seg.source = std::string(text.substr(i, end - i));
      t.segments.push_back(std::move(seg));
      i = end;
      literal_start = i;
    } else if (text[i] == '$') {
      // A run of `$` not before `{` is text whole: stepping through it one `$`
      // at a time would scan the rest of the run again from each.
      while (i < text.size() && text[i] == '$') ++i;
    } else {
      ++i;
    }
  }
  flush(text.size());
  return t;
}

namespace {

// How deep arrays and objects nest in `text`, read as JSON (strings skipped),
// stopping once past `limit`. One linear pass: nlohmann's parser with a depth
// callback goes over each finished container again, which is quadratic on an
// array of many objects (a 2.6 MB result took 15 s).
int json_nesting(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

using Json = nlohmann::ordered_json;

// A number that is not a whole number within 64 bits (1.50, 1e2,
// 12345678901234567890123) is kept as the text the step wrote, in a binary
// node of this subtype: the double nlohmann makes of it would be written back
// as 1.5, 100.0 and 1.2345678901234568e+22. Whole numbers within 64 bits are
// exact as they are.
constexpr std::uint64_t kNumberText = 0x4e;

class ExactNumbers : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;
  explicit ExactNumbers(Json& doc) : Base(doc, true) {}
  bool number_float(Json::number_float_t /*value*/, const Json::string_t& text) {
    Json::binary_t kept(std::vector<std::uint8_t>(text.begin(), text.end()), kNumberText);
    return Base::binary(kept);
  }
};

std::optional<std::string_view> number_text(const Json& node) {
  if (!node.is_binary() || !node.get_binary().has_subtype() || node.get_binary().subtype() != kNumberText)
    return std::nullopt;
  const auto& bytes = node.get_binary();
  return std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

const char* type_name(const Json& node) {
  return number_text(node) ? "number" : node.type_name();
}

Expected<Json> parse_result(std::string_view json_text) {
  // A result nested deeper than a plan may be is refused before it is parsed:
  // writing such a value back out (the `${steps.ID.json}` of it) recurses once
  // per level and would overflow the stack.
  if (json_nesting(json_text, kMaxResultDepth) > kMaxResultDepth)
    return fail(ErrorCode::InvalidInput,
                fmt::format("the result nests deeper than {} levels", kMaxResultDepth));
  try {
    Json doc;
    ExactNumbers builder(doc);
    Json::sax_parse(json_text, &builder);
    return doc;
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::InvalidInput, fmt::format("the result is not JSON ({})", e.what()));
  }
}

// `node` written back out as JSON, each number as the step wrote it.
void write_exact(const Json& node, std::string& out) {
  const auto plain = [&out](const Json& n) {
    // Invalid UTF-8 in the result is kept byte for byte rather than failing the render.
    out += n.dump(-1, ' ', false, Json::error_handler_t::ignore);
  };
  if (const auto text = number_text(node)) {
    out += *text;
  } else if (node.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : node.items()) {
      if (!std::exchange(first, false)) out += ',';
      plain(Json(key));
      out += ':';
      write_exact(value, out);
    }
    out += '}';
  } else if (node.is_array()) {
    out += '[';
    bool first = true;
    for (const Json& value : node) {
      if (!std::exchange(first, false)) out += ',';
      write_exact(value, out);
    }
    out += ']';
  } else {
    plain(node);
  }
}

Expected<std::string> value_at(const Json& doc, const std::vector<std::string>& path) {
  const Json* node = &doc;
  std::string walked;
  for (const auto& key : path) {
    std::string where = walked.empty() ? "the top level" : fmt::format("'{}'", walked);
    if (node->is_object()) {
      auto it = node->find(key);
      if (it == node->end())
        return fail(ErrorCode::InvalidInput, fmt::format("no key '{}' at {}", key, where));
      node = &*it;
    } else if (node->is_array()) {
      std::size_t index = 0;
      auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
      if (ec != std::errc() || ptr != key.data() + key.size())
        return fail(ErrorCode::InvalidInput, fmt::format("'{}' is not an array index at {}", key, where));
      if (index >= node->size())
        return fail(ErrorCode::InvalidInput,
                    fmt::format("index {} is out of range at {} ({} items)", index, where, node->size()));
      node = &(*node)[index];
    } else {
      return fail(ErrorCode::InvalidInput,
                  fmt::format("cannot look up '{}' in {} (a {}, not an object or array)", key, where,
                              type_name(*node)));
    }
    walked += walked.empty() ? key : "." + key;
  }
  if (node->is_string()) return node->get<std::string>();
  std::string out;
  write_exact(*node, out);
  return out;
}

}  // namespace

struct ParsedResults {
  std::map<std::string, Expected<Json>> by_step;
};

std::shared_ptr<ParsedResults> new_parsed_results() {
  return std::make_shared<ParsedResults>();
}

Expected<std::string> json_path_value(std::string_view json_text, const std::vector<std::string>& path) {
  return value_at(ORCH_TRY(parse_result(json_text)), path);
}

Expected<std::string> render(const Template& tmpl, const RenderContext& ctx) {
  std::string out;
  auto missing = [](const Segment& seg, std::string_view why) {
    return fail(ErrorCode::InvalidInput, fmt::format("cannot render '{}': {}", seg.source, why));
  };
  for (const auto& seg : tmpl.segments) {
    switch (seg.kind) {
      case Segment::Kind::Literal:
        out += seg.text;
        break;
      case Segment::Kind::StepResult:
      case Segment::Kind::StepJson: {
        std::optional<std::string> result = ctx.step_result ? ctx.step_result(seg.text) : std::nullopt;
        if (!result) return missing(seg, fmt::format("step '{}' has no result", seg.text));
        if (seg.kind == Segment::Kind::StepResult) {
          out += *result;
          break;
        }
        Expected<std::string> value = std::unexpected(Error{});
        if (ctx.parsed) {
          auto [at, fresh] = ctx.parsed->by_step.try_emplace(seg.text, std::unexpected(Error{}));
          if (fresh) at->second = parse_result(*result);
          value = at->second ? value_at(*at->second, seg.json_path) : std::unexpected(at->second.error());
        } else {
          value = json_path_value(*result, seg.json_path);
        }
        if (!value) {
          const std::string note = ctx.result_note ? ctx.result_note(seg.text) : "";
          return missing(seg, note.empty() ? value.error().message : value.error().message + "; " + note);
        }
        out += *value;
        break;
      }
      case Segment::Kind::IndexResult: {
        std::optional<std::string> result = ctx.index_result ? ctx.index_result(seg.index) : std::nullopt;
        if (!result) return missing(seg, fmt::format("step #{} has no result", seg.index));
        out += *result;
        break;
      }
      case Segment::Kind::Input: {
        std::optional<std::string> value = ctx.input ? ctx.input(seg.text) : std::nullopt;
        if (!value) return missing(seg, fmt::format("no input '{}'", seg.text));
        out += *value;
        break;
      }
      case Segment::Kind::AttemptNumber:
        out += std::to_string(ctx.attempt_number);
        break;
      case Segment::Kind::PreviousFailure:
        out += ctx.previous_failure;
        break;
    }
  }
  return out;
}

}  // namespace orch
