// flows/review_gate.h — reduce a round's findings and apply the gate.
//
// reduce() stacks the findings of every lens of one round and de-duplicates them
// by id (review_finding.h: the id ignores the line, so two lenses reporting the
// same defect at different lines are one finding). Of the copies of an id it
// keeps, in order of preference: one that counts for the gate over one that does
// not, then the highest severity, then the first in lens order; the kept finding
// lists every lens that raised the id (first-seen order). The result is ordered
// by severity (CRITICAL first), then by first appearance.
//
// The gate (apply_gate) is a pure function of the reduced findings and of how
// many lenses failed in the round:
//   a lens failed            -> INCOMPLETE (never PASS, whatever was found)
//   else CRITICAL > 0        -> BLOCK
//   else MAJOR > 0           -> REVISE
//   else                     -> PASS
// counting only findings for which counts_for_gate() holds: verified (the
// evidence check did not mark them unverified), not refuted by the verifier and
// not tagged JUDGE-HALLUCINATED by the hallucination gate.
//
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include "flows/review_finding.h"

namespace orch::flows {

enum class GateVerdict { Pass, Revise, Block, Incomplete };
const char* gate_verdict_name(GateVerdict verdict);  // "PASS", "REVISE", "BLOCK", "INCOMPLETE"

// Verified, not refuted, not judge-hallucinated.
bool counts_for_gate(const Finding& finding);

std::vector<Finding> reduce(const std::vector<std::vector<Finding>>& per_lens);

struct GateResult {
  GateVerdict verdict = GateVerdict::Pass;
  int critical = 0;  // counted findings, by severity
  int major = 0;
  int minor = 0;
  int nit = 0;
  int excluded = 0;  // findings left out: unverified or refuted
};

GateResult apply_gate(const std::vector<Finding>& findings, int failed_lenses);

}  // namespace orch::flows
