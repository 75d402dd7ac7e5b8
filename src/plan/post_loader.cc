#include "plan/post_loader.h"

#include <fmt/format.h>

#include "util/strings.h"
#include "util/yaml_json.h"

namespace orch::detail {

namespace {

const std::vector<std::string>& kind_names() {
  static const std::vector<std::string> names{
      "none",        "exit_zero",   "result_nonempty", "result_contains", "result_matches",
      "result_json", "file_exists", "file_contains",   "shell_zero"};
  return names;
}

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names{"path",        "text", "pattern", "schema",
                                              "schema_path", "cmd",  "timeout"};
  return names;
}

std::optional<PostKind> read_kind(const ReadContext& ctx, const std::string& name, int line) {
  if (auto kind = parse_post_kind(name)) return kind;
  ctx.error(line, fmt::format("unknown postcondition kind '{}'{}", quote_for_message(name),
                              did_you_mean(name, kind_names())));
  return std::nullopt;
}

// The field a shorthand `- KIND: value` fills, or nullptr when the kind has none.
std::string Postcondition::*main_field(PostKind kind) {
  switch (kind) {
    case PostKind::ResultContains:
      return &Postcondition::text;
    case PostKind::ResultMatches:
      return &Postcondition::pattern;
    case PostKind::ResultJson:
      return &Postcondition::schema_path;
    case PostKind::FileExists:
      return &Postcondition::path;
    case PostKind::ShellZero:
      return &Postcondition::cmd;
    default:
      return nullptr;
  }
}

// `true`, `False`, `TRUE`, ...: a boolean as YAML 1.2 reads an unquoted scalar.
bool is_plain_boolean(const DocNode& node) {
  return node.is_scalar() && !node.quoted && plain_yaml_scalar(node.scalar).is_boolean();
}

// Fills `post` from the fields of `map` (every allowed key but `kind`, unless given).
void read_fields(const ReadContext& ctx, const DocNode& map, const std::vector<std::string>& allowed,
                 Postcondition& post, std::string* kind_out) {
  for_each_field(ctx, map, allowed, [&](const Field& f) {
    if (f.key == "kind") {
      if (auto v = read_string(ctx, f, "kind")) *kind_out = *v;
    } else if (f.key == "schema") {
      if (f.value.is_map() || is_plain_boolean(f.value)) {
        check_data_value(ctx, f.value);
        post.schema = yaml_to_json(f.value);
      } else {
        ctx.error(f.line, fmt::format("'schema' must be an inline JSON Schema (a mapping), got {}; use "
                                      "'schema_path' for a file",
                                      describe(f.value)));
      }
    } else if (f.key == "timeout") {
      post.timeout = read_duration(ctx, f, "timeout");
    } else {
      auto value = read_string(ctx, f, f.key);
      if (!value) return;
      if (f.key == "path") post.path = *value;
      if (f.key == "text") post.text = *value;
      if (f.key == "pattern") post.pattern = *value;
      if (f.key == "schema_path") post.schema_path = *value;
      if (f.key == "cmd") post.cmd = *value;
    }
  });
}

bool all_keys_are_fields(const DocNode& map) {
  for (const auto& [key, value] : map.entries) {
    const auto& names = field_names();
    if (!key.is_scalar() || std::find(names.begin(), names.end(), key.scalar) == names.end()) return false;
  }
  return true;
}

// `- KIND: value`
std::optional<Postcondition> read_shorthand(const ReadContext& ctx, PostKind kind, const DocNode& value,
                                            Postcondition post) {
  post.kind = kind;
  const char* name = post_kind_name(kind);
  if (value.is_null()) return post;
  // `result_json: {}` is the empty schema (any JSON), and `result_json: true` /
  // `false` the boolean ones, as JSON Schema has them; a string is a schema_path.
  if (kind == PostKind::ResultJson &&
      ((value.is_map() && (value.entries.empty() || !all_keys_are_fields(value))) ||
       is_plain_boolean(value))) {
    check_data_value(ctx, value);
    post.schema = yaml_to_json(value);
    return post;
  }
  if (value.is_map()) {
    std::size_t errors = ctx.out->size();
    std::string ignored_kind;
    read_fields(ctx, value, field_names(), post, &ignored_kind);
    if (ctx.out->size() != errors) return std::nullopt;
    return post;
  }
  auto field = main_field(kind);
  if (value.is_scalar() && field) {
    post.*field = value.scalar;
    return post;
  }
  if (kind == PostKind::FileContains)
    ctx.error(post.loc.line,
              "file_contains needs 'path' and 'text': write '- file_contains: {path: FILE, text: TEXT}'");
  else if (!field)
    ctx.error(post.loc.line, fmt::format("'{}' takes no value; write '- {}'", name, name));
  else
    ctx.error(post.loc.line, fmt::format("'{}' must be followed by a string, got {}", name, describe(value)));
  return std::nullopt;
}

}  // namespace

