#include "flows/planner.h"

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "exec/tool_executor.h"
#include "flows/embedded_files.h"
#include "flows/plan_decision.h"
#include "flows/planning_prompt.h"
#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "util/json_text.h"
#include "util/strings.h"
#include "util/yaml_writer.h"

namespace orch::flows {

namespace {

constexpr const char* kReplyLabel = "planner-reply.yaml";
constexpr int kPlanningAttempts = 3;  // transient provider failures are retried

struct Checked {
  Plan plan;
  Diagnostics problems;
};

// The core loader and validator, exactly as for a user's plan file.
Checked load_and_validate(const std::string& text, const std::string& label, const PlannerOptions& o) {
  LoadResult loaded = parse_plan(text, label);
  Diagnostics problems = plan_problems(loaded, validate_options_for(o.workspace, "", *o.executors));
  return Checked{std::move(loaded.plan), std::move(problems)};
}

std::string problems_text(const Diagnostics& problems) {
  std::vector<std::string> lines;
  for (const auto& d : problems) lines.push_back(d.to_string());
  return join(lines, "\n");
}

// The tool registry behind `tool:NAME` steps, when the executors have one.
const ToolRegistry* tool_registry_of(const ExecutorRegistry& executors) {
  const auto* tools = dynamic_cast<const ToolExecutor*>(executors.find("tool:"));
  return tools && !tools->registry().tools.empty() ? &tools->registry() : nullptr;
}

// What the model is told it may use: CLI-first, only the sub-commands of tools
// that select_tool would choose (dry_run_validated or prod_ready, safe_for_agents).
std::vector<std::string> selectable_tools(const ToolRegistry* registry) {
  std::vector<std::string> lines;
  if (!registry) return lines;
  for (const auto& [name, tool] : registry->tools)
    for (const auto& [command, c] : tool.commands) {
      if (!select_tool(*registry, ToolNeed{name, command, ""})) continue;
      std::string line = fmt::format("tool:{} with inputs.command = \"{}\"", name, command);
      std::string what = c.description.empty() ? tool.description : c.description;
      if (!what.empty()) line += " — " + what;
      if (!c.input_schema.empty()) line += "; its other inputs follow this JSON Schema: " + json_text(c.input_schema);
      lines.push_back(std::move(line));
    }
  return lines;
}

// A model's plan may only use the tools CLI-first selection allows; the reason
// for each one it may not goes back to the model in the repair call.
void check_tool_choices(const Plan& plan, const ToolRegistry* registry, Diagnostics& problems) {
  for (const Step& step : plan.steps) {
    if (!step.executor.starts_with("tool:")) continue;
    ToolNeed need{step.executor.substr(5), "", ""};
    if (step.inputs.is_object())
      if (auto it = step.inputs.find("command"); it != step.inputs.end() && it->is_string()) need.command = *it;
    if (!registry) {
      problems.push_back(step_diagnostic(step, {"executor"}, "no tool registry: a planned step may not use a tool"));
      continue;
    }
    if (auto chosen = select_tool(*registry, need); !chosen)
      problems.push_back(step_diagnostic(step, {"executor"},
                                         fmt::format("tool '{}' may not be chosen by the planner: {}", need.tool,
                                                     chosen.error().message)));
  }
}

std::string planning_executor(const PlannerOptions& o) { return o.model.empty() ? "llm" : "llm:" + o.model; }

std::string plan_name(std::string_view request) {
  std::string first(trim(request.substr(0, request.find('\n'))));
  if (first.size() > 60) first = first.substr(0, 57) + "...";
  return first;
}

Expected<PlannedRequest> single_step(std::string_view request, const PlannerOptions& o, PlanPath path,
                                     std::string why) {
  const std::string executor = o.single_step_executor.empty() ? planning_executor(o) : o.single_step_executor;
  const std::string literal = escape_placeholders(request);
  nlohmann::ordered_json step = {{"id", "request"}, {"goal", plan_name(request)}};
  if (executor != "shell") step["executor"] = executor;
  if (executor == "shell") {
    step["sh"] = literal;
  } else if (executor == "builtin:echo") {
    step["inputs"] = {{"text", literal}};
  } else {
    step["inputs"] = {{"prompt", literal}};
  }
  nlohmann::ordered_json plan = {{"name", plan_name(request)}, {"steps", nlohmann::ordered_json::array({step})}};
  PlannedRequest out;
  auto text = yaml_text(plan);
  if (!text)
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("the single-step plan for this request cannot be written: {}", text.error().message));
  out.text = std::move(*text);
  Checked c = load_and_validate(out.text, "request.yaml", o);
  if (!c.problems.empty())
    return fail(ErrorCode::InvalidInput, fmt::format("the single-step plan for this request is not valid:\n{}",
                                                     problems_text(c.problems)));
  out.plan = std::move(c.plan);
  out.path = path;
  out.why = std::move(why);
  return out;
}

Expected<PlannedRequest> from_template(const TemplateMatch& m, std::string_view request,
                                       const PlanDecision& decision, const PlannerOptions& o) {
  const PlanTemplate& t = *m.plan_template;
  PlannedRequest out;
  out.text = render_template(t, SlotValues{std::string(request), decision.trigger.items});
  Checked c = load_and_validate(out.text, t.file, o);
  if (!c.problems.empty())
    return fail(ErrorCode::InvalidInput, fmt::format("template '{}' ({}) gives an invalid plan:\n{}", t.name, t.file,
                                                     problems_text(c.problems)));
  out.plan = std::move(c.plan);
  out.path = PlanPath::Template;
  out.template_name = t.name;
  out.why = decision.why;
  return out;
}

// One planning call through the engine: a one-step plan whose step is the call.
struct CallResult {
  std::string run_id;
  std::string reply;
  std::string failure;  // why the call did not give a reply ("" when it did)
};

Expected<CallResult> planning_call(const PlanningPrompt& prompt, const PlannerOptions& o) {
  nlohmann::ordered_json step = {{"id", "plan"},
                                 {"goal", "write an orch plan for the request"},
                                 {"executor", planning_executor(o)},
                                 {"attempts", kPlanningAttempts},
                                 {"inputs",
                                  {{"system", escape_placeholders(prompt.system)},
                                   {"prompt", escape_placeholders(prompt.prompt)}}}};
  nlohmann::ordered_json plan = {{"name", "orch planner"}, {"steps", nlohmann::ordered_json::array({step})}};
  const std::string text = json_text(plan, 2);
  Checked c = load_and_validate(text, "planner-call.json", o);
  CallResult r;
  if (!c.problems.empty()) {
    r.failure = fmt::format("the planning call cannot be made: {}", c.problems.front().message);
    return r;
  }
  // Opened only now: a call that cannot be made records nothing (and needs no store).
  Store& store = *ORCH_TRY(o.store());
  EngineOptions engine_options;
  engine_options.workspace = o.workspace;
  engine_options.executors = o.executors;
  engine_options.handle_signals = o.handle_signals;
  Engine engine(store, engine_options);
  RunOutcome outcome = ORCH_TRY(engine.run(c.plan, text));
  r.run_id = outcome.run_id;
  // Not a failed call to fall back from: the person asked orch to stop.
  if (outcome.status == RunStatus::Interrupted)
    return fail(ErrorCode::Interrupted,
                fmt::format("interrupted: the planning call (run {}) was stopped; nothing "
                            "was planned",
                            outcome.run_id));
  if (outcome.status != RunStatus::Succeeded) {
    // The run's reason names the failed step; the step's own reason says why
    // ("provider 'x' takes its key from $KEY, which is not set").
    std::string why = outcome.reason;
    if (auto steps = store.steps(outcome.run_id))
      for (const auto& s : *steps)
        if (s.step_id == "plan" && !s.reason.empty()) why = fmt::format("{}: {}", why, s.reason);
    r.failure = fmt::format("the planning call failed (run {}): {}", outcome.run_id, why);
    return r;
  }
  auto steps = ORCH_TRY(store.steps(outcome.run_id));
  for (const auto& s : steps)
    if (s.step_id == "plan") r.reply = s.result;
  return r;
}

}  // namespace

