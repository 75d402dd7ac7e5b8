#include "flows/stage_plan.h"

#include <fmt/format.h>

#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"

namespace orch::flows {

nlohmann::ordered_json stage_inputs(const std::string& executor, const std::string& prompt,
                                    const std::vector<std::pair<std::string, std::string>>& extra,
                                    bool with_previous_failure) {
  nlohmann::ordered_json inputs = nlohmann::ordered_json::object();
  if (executor.starts_with("worker:")) {
    inputs["prompt"] = prompt;
    for (const auto& [name, value] : extra) inputs[name] = value;
    return inputs;
  }
  std::string text = prompt;
  for (const auto& [name, value] : extra) text += fmt::format("\n\n## {}\n{}", name, value);
  if (with_previous_failure)
    text += "\n\n## The previous attempt (empty on the first)\n${attempt.previous_failure}";
  inputs["prompt"] = text;
  return inputs;
}

Expected<Plan> load_built_plan(const std::filesystem::path& workspace, const ExecutorRegistry& executors,
                               const std::string& text, const std::string& name, const std::string& what) {
  LoadResult loaded = parse_plan(text, name);
  Diagnostics problems = loaded.diagnostics;
  if (problems.empty()) problems = validate_plan(loaded.plan, validate_options_for(workspace, "", executors));
  if (!problems.empty()) {
    std::string all;
    for (const auto& d : problems) all += (all.empty() ? "" : "\n") + d.message;
    return fail(ErrorCode::InvalidInput, fmt::format("{} is not runnable: {}", what, all));
  }
  return std::move(loaded.plan);
}

}  // namespace orch::flows
