// flows/planning_prompt.h — what the planner asks a model, and how it reads the answer.
//
// The first call: the system message holds the rules, the executors this orch
// knows and the plan JSON Schema; the user message is the request. The repair
// call: the system message holds the rules, the schema and the request; the
// user message is the previous reply and the validation problems found in it,
// so the turn the model answers is "fix these problems". The reply may be YAML
// or JSON, bare or inside a ``` fence. Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "orch/diagnostic.h"

namespace orch::flows {

struct PlanningPrompt {
  std::string system;
  std::string prompt;
};

// `tools`: one line per registry tool sub-command the planner may use (CLI-first:
// those select_tool would choose), listed as the only tools allowed.
PlanningPrompt first_planning_prompt(std::string_view request, std::string_view schema,
                                     const std::vector<std::string>& executors,
                                     const std::vector<std::string>& tools = {});

PlanningPrompt repair_planning_prompt(std::string_view request, std::string_view schema,
                                      const std::vector<std::string>& executors, const std::vector<std::string>& tools,
                                      std::string_view previous_reply, const Diagnostics& problems);

// The plan text inside a reply: the body of its first ``` fence (```yaml,
// ```json, ``` ...), or the whole reply, trimmed.
std::string extract_plan_text(std::string_view reply);

}  // namespace orch::flows
