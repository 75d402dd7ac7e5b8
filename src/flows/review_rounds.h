// flows/review_rounds.h — loop-until-dry and two-strikes, as bookkeeping over
// the findings of each round (the seed's runtime left both as prose for the
// model to follow; here they are a pure function).
//
// Input: the reduced findings of rounds 1..n (review_gate.h reduce()), in
// order. Only findings that count for the gate (verified, not refuted) are
// looked at. Ids come from finding_id(), which ignores the line, so a finding
// that merely moved is not new.
//   * new: an id not seen in any earlier round (at any severity).
//   * dry round: a round that adds no new CRITICAL or MAJOR id.
//   * converged: after `dry_rounds` consecutive dry rounds; converged_round is
//     the (1-based) round at which that happened. Rounds after it are still
//     counted but do not change converged_round.
//   * two-strikes: an id present in round N and round N+2 is escalated (to the
//     human; it is not to be patched a third time). escalated lists each such id
//     once, with the round at which it was escalated (N+2, the first time). Only
//     a finding that is MINOR or worse in round N+2 is escalated: the loop never
//     acts on a NIT (the fixer applies CRITICAL, MAJOR, MINOR), so a NIT that
//     stays is not a strike against anything.
//
// Pure; thread-safe.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "flows/review_finding.h"

namespace orch::flows {

// What the fix phase of a round did, as the round's document records it
// (fix.status): not run (the last round), off (no fixer), nothing to fix,
// pending (to run, or cut off), applied, rolled back (its checks failed).
enum class FixStatus { NotRun, Off, NothingToFix, Pending, Applied, RolledBack };
const char* fix_status_name(FixStatus status);  // "not_run", "off", "nothing_to_fix", "pending", ...
std::optional<FixStatus> parse_fix_status(std::string_view name);

// How a reviewer (lens) or the judge answered in a round: ok, repaired (its
// second attempt, told why the first was refused, was valid), failed.
enum class RoleStatus { Ok, Repaired, Failed };
const char* role_status_name(RoleStatus status);  // "ok", "repaired", "failed"

struct Escalation {
  std::string id;
  int round = 0;  // 1-based round in which the id was seen for the second strike
};

struct RoundProgress {
  std::vector<int> new_blocking;  // per round: new CRITICAL/MAJOR ids it added
  int dry_streak = 0;             // consecutive dry rounds at the end
  std::optional<int> converged_round;
  std::vector<Escalation> escalated;  // in round order, then id order
};

// What the loop knows of each round besides its findings.
struct RoundFacts {
  // False when a lens (or a claim verifier) failed: such a round says nothing
  // about what is left, so it is never dry (it breaks a dry streak).
  bool complete = true;
  // The ids handed to the fixer after this round (empty with the fixer off).
  std::set<std::string> patched;
};

// Every round complete, and every finding MINOR or worse counted as acted on.
RoundProgress track_rounds(const std::vector<std::vector<Finding>>& rounds, int dry_rounds);
// With the facts of each round (facts.size() == rounds.size()): an incomplete
// round is not dry, and two-strikes escalates an id only when it was handed to
// the fixer after round N or N+1 and is still there in round N+2 — an id nobody
// tried to fix (the fixer is off, or the finding needs judgement) is listed for
// the human, not escalated.
RoundProgress track_rounds(const std::vector<std::vector<Finding>>& rounds, int dry_rounds,
                           const std::vector<RoundFacts>& facts);

}  // namespace orch::flows
