// flows/review_driver.h — the loop of one review: its rounds, its phases, its
// document.
//
// A Driver holds a review whose lock drive_review has taken: its ledger row, its
// document (the rounds so far, the config) and what a resume was told to do with
// later edits. drive() runs rounds until the review stops (converged, max_rounds,
// the spend cap, an escalation) or pauses (a phase interrupted, cancelled or
// awaiting approval); each phase runs through the engine's phase runner
// (Driver::phase), and between phases the round is decided in code
// (review_driver_round.cc). Every change is saved to the ledger's row and exported to
// .orch/reviews/ (Driver::save).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/later_edits.h"
#include "flows/review_config.h"
#include "flows/review_finding.h"
#include "flows/review_rounds.h"
#include "flows/review_run.h"
#include "orch/store.h"

namespace orch::flows::review_run_detail {

// A phase's run as the round reads it: how it ended, its steps and attempts.
struct Phase {
  std::string run_id;
  RunStatus status = RunStatus::Failed;
  std::string reason;
  std::vector<StepRecord> steps;
  std::vector<AttemptRecord> attempts;
};

const StepRecord* step_of(const Phase& p, const std::string& id);
// The counted attempts of step `id`.
int attempts_of(const Phase& p, const std::string& id);
// Why a reviewer (or the judge) is recorded failed: the step's own reason when it
// failed, the parse error when it ended done but its answer could not be read.
std::string failure_of(const StepRecord* s, const Expected<ReviewOutput>& out);
// Everything spent by the review's runs so far (every run it owns).
Expected<std::int64_t> spent_tokens(ReviewEnv& env, const std::string& id);
std::vector<std::vector<Finding>> findings_of_rounds(const nlohmann::json& rounds);
// A round in which every lens ran and every claim was checked.
bool round_complete(const nlohmann::json& r);
// What track_rounds needs besides the findings: whether each round was complete
// and which ids were handed to the fixer after it (a fix that ran).
std::vector<RoundFacts> facts_of_rounds(const nlohmann::json& rounds);

class Driver {
 public:
  Driver(ReviewEnv& env, ReviewRecord record, nlohmann::json doc, ReviewConfig config, LaterEdits later_edits)
      : env_(env),
        record_(std::move(record)),
        doc_(std::move(doc)),
        c_(std::move(config)),
        later_edits_(later_edits) {}

  Expected<ReviewOutcome> drive();
  // Ends a review that has not ended (running, or stopped by its spend cap) as
  // abandoned: recorded like any stop, nothing run, the files left as they are.
  Expected<ReviewOutcome> abandon(ReviewStatus was);

 private:
  void note(const std::string& line) {
    if (env_.on_note) env_.on_note(line);
  }
  Expected<void> save();
  Expected<std::optional<Phase>> phase(int round, const char* name,
                                       const std::function<nlohmann::ordered_json(std::int64_t)>& build);
  Expected<ReviewOutcome> stop(ReviewStatus status, const std::string& reason, int exit_code);
  Expected<std::optional<ReviewOutcome>> spend_cap_stop(int round, const char* phase, const std::string& why);
  Expected<std::optional<ReviewOutcome>> run_round(int round);
  Expected<std::optional<ReviewOutcome>> run_fix(int round);
  RoundProgress progress() const {
    return track_rounds(findings_of_rounds(doc_["rounds"]), c_.dry_rounds, facts_of_rounds(doc_["rounds"]));
  }

  ReviewEnv& env_;
  ReviewRecord record_;
  nlohmann::json doc_;
  ReviewConfig c_;
  LaterEdits later_edits_;
  std::optional<ReviewOutcome> paused_;  // a phase that did not end: interrupted, awaiting approval
};

}  // namespace orch::flows::review_run_detail
