// validate_plan: every mechanical check of a plan, all problems reported at once.
//
// This file checks the plan as a whole: limits, ids, deps, cycles, executors and
// the run/sh shape of shell steps. Placeholders (validate_placeholders.cc) and
// postconditions and workspace paths (validate_post.cc) are checked per step.
// The plan may be partial (a loader that hit errors returns what it could read):
// nothing here assumes ids are unique, deps resolve or the graph is acyclic.
#include "orch/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <cmath>

#include "plan/validate_context.h"
#include "util/strings.h"

namespace orch {

namespace detail {

namespace {

}  // namespace

void ValidateContext::step_error(const Step& step, std::string_view field, std::string message,
                                 std::initializer_list<std::string_view> fallbacks) const {
  int line = step.field_lines.line(field);
  for (auto it = fallbacks.begin(); line == 0 && it != fallbacks.end(); ++it)
    line = step.field_lines.line(*it);
  step_error_at(step, line, std::move(message));
}

void ValidateContext::step_error_at(const Step& step, int line, std::string message) const {
  out.push_back(Diagnostic{file(), line ? line : step.loc.line, step.id, std::move(message)});
}

void ValidateContext::plan_error(std::string_view field, std::string message) const {
  int line = plan.field_lines.line(field);
  // A plan read from a file always has a top to point at.
  if (line == 0 && !file().empty()) line = 1;
  out.push_back(Diagnostic{file(), line, "", std::move(message)});
}

}  // namespace detail

namespace {

using detail::ValidateContext;

bool is_valid_id(std::string_view id) {
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (id.empty() || !alnum(id[0])) return false;
  return std::all_of(id.begin(), id.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '.' || c == '-'; });
}

constexpr std::size_t kMaxIdLength = 128;  // ids become parts of file names

// "result" or "json" when the id has it as a dot-separated part ("a.json", "x.result.b").
std::optional<std::string> placeholder_word_in_id(std::string_view id) {
  std::size_t start = 0;
  while (start <= id.size()) {
    std::size_t end = id.find('.', start);
    if (end == std::string_view::npos) end = id.size();
    std::string_view part = id.substr(start, end - start);
    if (part == "result" || part == "json") return std::string(part);
    start = end + 1;
  }
  return std::nullopt;
}

bool default_executor_known(const std::string& name) {
  return name == "shell" || name == "builtin:echo" || name == "builtin:json";
}

// Budget limits of the plan (prefix "budget") or of a step; `report(field, msg)`.
template <class Report>
void check_budget(const BudgetLimits& b, Report report) {
  if (b.tokens && *b.tokens < 0)
    report("budget.tokens", fmt::format("'budget.tokens' cannot be negative ({})", *b.tokens));
  if (b.cost_usd && (*b.cost_usd < 0 || !std::isfinite(*b.cost_usd)))
    report("budget.cost_usd",
           fmt::format("'budget.cost_usd' must be a number of dollars, 0 or more ({})", *b.cost_usd));
  if (b.attempts && *b.attempts < 1)
    report("budget.attempts", fmt::format("'budget.attempts' must be at least 1, got {}", *b.attempts));
}

void check_plan_limits(const ValidateContext& ctx) {
  const Plan& plan = ctx.plan;
  if (plan.steps.empty()) ctx.plan_error("steps", "plan has no steps");
  if (plan.concurrency && *plan.concurrency < 1)
    ctx.plan_error("concurrency", fmt::format("'concurrency' must be at least 1, got {}", *plan.concurrency));
  check_budget(plan.budget,
               [&](std::string_view field, std::string msg) { ctx.plan_error(field, std::move(msg)); });
  const PlanDefaults& d = plan.defaults;
  if (d.attempts < 1)
    ctx.plan_error("defaults.attempts",
                   fmt::format("'defaults.attempts' must be at least 1, got {}", d.attempts));
  if (d.timeout && d.timeout->count() <= 0)
    ctx.plan_error("defaults.timeout",
                   "'defaults.timeout' must be more than 0 (leave it out for no timeout)");
  if (d.retry_delay.count() < 0)
    ctx.plan_error("defaults.retry_delay", "'defaults.retry_delay' cannot be negative");
  if (d.kill_grace.count() < 0)
    ctx.plan_error("defaults.kill_grace", "'defaults.kill_grace' cannot be negative");
  if (d.max_output < 1)
    ctx.plan_error("defaults.max_output",
                   fmt::format("'defaults.max_output' must be at least 1 byte, got {}", d.max_output));
}

void check_ids(const ValidateContext& ctx) {
  for (const Step& step : ctx.plan.steps) {
    if (step.id.empty()) {
      ctx.step_error(step, "id", fmt::format("the step at index {} has no 'id'", ctx.position(step)));
      continue;
    }
    if (!is_valid_id(step.id))
      ctx.step_error(
          step, "id",
          fmt::format("invalid step id '{}': use letters, digits, '_', '.' and '-', starting with a letter "
                      "or digit (ids become file names)",
                      quote_for_message(step.id)));
    else if (step.id.size() > kMaxIdLength)
      ctx.step_error(step, "id", fmt::format("step id is longer than {} characters", kMaxIdLength));
    else if (step.id.ends_with('.') || step.id.find("..") != std::string::npos)
      ctx.step_error(step, "id",
                     fmt::format("step id '{}' has an empty part between dots (a '.' at its end, or "
                                 "'..'): a placeholder could not name it; rename it",
                                 step.id));
    else if (auto part = placeholder_word_in_id(step.id))
      ctx.step_error(step, "id",
                     fmt::format("step id '{}' has a part '{}': a placeholder could not name it (in "
                                 "${{steps.ID.{}...}} the first '.{}' ends the id); rename it",
                                 step.id, *part, *part, *part));
    // The graph maps each id to its first step.
    auto first = ctx.graph.index_of(step.id);
    if (first && *first != ctx.position(step)) {
      const Step& earlier = ctx.plan.steps[static_cast<std::size_t>(*first)];
      int line = earlier.field_lines.contains("id") ? earlier.field_lines.line("id") : earlier.loc.line;
      if (line && step.field_lines.contains("id") && step.field_lines.line("id") == line &&
          step.loc.line != line) {
        // Its id is the earlier step's own text: a YAML alias copied that step whole.
        ctx.step_error_at(step, step.loc.line,
                          fmt::format("duplicate step id '{}': this step is a YAML alias of the step at line "
                                      "{}, id and all; give each step its own id (a merge key, "
                                      "`<<: *anchor`, copies the rest and lets it write its own)",
                                      quote_for_message(step.id), line));
      } else {
        ctx.step_error(
            step, "id",
            line ? fmt::format("duplicate step id '{}' (first defined at line {})",
                               quote_for_message(step.id), line)
                 : fmt::format("duplicate step id '{}' (also step #{})", quote_for_message(step.id), *first));
      }
    }
  }
}

void check_deps(const ValidateContext& ctx) {
  // Every id, for "did you mean": gathered at the first unknown dep only (a copy of
  // 100,000 ids was 3.2 MB at the peak of validating a plan with none).
  std::vector<std::string> ids;
  auto all_ids = [&]() -> const std::vector<std::string>& {
    if (ids.empty()) {
      ids.reserve(ctx.plan.steps.size());
      for (const Step& s : ctx.plan.steps) ids.push_back(s.id);
    }
    return ids;
  };
  for (const Step& step : ctx.plan.steps) {
    for (std::size_t i = 0; i < step.deps.size(); ++i) {
      const std::string& dep = step.deps[i];
      std::string field = fmt::format("deps.{}", i);
      if (dep == step.id && !dep.empty()) {
        ctx.step_error(step, field, "depends on itself", {"deps"});
      } else if (!ctx.graph.index_of(dep)) {
        // A StepSpec names its deps by position ("s3" is the index 3 it wrote).
        const std::size_t count = ctx.plan.steps.size();
        ctx.step_error(
            step, field,
            ctx.plan.from_stepspec
                ? fmt::format("depends on step index {}, but the list has {} step{} (indices 0 to {})",
                              dep.substr(1), count, count == 1 ? "" : "s", count - 1)
                : fmt::format("depends on unknown step '{}'{}", quote_for_message(dep),
                              did_you_mean(dep, all_ids())),
            {"deps"});
      } else if (auto at = ctx.graph.index_of(dep); ctx.plan.from_stepspec && *at > step.index) {
        // Seed 002: "every dependency points strictly backward", which is what
        // makes a StepSpec list acyclic by construction.
        ctx.step_error(step, field,
                       fmt::format("depends on step index {}, which is not an earlier step (this is step "
                                   "#{}): a StepSpec's deps point strictly backward",
                                   *at, step.index),
                       {"deps"});
      }
    }
  }
}

void check_cycles(const ValidateContext& ctx) {
  for (const auto& cycle : ctx.graph.cycles()) {
    std::vector<std::string> names;
    for (int i : cycle) names.push_back(ctx.plan.steps[static_cast<std::size_t>(i)].id);
    names.push_back(names.front());
    const Step& first = ctx.plan.steps[static_cast<std::size_t>(cycle.front())];
    ctx.step_error(first, "deps",
                   fmt::format("dependency cycle: {} (each step depends on the next)", join(names, " -> ")));
  }
}

bool is_set_by_orch(const std::string& name) {
  static const char* const kNames[] = {"ORCH_RUN_ID",           "ORCH_STEP_ID",    "ORCH_ATTEMPT",
                                       "ORCH_PREVIOUS_FAILURE", "ORCH_USAGE_FILE", "ORCH_WORKSPACE",
                                       "ORCH_RESULT",           "ORCH_RESULT_FILE"};
  for (const char* n : kNames)
    if (name == n) return true;
  if (name.starts_with("ORCH_IN_")) return true;
  // ORCH_P0, ORCH_P1, ...: a placeholder's value in an `sh` script.
  return name.size() > 6 && name.starts_with("ORCH_P") &&
         std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void check_step_limits(const ValidateContext& ctx, const Step& step) {
  if (step.attempts && *step.attempts < 1)
    ctx.step_error(step, "attempts", fmt::format("'attempts' must be at least 1, got {}", *step.attempts));
  if (step.timeout && step.timeout->count() <= 0)
    ctx.step_error(step, "timeout", "'timeout' must be more than 0 (leave it out for no timeout)");
  if (step.retry_delay && step.retry_delay->count() < 0)
    ctx.step_error(step, "retry_delay", "'retry_delay' cannot be negative");
  if (step.max_output && *step.max_output < 1)
    ctx.step_error(step, "max_output",
                   fmt::format("'max_output' must be at least 1 byte, got {}", *step.max_output));
  check_budget(step.budget, [&](std::string_view field, std::string msg) {
    ctx.step_error(step, field, std::move(msg), {"budget"});
  });
  for (std::size_t i = 0; i < step.runs_on.size(); ++i) {
    // A label is matched as it is written against `orch worker --labels a,b`:
    // one that could not be written there would match no worker, for ever.
    const std::string& label = step.runs_on[i];
    const bool ok = !label.empty() && label.size() <= 64 &&
                    label.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
                        std::string::npos;
    if (!ok)
      ctx.step_error(step, fmt::format("runs-on.{}", i),
                     fmt::format("'runs-on': label '{}' is not valid: use 1 to 64 letters, digits, '_', '.' or "
                                 "'-' (as `orch worker --labels` takes them)",
                                 quote_for_message(label)),
                     {"runs-on"});
  }
  for (auto it = step.inputs.begin(); it != step.inputs.end(); ++it)
    if (!is_identifier(it.key()))
      ctx.step_error(
          step, "inputs." + it.key(),
          fmt::format("input name '{}' is not valid: use letters, digits and '_', not starting with a digit "
                      "(it is exported as ORCH_IN_{})",
                      quote_for_message(it.key()), quote_for_message(it.key())),
          {"inputs"});
  for (const auto& [name, value] : step.env) {
    if (!is_identifier(name)) {
      ctx.step_error(
          step, "env." + name,
          fmt::format("environment variable name '{}' is not valid: use letters, digits and '_', not "
                      "starting with a digit",
                      quote_for_message(name)),
          {"env"});
    } else if (is_set_by_orch(name)) {
      // orch sets these for every attempt; a step's own value would either be
      // overridden without a word or, for ORCH_P<n>, replace a placeholder's value.
      ctx.step_error(
          step, "env." + name,
          fmt::format("environment variable '{}' is set by orch for every attempt; use another name", name),
          {"env"});
    }
  }
}

void check_executor(const ValidateContext& ctx, const Step& step) {
  bool known = ctx.options.executor_known ? ctx.options.executor_known(step.executor)
                                          : default_executor_known(step.executor);
  if (!known) {
    ctx.step_error(step, "executor",
                   fmt::format("unknown executor '{}'{}", quote_for_message(step.executor),
                               did_you_mean(step.executor, {"shell", "builtin:echo", "builtin:json"})));
    return;
  }
  bool has_run = step.field_lines.contains("run") || !step.run.empty();
  if (step.executor == "shell") {
    // A field the loader could not read has its error already.
    if (step.command_unread) return;
    if (has_run && step.sh) {
      ctx.step_error(step, "sh", "has both 'run' and 'sh': give one");
    } else if (!has_run && !step.sh) {
      ctx.step_error(step, "id",
                     ctx.plan.from_stepspec
                         ? "a shell step needs its command in inputs.cmd"
                         : "a shell step needs 'run' (an argv list) or 'sh' (a script for /bin/sh -c)");
    } else if (has_run && step.run.empty()) {
      ctx.step_error(step, "run", "'run' is empty: it needs at least the program to run");
    } else if (has_run && step.run[0].empty()) {
      ctx.step_error(step, "run.0", "'run' starts with an empty program name", {"run"});
    } else if (step.sh && trim(*step.sh).empty()) {
      ctx.step_error(step, "sh", "'sh' is empty");
    }
    return;
  }
  if (has_run)
    ctx.step_error(
        step, "run",
        fmt::format("'run' is only for shell steps (this step's executor is '{}')", step.executor));
  if (step.sh)
    ctx.step_error(step, "sh",
                   fmt::format("'sh' is only for shell steps (this step's executor is '{}')", step.executor));
}

// Diagnostics added by an executor's own check get the step's file, line and id.
void run_executor_check(const ValidateContext& ctx, const Step& step) {
  std::size_t before = ctx.out.size();
  ctx.options.executor_check(step, ctx.out);
  for (std::size_t i = before; i < ctx.out.size(); ++i) {
    Diagnostic& d = ctx.out[i];
    if (d.file.empty()) d.file = ctx.file();
    if (d.line == 0) d.line = step.loc.line;
    if (d.step_id.empty()) d.step_id = step.id;
  }
}

}  // namespace

Diagnostics validate_plan(const Plan& plan, const ValidateOptions& options) {
  Diagnostics out;
  detail::StepGraph graph(plan);
  detail::AncestorQuery ancestors(graph);
  std::filesystem::path plan_dir = options.plan_dir;
  if (plan_dir.empty()) plan_dir = std::filesystem::path(plan.source_path).parent_path();
  if (plan_dir.empty()) plan_dir = ".";
  ValidateContext ctx{plan, options, graph, ancestors, plan_dir, out};

  check_plan_limits(ctx);
  check_ids(ctx);
  check_deps(ctx);
  check_cycles(ctx);
  for (const Step& step : plan.steps) {
    check_step_limits(ctx, step);
    check_executor(ctx, step);
    detail::check_placeholders(ctx, step);
    detail::check_condition(ctx, step);
    detail::check_postconditions(ctx, step);
    detail::check_step_paths(ctx, step);
    detail::check_nul_bytes(ctx, step);
    if (options.executor_check) run_executor_check(ctx, step);
  }
  // In file order, so a person can work down the list (plan-level lines first when equal).
  std::stable_sort(out.begin(), out.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  return out;
}

Diagnostic step_diagnostic(const Step& step, std::initializer_list<std::string_view> fields, std::string message) {
  Diagnostic d;
  d.file = step.loc.file;
  d.line = step.loc.line;
  for (std::string_view field : fields) {
    if (int line = step.field_lines.line(field); line > 0) {
      d.line = line;
      break;
    }
  }
  d.step_id = step.id;
  d.message = std::move(message);
  return d;
}

Diagnostics plan_problems(const LoadResult& loaded, const ValidateOptions& options) {
  Diagnostics problems = loaded.diagnostics;
  if (problems.empty() || loaded.checkable) {
    Diagnostics semantic = validate_plan(loaded.plan, options);
    problems.insert(problems.end(), std::make_move_iterator(semantic.begin()),
                    std::make_move_iterator(semantic.end()));
  }
  std::stable_sort(problems.begin(), problems.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
  // Said once: a YAML alias copies its anchor's text, and with it the problems in it
  // (a bad value in a step copied whole is the same line, step and message twice).
  Diagnostics unique;
  unique.reserve(problems.size());
  for (Diagnostic& d : problems) {
    bool said = false;
    for (auto u = unique.rbegin(); u != unique.rend() && u->line == d.line && !said; ++u)
      said = u->file == d.file && u->step_id == d.step_id && u->message == d.message;
    if (!said) unique.push_back(std::move(d));
  }
  return unique;
}

}  // namespace orch
