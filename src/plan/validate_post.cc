// Postconditions and workspace paths of one step.
//
// A postcondition must be one orch can evaluate: its kind's fields are given (and
// no fields it would ignore), its regex compiles, its schema is a JSON Schema. Paths
// a step names (post file paths, writes, output) must stay inside the workspace
// after `..` and symlinks are resolved; that is checked here against the
// workspace as it is now, and again at run time by whoever opens the file.
#include <fmt/format.h>

#include <array>
#include <optional>

#include "orch/placeholder.h"
#include "orch/workspace.h"
#include "plan/validate_context.h"
#include "util/json_schema.h"
#include "util/regex.h"
#include "util/strings.h"

namespace orch::detail {

namespace {

// Which fields each kind reads. Anything else written on it is a mistake.
struct KindFields {
  bool path = false, text = false, pattern = false, schema = false, cmd = false;
};

KindFields fields_of(PostKind kind) {
  switch (kind) {
    case PostKind::ResultContains:
      return {.text = true};
    case PostKind::ResultMatches:
      return {.pattern = true};
    case PostKind::ResultJson:
      return {.schema = true};
    case PostKind::FileExists:
      return {.path = true};
    case PostKind::FileContains:
      return {.path = true, .text = true};
    case PostKind::ShellZero:
      return {.cmd = true};
    default:
      return {};
  }
}

std::string uses(const KindFields& f) {
  std::vector<std::string> names;
  if (f.path) names.push_back("path");
  if (f.text) names.push_back("text");
  if (f.pattern) names.push_back("pattern");
  if (f.schema) names.push_back("schema or schema_path");
  if (f.cmd) names.push_back("cmd, timeout");
  return names.empty() ? "it takes no fields" : "it uses " + join(names, ", ");
}

// The first `${...}` placeholder written in a postcondition's field, if any: the
// field is used as written, so it would be looked for (or run) literally.
std::optional<std::string> placeholder_in(const std::string& text) {
  if (text.find("${") == std::string::npos) return std::nullopt;
  auto tmpl = parse_template(text);
  if (!tmpl) return std::nullopt;  // `${HOME}` and the like: shell or regex text, not a placeholder
  for (const Segment& seg : tmpl->segments)
    if (seg.kind != Segment::Kind::Literal && seg.kind != Segment::Kind::IndexResult) return seg.source;
  return std::nullopt;
}

class PostChecker {
 public:
  PostChecker(const ValidateContext& ctx, const Step& step, const Postcondition& post)
      : ctx_(ctx), step_(step), post_(post), name_(post_kind_name(post.kind)) {}

  void check() {
    KindFields f = fields_of(post_.kind);
    unused("path", !post_.path.empty(), f.path);
    unused("text", !post_.text.empty(), f.text);
    unused("pattern", !post_.pattern.empty(), f.pattern);
    unused("schema", post_.schema.has_value(), f.schema);
    unused("schema_path", !post_.schema_path.empty(), f.schema);
    unused("cmd", !post_.cmd.empty(), f.cmd);
    unused("timeout", post_.timeout.has_value(), f.cmd);
    if (f.path) check_path();
    if (f.text && post_.text.empty()) error(fmt::format("postcondition {} needs 'text'", name_));
    if (f.pattern) check_pattern();
    if (f.schema) check_schema();
    if (f.cmd && trim(post_.cmd).empty()) error(fmt::format("postcondition {} needs 'cmd'", name_));
    if (post_.timeout && post_.timeout->count() <= 0)
      error(fmt::format("postcondition {}: 'timeout' must be more than 0", name_));
    not_a_template("path", post_.path);
    not_a_template("text", post_.text);
    not_a_template("pattern", post_.pattern);
    not_a_template("cmd", post_.cmd);
  }

 private:
  void error(std::string message) { ctx_.step_error_at(step_, post_.loc.line, std::move(message)); }

  void unused(const char* field, bool given, bool used) {
    if (given && !used)
      error(
          fmt::format("postcondition {} does not use '{}' ({})", name_, field, uses(fields_of(post_.kind))));
  }

  // Postcondition fields are not templates: a placeholder in one would reach the
  // check as its literal text, and the check would fail (or hold) for that.
  void not_a_template(const char* field, const std::string& text) {
    auto placeholder = placeholder_in(text);
    if (!placeholder) return;
    const char* instead =
        post_.kind == PostKind::ShellZero
            ? "the command gets the step's result in $ORCH_RESULT and in the file $ORCH_RESULT_FILE"
            : "check a value a step produced with shell_zero, which gets the result in $ORCH_RESULT and in "
              "the file $ORCH_RESULT_FILE";
    error(
        fmt::format("postcondition {}: '{}' holds the placeholder '{}', but postcondition fields are used as "
                    "written, not filled in; {}",
                    name_, field, *placeholder, instead));
  }

