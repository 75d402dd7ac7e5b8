#include "orch/store.h"

namespace orch {

Expected<std::map<StepStatus, int>> Store::step_status_counts(const std::string& run_id) {
  std::map<StepStatus, int> counts;
  for (const StepRecord& s : ORCH_TRY(steps(run_id))) ++counts[s.status];
  return counts;
}

}  // namespace orch
