// flows/review_judge.h — what the judge of a review round may do to its findings.
//
// The judge (docs/review.md, "A round") answers like a reviewer, plus "merged":
// {MERGED_ID: KEPT_ID}. Its copy of a lens finding changes the severity and
// nothing else (the evidence, its check, the claim, the verdict stay the lens's);
// a lens finding it leaves out is kept unless it names the finding it was merged
// into; a CRITICAL no lens raised goes to the claim verifier. Pure functions of
// the round's findings and the judge's answer (and the artifacts' text, for the
// evidence of a finding the judge adds).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "flows/review_finding.h"
#include "flows/review_run.h"

namespace orch::flows::review_run_detail {

// What the judge did to the round's findings (see docs/review.md, "A round").
struct Judged {
  std::vector<Finding> findings;  // the round's findings after the judge
  std::vector<Finding> claims;    // CRITICALs no lens raised (counted ones): for the claim verifier
  // Lens findings the judge left out naming the finding it merged each into:
  // settled by settle_merges once the claims are checked.
  std::vector<std::pair<Finding, std::string>> merges;
  nlohmann::json doc =
      nlohmann::json::object();  // introduced, downgraded, kept; merged and merge_refused by settle_merges
};

// The round's findings after the judge's answer: `lens_findings` (reduced) and
// what the judge returned, with its "merged" object.
Judged apply_judge(const ReviewEnv& env, const std::vector<Finding>& lens_findings, ReviewOutput judge_out,
                   const nlohmann::json& merged);

// Settles the judge's merges, once the claim verifier has ruled (see the .cc).
void settle_merges(Judged& j, const std::vector<Finding>& lens_findings);

}  // namespace orch::flows::review_run_detail
