// flows/review_finding.h — one finding of `orch review`, and reading a
// reviewer's output into findings orch can trust.
//
// A reviewer (one lens) returns `{findings: [...], scorecard: {...}}`, as
// schemas/finding.schema.json describes. parse_review_output validates it
// against that schema (every violation, each with its JSON pointer) and then
// normalises each finding, so the rest of orch sees one form:
//   * severity: read case-insensitively; "blocker" is CRITICAL. The schema
//     accepts the spellings (lower, UPPER, Title), the normaliser maps them.
//   * file: normalise_path ("./a/../b.cc" -> "b.cc", "\" -> "/", no "./"), and
//     an absolute path inside the workspace made relative to it (relative_to_roots).
//   * lens: the lens that ran (the caller says which); a reviewer's is ignored.
//   * verdict: the claim verifier's to set; a reviewer's (or the judge's) is ignored.
//   * id: computed here, never taken from the reviewer: finding_id() of the
//     normalised file, the locus and the rule (the claim when there is no
//     rule). The line is NOT part of it, so an edit that shifts lines keeps an
//     unfixed finding's id (the seed's runtime put the line in the id).
// The evidence check (check_evidence) is separate because it needs the
// artifact's text: a quote of kMinEvidenceChars or more that is not in the
// artifact (whitespace-normalised on both sides) marks the finding unverified,
// and unverified findings are kept out of the gate (review_gate.h).
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch::flows {

// Highest first: a lower enumerator value is more severe.
enum class Severity { Critical, Major, Minor, Nit };
const char* severity_name(Severity severity);  // "CRITICAL", "MAJOR", "MINOR", "NIT"
// Case-insensitive; "blocker" is Critical. nullopt for anything else.
std::optional<Severity> parse_severity(std::string_view text);

// Set by the claim verifier (seed 001).
enum class FindingVerdict { Confirmed, Refuted, Downgraded, Held };
const char* finding_verdict_name(FindingVerdict verdict);  // "confirmed", ...
std::optional<FindingVerdict> parse_finding_verdict(std::string_view text);

struct Finding {
  std::string id;                    // finding_id(file, locus, rule or claim)
  std::string file;                  // normalised (normalise_path)
  std::optional<std::int64_t> line;  // informative only; not in the id
  std::string locus;
  std::vector<std::string> lenses;  // the lens that raised it; more after reduce() merges duplicates
  Severity severity = Severity::Nit;
  std::string rule;  // may be empty
  std::string claim;
  std::string evidence;  // as the reviewer quoted it
  std::string failing_case;
  std::string suggested_fix;
  bool mechanical = false;
  std::optional<double> confidence;  // 0..1 when given
  std::optional<FindingVerdict> verdict;
  bool unverified = false;  // set by check_evidence: the quote is not in the artifact
  // Set by the hallucination gate: a CRITICAL the judge added that no lens raised
  // and the claim verifier could not ground ([JUDGE-HALLUCINATED]); kept out of the gate.
  bool judge_hallucinated = false;
};

// How a finding stood in a round (the review document's history[].status):
// counted, unverified (its quote is not in the file), refuted (by the claim
// verifier), judge_hallucinated.
enum class FindingStanding { Counted, Unverified, Refuted, JudgeHallucinated };
FindingStanding standing_of(const Finding& finding);
const char* finding_standing_name(FindingStanding standing);
std::optional<FindingStanding> parse_finding_standing(std::string_view name);

// The finding as a JSON object (the review document, schemas/review-report.schema.json:
// every field, "lenses", "unverified", "judge_hallucinated"; absent optionals
// are left out) and back. finding_from_json fails (InvalidInput) on a document
// that is not one.
nlohmann::json finding_json(const Finding& finding);
Expected<Finding> finding_from_json(const nlohmann::json& doc);

struct ReviewOutput {
  std::vector<Finding> findings;
  nlohmann::json scorecard = nlohmann::json::object();  // as the reviewer wrote it
};

// Validates `doc` against schemas/finding.schema.json (the copy built into orch)
// and normalises it. Fails (InvalidInput) with one line per violation, each
// "POINTER: message" ("/findings/0/severity: ..."), so a repair prompt can quote
// them all. Every finding gets lenses = {lens}. `workspace_roots`: the absolute
// spellings of the workspace (as given, and with symlinks resolved); a file under
// one of them is made relative to it before the id is computed.
Expected<ReviewOutput> parse_review_output(const nlohmann::json& doc, std::string_view lens,
                                           const std::vector<std::string>& workspace_roots = {});
// The same from text; text that is not JSON fails with the parser's message.
Expected<ReviewOutput> parse_review_output_text(std::string_view text, std::string_view lens,
                                                const std::vector<std::string>& workspace_roots = {});

// A relative path in one spelling: "\" -> "/", "." and empty parts dropped, "x/.."
// folded ("./src/../src/a.cc" -> "src/a.cc"). A ".." that climbs above the start
// is kept ("../a" stays "../a"); a leading "/" is kept. Case is kept.
std::string normalise_path(std::string_view path);

// normalise_path(path), made relative to the first of `roots` (absolute folders)
// it is strictly inside: "/ws/./src/a.cc" with roots {"/ws"} -> "src/a.cc". A
// relative path, or an absolute one outside every root, is only normalised.
std::string relative_to_roots(std::string_view path, const std::vector<std::string>& roots);

// Runs of whitespace -> one space, trimmed at both ends. Case is kept.
std::string collapse_whitespace(std::string_view text);

// The id of a finding: the first 12 hex digits of FNV-1a 64 (engine's
// fingerprint_of) of "file\nlocus\nkey", where file is normalise_path(file) (the
// caller makes a path inside the workspace relative first: relative_to_roots) and
// locus and key (the rule, or the claim when the rule is empty) are lower-cased
// and collapse_whitespace'd. Stable across builds and platforms; not security.
std::string finding_id(std::string_view file, std::string_view locus, std::string_view rule_or_claim);

// Quotes shorter than this (in code points, after collapse_whitespace and after
// one pair of surrounding quote marks is removed) are not checked.
inline constexpr std::size_t kMinEvidenceChars = 12;

// True when `evidence` is checkable (long enough) and absent from `artifact_text`,
// comparing collapse_whitespace of both (case-sensitive).
bool evidence_missing(std::string_view evidence, std::string_view artifact_text);
// True when `evidence` is checkable (long enough, normalised as above) and present
// in `artifact_text`: what grounding a claim needs (a short quote grounds nothing).
bool evidence_found(std::string_view evidence, std::string_view artifact_text);
// Sets finding.unverified = evidence_missing(finding.evidence, artifact_text).
void check_evidence(Finding& finding, std::string_view artifact_text);

}  // namespace orch::flows
