// flows/review_run.h — `orch review`: the review runtime's loop, through the
// core engine (docs/review.md).
//
// A review is a row of the ledger (orch/review_store.h) holding its document:
// the config confirmed at the pre-flight, every round, the escalations, the
// spend. Each round runs in a fresh context as up to four engine runs, each run
// through the engine's phase runner (engine/phase_runner.h) and owned by the key
// (review, ID, round, PHASE), so that a resumed review finds them again:
//   reviewers  one step per lens and reviewer (worker or model), in parallel up
//              to max_parallel, on_failure continue. Each must return JSON that
//              validates against schemas/finding.schema.json (a result_json
//              postcondition): an invalid answer fails the attempt with the
//              validation errors, and the second attempt — the repair — is told
//              them. A step that still fails is a failed lens: the round's
//              verdict is INCOMPLETE.
//   judge      (optional) downgrades or merges the reduced findings; it cannot
//              drop one (a finding left out without a "merged" entry is kept)
//              nor launder an unverified quote.
//   claims     one claim-verifier step, in a fresh context, per CRITICAL the
//              judge introduced that no lens raised (or raised from a lower
//              severity); a claim not grounded (not confirmed with a verbatim
//              quote found in the artifact) is tagged JUDGE-HALLUCINATED and
//              excluded (a raised lens finding goes back to the lens's copy),
//              and the verdict recomputed; a verifier that cannot answer
//              leaves the claim counted and the round INCOMPLETE.
//   fix        (optional) the fixer applies the mechanical findings, CRITICAL,
//              then MAJOR, then MINOR. The artifacts are the step's `writes`, so
//              the engine snapshots them first and restores them when the step
//              fails its checks — the verify command is one — or is interrupted.
// Between the phases orch itself does what must not be left to a model, as pure
// functions (review_finding.h, review_gate.h, review_rounds.h, review_score.h):
// the finding ids, the evidence check, reduce, the gate, dry rounds,
// two-strikes (only for ids handed to the fixer), the score. Every text put into
// a step (artifacts, quotes, prompts) is escaped: never read as a placeholder.
//
// The loop stops after dry_rounds consecutive dry rounds (converged), at
// max_rounds, or when the spend cap is reached (every phase's token budget is
// what is left of spend_cap_tokens, so no call the cap cannot cover is started).
// The round record is written when the round's findings are known and the fix
// outcome when the fix ends; a review killed anywhere is continued by
// resume_review: recorded rounds are kept, a phase run that exists is resumed
// (the engine never re-runs a done step) or its results read, a missing one run.
//
// Exit codes: 0 the last round PASSed and nothing was escalated; 1 it ended
// REVISE, BLOCK or INCOMPLETE; 3 a finding was escalated by two-strikes, the
// spend cap was reached, or a step awaits approval; 130 interrupted.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/later_edits.h"
#include "flows/review_config.h"
#include "orch/engine.h"
#include "orch/review_store.h"
#include "orch/store.h"

namespace orch::flows {

struct ReviewEnv {
  Store* store = nullptr;           // the ledger: the phases' runs
  ReviewStore* reviews = nullptr;   // the same ledger's reviews
  std::filesystem::path workspace;  // absolute
  std::shared_ptr<ExecutorRegistry> executors;
  std::function<std::int64_t()> now_ms;
  bool handle_signals = false;
  std::function<void(const std::string& line)> on_note;      // progress, one line at a time
  std::function<bool(const ApprovalRequest&)> ask_approval;  // the risk guard's question (EngineOptions)
};

struct ReviewOutcome {
  std::string id;
  ReviewStatus status = ReviewStatus::Running;
  nlohmann::json doc;  // the review document (schemas/review-report.schema.json)
  int exit_code = 1;
  std::string reason;  // why it stopped
};

// The pre-flight's probe: a plan with one step per role, validated against the
// executors, so a bad worker or model name fails before anything launches.
Expected<void> check_review_executors(const ReviewEnv& env, const ReviewConfig& config);

// Creates the review (the config must be resolved) and runs it.
Expected<ReviewOutcome> start_review(ReviewEnv& env, const ReviewConfig& config);

// What a resume does with a file of a fix killed with its orch (kill -9) that
// changed after that orch stopped watching the fix: LaterEdits
// (engine/later_edits.h); the review's default is Refuse (--keep-edits: Keep,
// --discard-edits: Discard).

// Continues a review that is still running (after kill -9, Ctrl-C, an approval,
// or the spend cap: `spend_cap` raises it). A review that ended is refused.
Expected<ReviewOutcome> resume_review(ReviewEnv& env, const std::string& id,
                                      std::optional<std::int64_t> spend_cap,
                                      LaterEdits later_edits = LaterEdits::Refuse);

// Ends a review that has not ended (running, or stopped by its spend cap) as
// abandoned (`orch review --abandon ID`): its rounds, findings and spend stay in
// the ledger and in .orch/reviews/, nothing more runs, no file is touched, and it
// is no longer unfinished (no warning at a new review of its artifacts; --resume
// refuses it). Refused while another process drives it, and for a review that
// has ended. The outcome's exit code is 0.
Expected<ReviewOutcome> abandon_review(ReviewEnv& env, const std::string& id);

// One line per unfinished review (running, or stopped by its spend cap: both
// resumable) of `workspace` that reviews one of `artifacts`: its id, its status
// and how to go on with it. For the pre-flight of a new review of them.
Expected<std::vector<std::string>> unfinished_reviews_of(ReviewEnv& env,
                                                         const std::vector<std::string>& artifacts);
Expected<ReviewRecord> find_review(ReviewEnv& env, const std::string& id);

// The Markdown report of a review document.
std::string review_markdown(const nlohmann::json& doc);

}  // namespace orch::flows
