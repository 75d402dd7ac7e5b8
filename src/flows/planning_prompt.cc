#include "flows/planning_prompt.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace orch::flows {

namespace {

constexpr std::size_t kMaxQuotedReply = 20000;

std::string rules_text(const std::vector<std::string>& names) {
  return fmt::format(
      "You are the planner of orch, an orchestrator that runs plans: a DAG of steps, each run by an executor "
      "and checked by postconditions. Turn the user's request into one orch plan.\n"
      "Rules:\n"
      "- Reply with the plan only, as YAML or JSON matching the JSON Schema below; no prose.\n"
      "- Use only these executors: {}. An llm step takes inputs.prompt (and optionally inputs.system); "
      "a shell step takes run (an argv list) or sh (a script).\n"
      "- Give every step a short id, a goal, and deps on the steps whose results it uses; refer to a result "
      "as ${{steps.ID.result}}.\n"
      "- Prefer few steps: one per deliverable. Add postconditions that check the work mechanically.\n",
      join(names, ", "));
}

std::string rules(const std::vector<std::string>& executors, const std::vector<std::string>& tools) {
  std::vector<std::string> names;
  for (const auto& e : executors) names.push_back(e.ends_with(':') ? e + "NAME" : e);
  std::string tool_rules;
  if (!tools.empty()) {
    tool_rules = "- Prefer a registry tool to a model or a shell command when one does the job (CLI-first). The tools "
                 "you may use, and only these:\n";
    for (const auto& t : tools) tool_rules += "  - " + t + "\n";
  }
  return rules_text(names) + tool_rules;
}

std::string quoted_reply(std::string_view reply) {
  if (reply.size() <= kMaxQuotedReply) return std::string(reply);
  return std::string(reply.substr(0, kMaxQuotedReply)) + "\n[... cut]";
}

}  // namespace

PlanningPrompt first_planning_prompt(std::string_view request, std::string_view schema,
                                     const std::vector<std::string>& executors, const std::vector<std::string>& tools) {
  PlanningPrompt p;
  p.system = fmt::format("{}\nThe plan JSON Schema:\n{}\n", rules(executors, tools), schema);
  p.prompt = std::string(request);
  return p;
}

PlanningPrompt repair_planning_prompt(std::string_view request, std::string_view schema,
                                      const std::vector<std::string>& executors, const std::vector<std::string>& tools,
                                      std::string_view previous_reply, const Diagnostics& problems) {
  PlanningPrompt p;
  p.system = fmt::format("{}\nThe plan JSON Schema:\n{}\n\nThe request was:\n{}\n", rules(executors, tools), schema,
                         request);
  std::string listed;
  for (const auto& d : problems) listed += "- " + d.to_string() + "\n";
  p.prompt = fmt::format(
      "Your plan is not valid. orch's validator found these problems:\n{}\nYour plan was:\n{}\n\n"
      "Reply with the whole corrected plan only.",
      listed, quoted_reply(previous_reply));
  return p;
}

std::string extract_plan_text(std::string_view reply) {
  std::size_t open = reply.find("```");
  if (open != std::string_view::npos) {
    std::size_t body = reply.find('\n', open);
    if (body != std::string_view::npos) {
      std::size_t close = reply.find("```", body + 1);
      return std::string(trim(reply.substr(body + 1, close == std::string_view::npos ? std::string_view::npos
                                                                                     : close - body - 1)));
    }
  }
  return std::string(trim(reply));
}

}  // namespace orch::flows
