#include "orch/store.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace orch {

Expected<std::map<StepStatus, int>> Store::step_status_counts(const std::string& run_id) {
  std::map<StepStatus, int> counts;
  for (const StepRecord& s : ORCH_TRY(steps(run_id))) ++counts[s.status];
  return counts;
}

Expected<std::optional<StepRecord>> Store::find_step(const std::string& run_id, const std::string& step_id) {
  for (StepRecord& s : ORCH_TRY(steps(run_id)))
    if (s.step_id == step_id) return std::move(s);
  return std::nullopt;
}

Error Store::no_run(const std::string& run_id) const {
  return Error{ErrorCode::NotFound,
               fmt::format("no run '{}' in {}", quote_for_message(run_id, 80), location().string())};
}

}  // namespace orch
