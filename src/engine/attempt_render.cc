#include "engine/attempt_render.h"

#include <fmt/format.h>

#include "orch/placeholder.h"
#include "util/json_text.h"
#include "util/read_file.h"

namespace orch {

namespace {

using ojson = nlohmann::ordered_json;

std::string value_text(const ojson& v) {
  return v.is_string() ? v.get<std::string>() : json_text(v);
}

RenderContext make_context(const ResultLookup& results, const ojson* inputs, int attempt,
                           const std::string& previous_failure) {
  RenderContext ctx;
  ctx.step_result = results.by_id;
  ctx.index_result = results.by_index;
  ctx.result_note = results.note;
  ctx.input = [inputs](const std::string& name) -> std::optional<std::string> {
    if (inputs == nullptr || !inputs->contains(name)) return std::nullopt;
    return value_text((*inputs)[name]);
  };
  ctx.attempt_number = attempt;
  ctx.previous_failure = previous_failure;
  return ctx;
}

Expected<std::string> render_text(const std::string& text, const RenderContext& ctx, const std::string& where) {
  auto tmpl = parse_template(text);
  if (!tmpl) return fail(tmpl.error().code, fmt::format("{}: {}", where, tmpl.error().message));
  auto out = render(*tmpl, ctx);
  if (!out) return fail(out.error().code, fmt::format("{}: {}", where, out.error().message));
  return *out;
}

// Renders the string leaves of an inputs value.
Expected<ojson> render_inputs(const ojson& value, const RenderContext& ctx, const std::string& where) {
  if (value.is_string()) return ojson(ORCH_TRY(render_text(value.get<std::string>(), ctx, where)));
  if (value.is_object()) {
    ojson out = ojson::object();
    for (auto it = value.begin(); it != value.end(); ++it)
      out[it.key()] = ORCH_TRY(render_inputs(it.value(), ctx, where + "." + it.key()));
    return out;
  }
  if (value.is_array()) {
    ojson out = ojson::array();
    for (std::size_t i = 0; i < value.size(); ++i)
      out.push_back(ORCH_TRY(render_inputs(value[i], ctx, fmt::format("{}[{}]", where, i))));
    return out;
  }
  return value;
}

// Rewrites an sh script so every placeholder is a shell variable reference.
Expected<std::string> render_script(const std::string& script, const RenderContext& ctx,
                                    std::vector<std::pair<std::string, std::string>>& env) {
  auto tmpl = parse_template(script);
  if (!tmpl) return fail(tmpl.error().code, fmt::format("sh: {}", tmpl.error().message));
  std::string out;
  int next_var = 0;
  // A literal `$` right before a placeholder (`$$${inputs.price}`) would read,
  // with the `${VAR}` it becomes, as the shell's `$$`: it is escaped for the shell.
  auto reference = [&out](const std::string& var) {
    if (!out.empty() && out.back() == '$' && !(out.size() >= 2 && out[out.size() - 2] == '\\'))
      out.insert(out.size() - 1, 1, '\\');
    out += "${" + var + "}";
  };
  for (const Segment& seg : tmpl->segments) {
    switch (seg.kind) {
      case Segment::Kind::Literal: out += seg.text; break;
      case Segment::Kind::Input:
        reference("ORCH_IN_" + seg.text);
        break;
      case Segment::Kind::AttemptNumber:
        reference("ORCH_ATTEMPT");
        break;
      case Segment::Kind::PreviousFailure:
        reference("ORCH_PREVIOUS_FAILURE");
        break;
      default: {
        Template one;
        one.segments.push_back(seg);
        auto value = render(one, ctx);
        if (!value) return fail(value.error().code, fmt::format("sh: {}", value.error().message));
        std::string var = fmt::format("ORCH_P{}", next_var++);
        env.emplace_back(var, *value);
        reference(var);
      }
    }
  }
  return out;
}

}  // namespace

std::string fingerprint_of(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;  // the FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

Expected<RenderedStep> render_step(const Step& step, const ResultLookup& results, int attempt,
                                   const std::string& previous_failure) {
  RenderedStep out;
  // Inputs are rendered first, without access to inputs (they cannot refer to each other).
  RenderContext input_ctx = make_context(results, nullptr, attempt, previous_failure);
  input_ctx.parsed = new_parsed_results();
  out.inputs = ORCH_TRY(render_inputs(step.inputs, input_ctx, "inputs"));
  RenderContext ctx = make_context(results, &out.inputs, attempt, previous_failure);
  ctx.parsed = input_ctx.parsed;

  for (std::size_t i = 0; i < step.run.size(); ++i)
    out.argv.push_back(ORCH_TRY(render_text(step.run[i], ctx, fmt::format("run[{}]", i))));
  if (step.sh) {
    std::string script = ORCH_TRY(render_script(*step.sh, ctx, out.env));
    out.argv = {"/bin/sh", "-c", script};
  }
  for (const auto& [name, value] : step.env) out.env.emplace_back(name, ORCH_TRY(render_text(value, ctx, "env." + name)));
  for (auto it = out.inputs.begin(); it != out.inputs.end(); ++it)
    out.env.emplace_back("ORCH_IN_" + it.key(), value_text(it.value()));

  return out;
}

namespace {

// One postcondition as the fingerprint sees it. A shell_zero timeout is there only
// when given and not the default, so that writing out a default (`timeout: 60s`)
// changes nothing, and steps without one keep the fingerprints they had.
ojson post_for_fingerprint(const Postcondition& p, const std::filesystem::path& plan_dir) {
  ojson j = {{"kind", post_kind_name(p.kind)}, {"path", p.path}, {"text", p.text}, {"pattern", p.pattern},
             {"schema_path", p.schema_path},   {"cmd", p.cmd}};
  if (p.schema) j["schema"] = *p.schema;
  if (p.timeout && !(p.kind == PostKind::ShellZero && *p.timeout == kShellZeroTimeout))
    j["timeout_ms"] = p.timeout->count();
  if (!p.schema_path.empty()) {
    const std::filesystem::path file = plan_dir / p.schema_path;  // an absolute one stays as it is
    auto text = read_file_text(file);                             // capped; a named pipe never waited on
    j["schema_file"] = text ? fingerprint_of(*text) : std::string("unreadable");
  }
  return j;
}

}  // namespace

Expected<std::string> step_fingerprint(const Step& step, const ResultLookup& results,
                                       const std::filesystem::path& plan_dir,
                                       const std::vector<Postcondition>& default_post) {
  // Rendered as attempt 0 with no previous failure: the fingerprint covers what the
  // step would do, not which attempt does it.
  RenderedStep r = ORCH_TRY(render_step(step, results, 0, ""));
  ojson fp = ojson::object();
  fp["executor"] = step.executor;
  fp["argv"] = r.argv;
  fp["env"] = r.env;
  fp["inputs"] = r.inputs;
  ojson post = ojson::array();
  for (const auto& p : step.post) post.push_back(post_for_fingerprint(p, plan_dir));
  // The executor's default written out (`post: exit_zero` on a shell step) is the
  // step without `post:`: the same fingerprint, as before.
  if (!post.empty() && post.size() == default_post.size()) {
    ojson defaults = ojson::array();
    for (const auto& p : default_post) defaults.push_back(post_for_fingerprint(p, plan_dir));
    if (post == defaults) post = ojson::array();
  }
  fp["post"] = post;
  fp["writes"] = step.writes;
  fp["output"] = step.output.value_or("");
  return fingerprint_of(json_text(fp));
}

}  // namespace orch
