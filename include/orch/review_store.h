// orch/review_store.h — where the review runtime (`orch review`) keeps its reviews.
//
// A review is one `orch review --config RUN.yaml` from its pre-flight to its end:
// the resolved configuration, every round (the findings after reduce, judge and
// the hallucination gate; the verdict; the fix and its outcome), the escalations,
// the spend, the final verdict. The contract: one record per review, updated in
// place as a whole (the review document, schemas/review-report.schema.json, and
// its status), never half-written (the SQLite ledger's table `reviews`, schema
// v5, docs/store.md). The reviewers, judge, claim verifier and fixer are engine
// steps of ordinary runs, each owned by the review (RunOwner: review, ID, round,
// phase), so their attempts, tokens and events are the runs' like any other
// step's.
//
// One process drives a review at a time (the runtime holds the store's lock on
// "review-ID": Store::lock).
// One ReviewStore is one connection, used from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch {

// running: not finished (or interrupted: `orch review --resume ID` continues it);
// spend_cap: stopped by its spend cap (resumable with a higher one); the others
// are how it ended (docs/review.md, "Exit codes"); abandoned: ended unfinished by
// `orch review --abandon ID` (schema v9).
enum class ReviewStatus { Running, Passed, Failed, Escalated, SpendCap, Abandoned };

struct ReviewRecord {
  std::string id;         // e.g. 20261130-150200-paper
  std::string name;       // the config's name
  std::string workspace;  // absolute
  ReviewStatus status = ReviewStatus::Running;
  std::string verdict;   // the last round's gate verdict: PASS, REVISE, BLOCK, INCOMPLETE; "" before round 1
  int rounds = 0;        // rounds completed
  std::string doc_json;  // the review document (schemas/review-report.schema.json)
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
};

const char* review_status_name(
    ReviewStatus status);  // running, passed, failed, escalated, spend_cap, abandoned
std::optional<ReviewStatus> parse_review_status(std::string_view name);

class ReviewStore {
 public:
  virtual ~ReviewStore() = default;
  // Fails (Store) when the id exists.
  virtual Expected<void> insert_review(const ReviewRecord& review) = 0;
  // Every column but id; NotFound for an unknown review.
  virtual Expected<void> update_review(const ReviewRecord& review) = 0;
  virtual Expected<std::optional<ReviewRecord>> find_review(const std::string& id) = 0;
  virtual Expected<std::vector<ReviewRecord>> list_reviews() = 0;  // newest first
};

}  // namespace orch
