#include "plan/stepspec.h"

#include <fmt/format.h>

#include "plan/post_loader.h"
#include "util/strings.h"

namespace orch::detail {

namespace {

const std::vector<std::string> kStepSpecKeys{"goal", "deps", "inputs", "executor", "postcondition", "idx"};

void read_deps(const ReadContext& ctx, const Field& f, Step& step) {
  if (f.value.is_null()) return;
  if (!f.value.is_sequence()) {
    ctx.error(f.line, fmt::format("'deps' must be a list of step indices, got {}", describe(f.value)));
    return;
  }
  for (const auto& item : f.value.items) {
    int line = item.line ? item.line : f.line;
    Field dep{"deps", line, item};
    std::size_t errors = ctx.out->size();
    auto index = read_int(ctx, dep, "deps");
    if (!index) continue;
    if (*index < 0) {
      ctx.error(line, fmt::format("'deps' must hold step indices (0 or more), got {}", *index));
      continue;
    }
    if (ctx.out->size() != errors) continue;
    if (line != f.line) step.field_lines.set(fmt::format("deps.{}", step.deps.size()), line);
    step.deps.push_back(fmt::format("s{}", *index));
  }
}

// StepSpec inputs are strings (Go's map[string]string); other scalars are taken as written.
void read_stepspec_inputs(const ReadContext& ctx, const Field& f, Step& step) {
  if (f.value.is_null()) return;
  if (!f.value.is_map()) {
    ctx.error(f.line, fmt::format("'inputs' must be a mapping of strings, got {}", describe(f.value)));
    return;
  }
  for (const auto& [key_node, value] : f.value.entries) {
    int line = key_node.line;
    if (!key_node.is_scalar()) {
      ctx.error(line, fmt::format("input names must be strings, got {}", describe(key_node)));
      continue;
    }
    const std::string& name = key_node.scalar;
    if (step.inputs.contains(name)) {
      ctx.error(line, fmt::format("duplicate input '{}' (first at line {})", name,
                                  step.field_lines.line("inputs." + name)));
      continue;
    }
    if (!value.is_scalar() && !value.is_null()) {
      ctx.error(line, fmt::format("input '{}' must be a string, got {}", name, describe(value)));
      continue;
    }
    step.inputs[name] = value.is_null() ? std::string() : value.scalar;
    step.field_lines.set("inputs." + name, line);
  }
}

// Go's zero Postcondition ({} or {"kind": ""}) means "no check": the step gets its
// executor's default (exit_zero for shell) rather than an always-passing `none`.
void read_post(const ReadContext& ctx, const Field& f, Step& step) {
  if (f.value.is_null()) return;
  if (f.value.is_map()) {
    bool has_fields = false;
    bool kind_empty = true;
    for (const auto& [key_node, value] : f.value.entries) {
      std::string key = key_node.is_scalar() ? key_node.scalar : "";
      bool empty_value = value.is_null() || (value.is_scalar() && value.scalar.empty());
      if (key == "kind")
        kind_empty = empty_value;
      else if (!empty_value)
        has_fields = true;
    }
    if (kind_empty && !has_fields) return;
    if (kind_empty) {
      ctx.error(f.line, "'postcondition' has fields but no 'kind'");
      return;
    }
  }
  if (auto post = read_postcondition(ctx, f.value, f.line)) step.post.push_back(std::move(*post));
}

}  // namespace

void read_stepspec_step(ReadContext& ctx, const DocNode& node, Step& step) {
  int index = step.index;
  step.id = fmt::format("s{}", index);
  step.executor = "shell";
  int line = node.line;
  step.loc = ctx.loc(line);
  ctx.step_id = step.id;
  if (!node.is_map()) {
    ctx.error(line, fmt::format("each StepSpec must be a mapping with 'goal', got {}", describe(node)));
    return;
  }
  // `- {id: a, run: [...]}` at the top: an orch plan that forgot `steps:`, not
  // the seed's StepSpec list (which has no ids). Said once, plainly, instead of
  // "unknown key 'id'" for every step.
  for (const auto& [key, value] : node.entries) {
    if (!key.is_scalar() || key.scalar != "id") continue;
    if (!ctx.said_orch_steps_in_a_list) {
      ctx.said_orch_steps_in_a_list = true;
      ctx.error(line,
                "this list of steps has ids, so it is an orch plan without 'steps:': put 'steps:' above it "
                "(a list at the top is read as the seed's StepSpec format: goal, deps, inputs, executor, "
                "postcondition)");
    }
    return;
  }
  bool goal_unreadable = false;
  for_each_field(ctx, node, kStepSpecKeys, [&](const Field& f) {
    step.field_lines.set(f.key == "postcondition" ? "post" : f.key, f.line);
    if (f.key == "goal") {
      auto goal = read_string(ctx, f, "goal");
      goal_unreadable = !goal;
      step.goal = goal.value_or("");
    }
    if (f.key == "deps") read_deps(ctx, f, step);
    if (f.key == "inputs") read_stepspec_inputs(ctx, f, step);
    if (f.key == "executor") step.executor = read_string(ctx, f, "executor").value_or("shell");
    if (f.key == "postcondition") read_post(ctx, f, step);
    if (f.key == "idx") {
      auto idx = read_int(ctx, f, "idx");
      if (idx && *idx != index)
        ctx.error(f.line, fmt::format("'idx' is {} but the step is at position {}", *idx, index));
    }
  });
  // The seed's StepSpec always has a goal: it is what the step is for, and what
  // a model or worker executor is asked to do. Blank is as empty as "".
  if (!goal_unreadable && trim(step.goal).empty()) {
    const bool written = step.field_lines.contains("goal");
    ctx.error(written ? step.field_lines.line("goal") : line,
              !written ? std::string("a StepSpec needs a 'goal': say what the step is for")
                       : std::string("'goal' is empty (or only spaces): say what the step is for"));
  }
  if (step.executor.empty()) step.executor = "shell";
  if (step.executor == "shell" && step.inputs.contains("cmd") && step.inputs["cmd"].is_string()) {
    step.sh = step.inputs["cmd"].get<std::string>();
    step.inputs.erase("cmd");
    step.field_lines.set("sh", step.field_lines.line("inputs.cmd"));
  }
  ctx.step_id.clear();
}

void read_stepspec_plan(ReadContext& ctx, DocNode& list, Plan& plan) {
  plan.from_stepspec = true;
  plan.field_lines.set("steps", list.line ? list.line : 1);
  if (list.streamed) return;  // the reader already handed every item to read_stepspec_step
  plan.steps.reserve(list.items.size());
  for (DocNode& item : list.items) {
    Step& step = plan.steps.emplace_back();
    step.index = static_cast<int>(plan.steps.size()) - 1;
    read_stepspec_step(ctx, item, step);
    item = DocNode{};  // free the document as the plan grows
  }
}

}  // namespace orch::detail
