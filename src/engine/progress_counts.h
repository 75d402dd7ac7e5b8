// engine/progress_counts.h — the step counts a progress event carries.
//
// total, done, running, failed and skipped (cancelled steps count as skipped)
// over the steps in the plan. Counted once, at the first refresh; after that
// only the steps changed since (changed()) are moved from the count they were
// in to the one of their status now, so that a progress line of a run of
// 100,000 steps does not count them all again. One thread.
#pragma once

#include <vector>

#include "engine/step_state.h"
#include "orch/engine.h"

namespace orch {

class ProgressCounts {
 public:
  // Step `i` of `steps` may have changed status: it is counted again at the next refresh.
  void changed(std::vector<StepState>& steps, int i);
  // The counts as the steps are now (only the count fields of the event are set).
  const ProgressEvent& refresh(std::vector<StepState>& steps);

 private:
  ProgressEvent counts_;
  bool ready_ = false;      // counted once: from then on only what changed
  std::vector<int> queue_;  // the steps changed since the last refresh
};

}  // namespace orch
