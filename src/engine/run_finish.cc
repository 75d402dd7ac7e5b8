// How a run ends. See run_finish.h.
#include "engine/run_finish.h"

#include <fmt/format.h>

#include <string_view>

#include "engine/budget.h"

namespace orch {

int stop_priority(StopKind k) {
  switch (k) {
    case StopKind::None:
      return 0;
    // Whichever of these two came first is what the run ends as: a wall budget
    // that runs out while an aborted run waits for its running steps does not
    // hide the step that failed, nor does a step failing after the budget ran out
    // turn a budget stop into a failure.
    case StopKind::Abort:
    case StopKind::Budget:
      return 1;
    case StopKind::Cancel:
      return 3;
    case StopKind::Interrupt:
      return 4;
    case StopKind::StoreError:
      return 5;
  }
  return 0;
}

StopEnding ending_of_stop(StopKind stop, const std::string& stop_reason, const std::string& run_id,
                          bool resumed_started_nothing) {
  StopEnding e;
  switch (stop) {
    case StopKind::Interrupt:
      e.status = RunStatus::Interrupted;
      e.reason = stop_reason + "; resume with `orch resume " + run_id + "`";
      break;
    case StopKind::Cancel:
      e.status = RunStatus::Cancelled;
      e.reason = stop_reason;
      e.skip_reason = "not started: run cancelled";
      break;
    case StopKind::Budget: {
      e.status = RunStatus::BudgetExhausted;
      e.reason = stop_reason;
      if (resumed_started_nothing)
        e.budget_hint =
            fmt::format(" (to go on, raise the plan's budget: orch resume {} --replan PLAN)", run_id);
      e.skip_reason = "not started: " + stop_reason;
      // However the budget ran out (a step that does not fit, the wall clock, a
      // step that spent past it), the ledger says so once, in the run's last
      // transaction (not from a timer's callback, outside any turn).
      constexpr std::string_view kPrefix = "budget exhausted: ";
      e.budget_exhausted =
          stop_reason.starts_with(kPrefix) ? stop_reason.substr(kPrefix.size()) : stop_reason;
      break;
    }
    case StopKind::Abort:
      e.status = RunStatus::Failed;
      e.reason = stop_reason;
      e.skip_reason = fmt::format("not started: run aborted ({})", stop_reason);
      break;
    case StopKind::None:
    case StopKind::StoreError:
      break;
  }
  return e;
}

LeftStep left_at_stop(bool tried, const std::string& last_failure, const std::string& stop_reason,
                      const std::string& skip_reason) {
  // A step that failed was not "not started": it failed and was not retried.
  if (!tried) return {StepStatus::Skipped, skip_reason};
  const std::string last = last_failure.substr(0, last_failure.find('\n'));
  return {StepStatus::Failed, last.empty()
                                  ? fmt::format("not retried ({})", stop_reason)
                                  : fmt::format("not retried ({}); last failure: {}", stop_reason, last)};
}

namespace {
// "2 steps failed: a, b" — the first five named.
std::string steps_named(const std::vector<std::string>& ids, std::string_view what) {
  std::string list;
  for (std::size_t k = 0; k < ids.size() && k < 5; ++k) list += (k ? ", " : "") + ids[k];
  if (ids.size() > 5) list += ", ...";
  return fmt::format("{} step{} {}: {}", ids.size(), ids.size() == 1 ? "" : "s", what, list);
}
}  // namespace

RunEnding run_ending(StopKind stop, const StopEnding& at_stop, const StepsAtEnd& steps,
                     const std::string& run_id, const std::optional<std::string>& overspent) {
  RunEnding end{at_stop.status, at_stop.reason};
  // The step that stopped an aborted run comes first in its reason; the ones that
  // failed while it was stopping (running ones finish) are named too. A run the
  // budget stopped names every step that failed before.
  if ((stop == StopKind::Abort && steps.failed.size() > 1) ||
      (stop == StopKind::Budget && !steps.failed.empty()))
    end.reason += " (" + steps_named(steps.failed, "failed") + ")";
  end.reason += at_stop.budget_hint;
  if (stop == StopKind::None && steps.not_done > 0) {
    if (steps.failed.empty() && !steps.waiting.empty()) {
      // Paused, not failed: `orch approve` then `orch resume` continues it.
      end.status = RunStatus::AwaitingApproval;
      end.reason = fmt::format("{}; approve with `orch approve {} STEP`, then `orch resume {}`",
                               steps_named(steps.waiting, "awaiting approval"), run_id, run_id);
    } else {
      // A step's own budget running out fails that step, not the run's budget.
      end.status = RunStatus::Failed;
      end.reason = steps.failed.empty() ? fmt::format("{} steps not done", steps.not_done)
                                        : steps_named(steps.failed, "failed");
    }
  }
  // A step left waiting for approval by a run that ended otherwise (not by a
  // cancel: nothing is to go on) is named too: approving it is part of going on,
  // however the run's own reason says to.
  if (end.status != RunStatus::AwaitingApproval && end.status != RunStatus::Cancelled &&
      !steps.waiting.empty())
    end.reason += fmt::format("; {} (approve with `orch approve {} STEP`)",
                              steps_named(steps.waiting, "awaiting approval"), run_id);
  // Said whatever the run's status: the budget was a promise the run did not keep.
  // When the reason already gives the figure (the budget that ran out), it is
  // not said twice.
  if (overspent) {
    const std::string why = overspent_reason(*overspent, end.reason.find(*overspent) != std::string::npos);
    end.reason = end.reason.empty() ? why : end.reason + "; " + why;
  }
  return end;
}

}  // namespace orch