const char* plan_path_name(PlanPath path) {
  switch (path) {
    case PlanPath::SingleStep: return "single_step";
    case PlanPath::Template: return "template";
    case PlanPath::Model: return "model";
    case PlanPath::ModelRepaired: return "model_repaired";
    case PlanPath::Fallback: return "fallback";
  }
  return "single_step";
}

std::string PlannedRequest::summary() const {
  if (path == PlanPath::Template) return fmt::format("template {}: {}", template_name, why);
  return fmt::format("{}: {}", plan_path_name(path), why);
}

Expected<PlannedRequest> plan_request(std::string_view request, const PlannerOptions& o) {
  if (!o.executors) return fail(ErrorCode::Internal, "plan_request: no executor registry");
  if (trim(request).empty()) return fail(ErrorCode::InvalidInput, "the request is empty");
  // The same decision `orch plan --explain` shows (plan_decision.h).
  PlanDecision decision = decide_plan(request, o.templates);
  TriggerResult trigger = decision.trigger;
  if (decision.way == PlanWay::SingleStep) {
    auto out = ORCH_TRY(single_step(request, o, PlanPath::SingleStep, decision.why));
    out.trigger = std::move(trigger);
    return out;
  }
  if (decision.way == PlanWay::Template) {
    auto out = ORCH_TRY(from_template(*decision.chosen, request, decision, o));
    out.trigger = std::move(trigger);
    return out;
  }

  // The model reads the request as plain text and may copy a `#E<digit>` in it
  // (a colour, "#E0E0E0") into its plan, where it would be a step reference:
  // such a request is not sent to the model.
  for (std::size_t at = request.find("#E"); at != std::string_view::npos; at = request.find("#E", at + 1))
    if (at + 2 < request.size() && std::isdigit(static_cast<unsigned char>(request[at + 2])) != 0)
      return fail(
          ErrorCode::InvalidInput,
          fmt::format("the request contains '{}', which a model's plan could take for a step reference "
                      "(#E<index>); write it another way (e.g. '# E{}')",
                      request.substr(at, 3), request[at + 2]));
  std::vector<std::string> runs;
  Diagnostics all_problems;
  auto fallback = [&](std::string why) -> Expected<PlannedRequest> {
    auto out = ORCH_TRY(single_step(request, o, PlanPath::Fallback,
                                    fmt::format("{}; no template matched; {}", trigger.explanation(), why)));
    out.trigger = trigger;
    out.planning_runs = runs;
    out.model_problems = all_problems;
    return out;
  };
  if (!o.store) return fallback("no store to record a planning call in");

  const std::vector<std::string> executors = o.executors->names();
  const ToolRegistry* tools = tool_registry_of(*o.executors);
  const std::vector<std::string> tool_lines = selectable_tools(tools);
  const std::string_view schema = plan_schema_text();
  std::string previous_reply;
  Diagnostics problems;
  for (int call = 0; call < 2; ++call) {
    PlanningPrompt prompt = call == 0 ? first_planning_prompt(request, schema, executors, tool_lines)
                                      : repair_planning_prompt(request, schema, executors, tool_lines,
                                                               previous_reply, problems);
    CallResult r = ORCH_TRY(planning_call(prompt, o));
    if (!r.run_id.empty()) runs.push_back(r.run_id);
    if (!r.failure.empty()) return fallback(r.failure);
    std::string text = extract_plan_text(r.reply);
    Checked c = load_and_validate(text, kReplyLabel, o);
    if (c.problems.empty()) check_tool_choices(c.plan, tools, c.problems);
    if (c.problems.empty()) {
      PlannedRequest out;
      out.plan = std::move(c.plan);
      out.text = text.ends_with('\n') ? text : text + "\n";
      out.path = call == 0 ? PlanPath::Model : PlanPath::ModelRepaired;
      out.why = call == 0 ? fmt::format("{}; no template matched; the model's plan is valid", trigger.explanation())
                          : fmt::format("{}; no template matched; the model's plan had {} problem{} ({}), the "
                                        "repaired plan is valid",
                                        trigger.explanation(), problems.size(), problems.size() == 1 ? "" : "s",
                                        problems.front().to_string());
      out.trigger = std::move(trigger);
      out.planning_runs = std::move(runs);
      out.model_problems = std::move(all_problems);
      return out;
    }
    previous_reply = std::move(text);
    problems = std::move(c.problems);
    all_problems.insert(all_problems.end(), problems.begin(), problems.end());
  }
  return fallback(fmt::format("the model's plan was still invalid after one repair ({})",
                              problems.front().to_string()));
}

}  // namespace orch::flows
