// flows/stage_plan.h — what the runtimes (`orch task run`, `orch review`) share
// when they turn their model stages into an engine plan.
//
// stage_inputs: the inputs of a model stage for the executor kind. A worker is
// given every input (and, on a retry, the previous failure) in its prompt by the
// worker executor (docs/workers.md), so each input stays separate; an llm step
// sees only `prompt`, so everything goes there as "## NAME" sections, with the
// previous attempt's failure when `with_previous_failure`.
//
// load_built_plan: a plan a runtime built (JSON text), parsed and validated like
// any plan; a runtime's plan that does not validate is a bug or a bad executor
// name, reported with every problem.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "orch/error.h"
#include "orch/executor.h"
#include "orch/plan.h"

namespace orch::flows {

nlohmann::ordered_json stage_inputs(const std::string& executor, const std::string& prompt,
                                    const std::vector<std::pair<std::string, std::string>>& extra,
                                    bool with_previous_failure);

Expected<Plan> load_built_plan(const std::filesystem::path& workspace, const ExecutorRegistry& executors,
                               const std::string& text, const std::string& name, const std::string& what);

}  // namespace orch::flows
