// engine/attempt_render.h — turning a step plus the results so far into what an
// executor runs, and the step's fingerprint.
//
// Placeholders are filled one value per argv element / environment variable and
// never re-parsed. In an `sh` script a placeholder becomes a reference to a shell
// variable (${ORCH_IN_name}, ${ORCH_P0}, ${ORCH_ATTEMPT}, ${ORCH_PREVIOUS_FAILURE})
// whose value travels in the environment, so the script text never contains data.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "orch/error.h"
#include "orch/plan.h"

namespace orch {

struct RenderedStep {
  std::vector<std::string> argv;                         // empty for non-shell executors
  std::vector<std::pair<std::string, std::string>> env;  // step env + ORCH_IN_* + ORCH_P*
  nlohmann::ordered_json inputs = nlohmann::ordered_json::object();
};

struct ResultLookup {
  std::function<std::optional<std::string>(const std::string& step_id)> by_id;
  std::function<std::optional<std::string>(int index)> by_index;
  std::function<std::string(const std::string& step_id)> note;  // RenderContext::result_note
};

// Renders `step` for attempt `attempt` (previous_failure = why the last one failed).
Expected<RenderedStep> render_step(const Step& step, const ResultLookup& results, int attempt,
                                   const std::string& previous_failure);

// How long a shell_zero check may run when its `timeout` is not given.
inline constexpr std::chrono::milliseconds kShellZeroTimeout{60000};

// The step's fingerprint: executor, rendered command, env and inputs, postconditions,
// writes and output, independent of the attempt number. 16 hex digits.
// `plan_dir` is where a result_json check's schema file is found: its content is
// part of the fingerprint (an edited schema re-checks the step on --replan).
// `default_post` is the executor's default postconditions: a step that writes them
// out has the fingerprint of one that leaves `post:` out, and a shell_zero
// `timeout` equal to the default is as if not given.
Expected<std::string> step_fingerprint(const Step& step, const ResultLookup& results,
                                       const std::filesystem::path& plan_dir,
                                       const std::vector<Postcondition>& default_post = {});

// 64-bit FNV-1a of `text` (offset basis 14695981039346656037, prime
// 1099511628211), as 16 hex digits: a stable change detector (not security).
std::string fingerprint_of(std::string_view text);

}  // namespace orch
