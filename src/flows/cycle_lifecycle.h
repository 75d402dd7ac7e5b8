// flows/cycle_lifecycle.h — the lifecycle of the items `orch cycle` advances
// (seed 003; docs/cycle.md when the runtime lands).
//
// An item (a theorem, a function, a doc section) lives in one file and is in
// one of the lifecycle's ordered states. A stage moves an item out of one state
// into one of the states it names ("formalize: nl_reviewed -> bound|aligned",
// "prove: aligned -> proved"); a transition no stage names is illegal, and the
// writer (code, never a model) refuses it. An item whose state has no stage is
// done as far as the cycle goes.
//
// Besides moving an item, a job's milestone may say it did not move, in the
// seed's words: stuck, no-change, rejected-by-scheduler, rejected-by-review,
// blocked-by-formalize-failure, scope-violation (MilestoneOutcome).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch::flows {

struct CycleStage {
  std::string name;             // "prove"
  std::string from;             // the state it moves an item out of
  std::vector<std::string> to;  // the states it may move it into (one or more)
};

class Lifecycle {
 public:
  // Reads {"states": [...], "stages": {"NAME": "FROM -> TO|TO", ...}} (what
  // cycle.yaml's `lifecycle:` holds). Every problem at once, each naming the
  // field: a state listed twice, a stage naming an unknown state, two stages out
  // of one state, a stage moving an item into its own state or backwards.
  static Expected<Lifecycle> from_json(const nlohmann::json& doc);

  const std::vector<std::string>& states() const { return states_; }
  const std::vector<CycleStage>& stages() const { return stages_; }

  // The stage that moves an item out of `state`; nullptr when none (done, or
  // an unknown state).
  const CycleStage* stage_for(std::string_view state) const;
  // Whether some stage moves an item from `from` to `to`.
  bool legal(std::string_view from, std::string_view to) const;
  bool known(std::string_view state) const;

 private:
  std::vector<std::string> states_;
  std::vector<CycleStage> stages_;
};

// What a milestone says of a task that did not move its item (seed 003).
enum class MilestoneOutcome {
  Advanced,                   // the item moved to a state of its stage
  Stuck,                      // the agent says it cannot go on
  NoChange,                   // nothing was changed
  RejectedByScheduler,        // the writer refused it: illegal, or the gate failed on the file as it is
  RejectedByReview,           // the reviewer refused the claimed transition
  BlockedByFormalizeFailure,  // phase 1's gate failed, so phase 2 did not run
  ScopeViolation,             // the job wrote a file other than its own (reverted)
};
// The seed's word for each non-advancing outcome ("no-change", ...); for
// Advanced the milestone names the state itself.
const char* milestone_outcome_name(MilestoneOutcome outcome);
// A milestone's `transition`: a state name (Advanced) or one of the words above.
std::optional<MilestoneOutcome> parse_milestone_outcome(std::string_view word, const Lifecycle& lifecycle);
// Whether the outcome is a strike: two in consecutive cycles make the item
// stuck (as two-strikes in the review runtime). Every outcome but Advanced is
// one; Stuck, the agent's own word, makes the item stuck at once.
bool counts_as_strike(MilestoneOutcome outcome);

}  // namespace orch::flows
