// The step counts a progress event carries. See progress_counts.h.
#include "engine/progress_counts.h"

namespace orch {

namespace {

int* count_of(ProgressEvent& counts, StepStatus status) {
  switch (status) {
    case StepStatus::Done:
      return &counts.done;
    case StepStatus::Running:
      return &counts.running;
    case StepStatus::Failed:
      return &counts.failed;
    case StepStatus::Skipped:
    case StepStatus::Cancelled:
      return &counts.skipped;
    case StepStatus::Pending:
    case StepStatus::AwaitingApproval:
      break;
  }
  return nullptr;
}

}  // namespace

void ProgressCounts::changed(std::vector<StepState>& steps, int i) {
  StepState& s = steps[static_cast<std::size_t>(i)];
  if (!ready_ || s.recount) return;
  s.recount = true;
  queue_.push_back(i);
}

const ProgressEvent& ProgressCounts::refresh(std::vector<StepState>& steps) {
  auto move = [this](StepState& s) {
    if (!s.in_plan) return;
    if (int* from = count_of(counts_, s.counted_as)) --*from;
    if (int* to = count_of(counts_, s.rec.status)) ++*to;
    s.counted_as = s.rec.status;
  };
  if (!ready_) {
    counts_ = ProgressEvent{};
    for (StepState& s : steps) {
      s.counted_as = StepStatus::Pending;
      if (s.in_plan) ++counts_.total;
      move(s);
    }
    ready_ = true;
    return counts_;
  }
  for (int i : queue_) {
    StepState& s = steps[static_cast<std::size_t>(i)];
    s.recount = false;
    move(s);
  }
  queue_.clear();
  return counts_;
}

}  // namespace orch