std::optional<Postcondition> read_postcondition(const ReadContext& ctx, const DocNode& node,
                                                int fallback_line) {
  Postcondition post;
  post.loc = ctx.loc(node.line ? node.line : fallback_line);
  int line = post.loc.line;
  if (node.is_scalar()) {
    auto kind = read_kind(ctx, node.scalar, line);
    if (!kind) return std::nullopt;
    post.kind = *kind;
    return post;
  }
  if (!node.is_map()) {
    ctx.error(line, fmt::format("a postcondition must be a kind such as 'exit_zero' or a mapping, got {}",
                                describe(node)));
    return std::nullopt;
  }
  bool has_kind_key = false;
  for (const auto& [key, value] : node.entries)
    if (key.is_scalar() && key.scalar == "kind") has_kind_key = true;
  if (!has_kind_key && node.entries.size() == 1) {
    const auto& [key_node, value] = node.entries.front();
    std::string key = key_node.is_scalar() ? key_node.scalar : "";
    auto kind = parse_post_kind(key);
    if (kind) return read_shorthand(ctx, *kind, value, std::move(post));
    // Neither a kind nor a field: most likely a misspelled kind ("- result_contain: x").
    auto all = kind_names();
    all.push_back("kind");
    if (std::find(field_names().begin(), field_names().end(), key) == field_names().end()) {
      ctx.error(line, fmt::format("unknown postcondition kind '{}'{}", quote_for_message(key),
                                  did_you_mean(key, all)));
      return std::nullopt;
    }
  }
  std::vector<std::string> allowed = field_names();
  allowed.insert(allowed.begin(), "kind");
  std::size_t errors = ctx.out->size();
  std::string kind_name;
  read_fields(ctx, node, allowed, post, &kind_name);
  if (!has_kind_key) {
    ctx.error(line, fmt::format("postcondition needs 'kind:' (one of {})", join(kind_names(), ", ")));
    return std::nullopt;
  }
  if (ctx.out->size() != errors) return std::nullopt;
  if (kind_name.empty()) {
    ctx.error(line, "postcondition 'kind' is empty");
    return std::nullopt;
  }
  auto kind = read_kind(ctx, kind_name, line);
  if (!kind) return std::nullopt;
  post.kind = *kind;
  return post;
}

std::vector<Postcondition> read_postconditions(const ReadContext& ctx, const Field& f) {
  std::vector<Postcondition> posts;
  if (f.value.is_sequence()) {
    for (const auto& item : f.value.items)
      if (auto post = read_postcondition(ctx, item, f.line)) posts.push_back(std::move(*post));
  } else if (f.value.is_null()) {
    ctx.error(f.line, "'post' must be a list of postconditions, got nothing");
  } else if (auto post = read_postcondition(ctx, f.value, f.line)) {
    posts.push_back(std::move(*post));
  }
  return posts;
}

}  // namespace orch::detail