  void check_path() {
    if (post_.path.empty()) {
      error(fmt::format("postcondition {} needs 'path'", name_));
      return;
    }
    if (placeholder_in(post_.path)) return;  // said by not_a_template
    auto resolved = resolve_in_workspace(ctx_.options.workspace, post_.path);
    if (!resolved) error(fmt::format("postcondition {}: {}", name_, resolved.error().message));
  }

  void check_pattern() {
    if (post_.pattern.empty()) {
      error(fmt::format("postcondition {} needs 'pattern'", name_));
      return;
    }
    auto re = Regex::compile(post_.pattern);
    if (!re) error(fmt::format("postcondition {}: {}", name_, re.error().message));
  }

  void check_schema() {
    if (post_.schema && !post_.schema_path.empty()) {
      error(fmt::format("postcondition {} has both 'schema' and 'schema_path': give one", name_));
      return;
    }
    if (post_.schema) {
      auto schema = JsonSchema::parse(*post_.schema);
      if (!schema) error(fmt::format("postcondition {}: inline 'schema': {}", name_, schema.error().message));
      return;
    }
    if (post_.schema_path.empty()) {
      error(fmt::format("postcondition {} needs 'schema' (inline) or 'schema_path' (a file)", name_));
      return;
    }
    std::filesystem::path path = post_.schema_path;
    if (path.is_relative()) path = ctx_.plan_dir / path;
    auto schema = JsonSchema::load_file(path.string());
    if (!schema)
      error(fmt::format("postcondition {}: cannot use schema_path '{}': {}", name_, post_.schema_path,
                        schema.error().message));
  }

  const ValidateContext& ctx_;
  const Step& step_;
  const Postcondition& post_;
  std::string name_;
};

}  // namespace

void check_postconditions(const ValidateContext& ctx, const Step& step) {
  for (const Postcondition& post : step.post) PostChecker(ctx, step, post).check();
}

void check_step_paths(const ValidateContext& ctx, const Step& step) {
  auto check = [&](const std::string& path, const std::string& field, const char* what) {
    // Paths are used as written: a placeholder would name a file called "${...}".
    if (auto placeholder = placeholder_in(path)) {
      ctx.step_error(
          step, field,
          fmt::format("'{}': '{}' holds the placeholder '{}', but {} paths are used as written, not "
                      "filled in; name the file itself",
                      what, quote_for_message(path), *placeholder, what),
          {what});
      return;
    }
    auto resolved = resolve_in_workspace(ctx.options.workspace, path);
    if (!resolved)
      ctx.step_error(step, field, fmt::format("'{}': {}", what, resolved.error().message), {what});
  };
  for (std::size_t i = 0; i < step.writes.size(); ++i) {
    // `writes` names files and folders; a pattern would protect nothing, silently.
    // ('[' is left alone: routes such as app/[id]/page.tsx are real names.)
    if (step.writes[i].find_first_of("*?") != std::string::npos) {
      ctx.step_error(
          step, fmt::format("writes.{}", i),
          fmt::format("'writes': '{}' looks like a pattern; writes takes paths of files and folders (a "
                      "folder covers everything in it)",
                      quote_for_message(step.writes[i])),
          {"writes"});
      continue;
    }
    check(step.writes[i], fmt::format("writes.{}", i), "writes");
  }
  if (step.output) check(*step.output, "output", "output");
}

void check_nul_bytes(const ValidateContext& ctx, const Step& step) {
  // What becomes a process argument, an environment variable or a path ends at
  // its first NUL: the rest would be dropped without a word.
  auto check = [&](const std::string& text, const std::string& field, const char* key) {
    if (text.find('\0') != std::string::npos)
      ctx.step_error(
          step, field,
          fmt::format("'{}' holds a NUL byte (\\0), which no argument, environment variable or path can "
                      "carry",
                      field),
          {key});
  };
  for (std::size_t i = 0; i < step.run.size(); ++i) check(step.run[i], fmt::format("run[{}]", i), "run");
  if (step.sh) check(*step.sh, "sh", "sh");
  for (const auto& [name, value] : step.env) check(value, "env." + name, "env");
  for (std::size_t i = 0; i < step.writes.size(); ++i)
    check(step.writes[i], fmt::format("writes[{}]", i), "writes");
  if (step.output) check(*step.output, "output", "output");
  for (std::size_t i = 0; i < step.post.size(); ++i) {
    const Postcondition& p = step.post[i];
    check(p.path, fmt::format("post[{}].path", i), "post");
    check(p.cmd, fmt::format("post[{}].cmd", i), "post");
    check(p.schema_path, fmt::format("post[{}].schema_path", i), "post");
  }
}

}  // namespace orch::detail
