// The pure core of `orch review`: reading reviewer output, ids, the evidence
// check, reduce and the gate, the quality score, dry rounds and two-strikes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "flows/review_finding.h"
#include "flows/review_gate.h"
#include "flows/review_rounds.h"
#include "flows/review_score.h"

namespace orch::flows {
namespace {

using nlohmann::json;

json finding_doc(json finding) {
  return json{{"findings", json::array({std::move(finding)})}, {"scorecard", json::object()}};
}

json base_finding() {
  return json{{"file", "src/a.cc"},     {"line", 10},
              {"locus", "parse_args"},  {"severity", "MAJOR"},
              {"rule", "check-bounds"}, {"claim", "argv[1] read without checking argc"},
              {"evidence", "argv[1]"},  {"mechanical", true},
              {"confidence", 0.9}};
}

Finding parsed(const json& finding, const char* lens = "correctness") {
  auto out = parse_review_output(finding_doc(finding), lens);
  EXPECT_TRUE(out.has_value()) << (out ? "" : out.error().message);
  if (!out || out->findings.size() != 1) return {};
  return out->findings[0];
}

Finding make(const char* id, Severity severity, const char* lens = "l") {
  Finding f;
  f.id = id;
  f.severity = severity;
  f.lenses = {lens};
  return f;
}

// ---- reading reviewer output ------------------------------------------------

TEST(ReviewFindingTest, ValidOutputIsNormalised) {
  json doc = finding_doc(base_finding());
  doc["scorecard"] = {{"coverage", "full"}};
  auto out = parse_review_output(doc, "correctness");
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(out->findings.size(), 1u);
  const Finding& f = out->findings[0];
  EXPECT_EQ(f.file, "src/a.cc");
  EXPECT_EQ(f.line, 10);
  EXPECT_EQ(f.severity, Severity::Major);
  EXPECT_EQ(f.lenses, std::vector<std::string>{"correctness"});
  EXPECT_TRUE(f.mechanical);
  EXPECT_EQ(f.id.size(), 12u);
  EXPECT_EQ(out->scorecard["coverage"], "full");
}

TEST(ReviewFindingTest, SchemaErrorsNameEveryPointer) {
  json bad = base_finding();
  bad["severity"] = "URGENT";
  bad["confidence"] = 1.5;
  bad.erase("claim");
  json doc = json{{"findings", json::array({base_finding(), bad})}};  // no scorecard
  auto out = parse_review_output(doc, "correctness");
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code, ErrorCode::InvalidInput);
  const std::string& m = out.error().message;
  EXPECT_NE(m.find("/findings/1/severity: "), std::string::npos) << m;
  EXPECT_NE(m.find("/findings/1/confidence: "), std::string::npos) << m;
  EXPECT_NE(m.find("claim"), std::string::npos) << m;
  EXPECT_NE(m.find("scorecard"), std::string::npos) << m;
  EXPECT_EQ(m.find("/findings/0/"), std::string::npos) << m;
}

TEST(ReviewFindingTest, TextThatIsNotJsonFails) {
  auto out = parse_review_output_text("{findings: oops", "l");
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.error().message.find("not JSON"), std::string::npos);
}

TEST(ReviewFindingTest, BlockerIsCriticalAndCaseIsIgnored) {
  json f = base_finding();
  f["severity"] = "blocker";
  EXPECT_EQ(parsed(f).severity, Severity::Critical);
  f["severity"] = "Minor";
  EXPECT_EQ(parsed(f).severity, Severity::Minor);
  EXPECT_EQ(parse_severity("BLOCKER"), Severity::Critical);
  EXPECT_EQ(parse_severity("nit"), Severity::Nit);
  EXPECT_FALSE(parse_severity("urgent").has_value());
}

TEST(ReviewFindingTest, PathsAreNormalised) {
  EXPECT_EQ(normalise_path("./a/../b.cc"), "b.cc");
  EXPECT_EQ(normalise_path("./src/../src/a.cc"), "src/a.cc");
  EXPECT_EQ(normalise_path("src\\util\\x.h"), "src/util/x.h");
  EXPECT_EQ(normalise_path("src//./a.cc"), "src/a.cc");
  EXPECT_EQ(normalise_path("../up.cc"), "../up.cc");
  EXPECT_EQ(normalise_path("/abs/./a.cc"), "/abs/a.cc");
}

// "verdict" is the claim verifier's to set: what a reviewer (or the judge) writes
// there is ignored, so it cannot refute a finding.
TEST(ReviewFindingTest, AReviewersVerdictIsIgnored) {
  json f = base_finding();
  f["verdict"] = "refuted";
  const Finding out = parsed(f);
  EXPECT_FALSE(out.verdict.has_value());
  EXPECT_TRUE(counts_for_gate(out));
}

// ---- ids ----------------------------------------------------------------------

TEST(ReviewFindingTest, IdIgnoresTheLineAndThePathSpelling) {
  json f = base_finding();
  std::string id = parsed(f).id;
  f["line"] = 250;
  EXPECT_EQ(parsed(f).id, id);
  f.erase("line");
  EXPECT_EQ(parsed(f).id, id);
  f["file"] = "./src/../src/a.cc";
  EXPECT_EQ(parsed(f).id, id);
  f["id"] = "reviewer-made-this-up";
  EXPECT_EQ(parsed(f).id, id);
  f["locus"] = "  Parse_Args ";
  f["rule"] = "check-bounds";
  EXPECT_EQ(parsed(f).id, id);  // case and whitespace of locus/rule do not matter
  EXPECT_EQ(parsed(f, "other-lens").id, id);
}

TEST(ReviewFindingTest, IdChangesWithRuleLocusOrFile) {
  json f = base_finding();
  std::string id = parsed(f).id;
  json other_rule = f;
  other_rule["rule"] = "null-check";
  EXPECT_NE(parsed(other_rule).id, id);
  json other_locus = f;
  other_locus["locus"] = "main";
  EXPECT_NE(parsed(other_locus).id, id);
  json other_file = f;
  other_file["file"] = "src/b.cc";
  EXPECT_NE(parsed(other_file).id, id);
}

TEST(ReviewFindingTest, IdUsesTheClaimWhenThereIsNoRule) {
  json f = base_finding();
  f.erase("rule");
  std::string id = parsed(f).id;
  EXPECT_EQ(id, finding_id("src/a.cc", "parse_args", "argv[1] read without checking argc"));
  f["claim"] = "something else entirely";
  EXPECT_NE(parsed(f).id, id);
}

// The id is the first 12 hex digits of the real FNV-1a 64 of "file\nlocus\nkey"
// (docs/review.md); the value was computed with the standard offset basis
// 14695981039346656037 and prime 1099511628211.
TEST(ReviewFindingTest, IdIsFnv1a64OfFileLocusAndKey) {
  EXPECT_EQ(finding_id("src/a.cc", "Parse_Args", "Check-Bounds"), "8739360f8cc0");
}

// A reviewer may name a file by its absolute path in the workspace: it is made
// relative to the workspace before the id is computed, so that every lens's copy
// of a defect gets one id.
TEST(ReviewFindingTest, AnAbsolutePathInTheWorkspaceIsMadeRelative) {
  json f = base_finding();
  const std::string id = parsed(f).id;
  const std::vector<std::string> roots = {"/work/space", "/real/space"};
  f["file"] = "/work/space/src/a.cc";
  auto out = parse_review_output(json{{"findings", {f}}, {"scorecard", json::object()}}, "lens", roots);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->findings[0].file, "src/a.cc");
  EXPECT_EQ(out->findings[0].id, id);
  EXPECT_EQ(relative_to_roots("/real/space/./x/../src/a.cc", roots), "src/a.cc");
  EXPECT_EQ(relative_to_roots("/work/space2/a.cc", roots), "/work/space2/a.cc");
  EXPECT_EQ(relative_to_roots("/work/space", roots), "/work/space");
  EXPECT_EQ(relative_to_roots("/elsewhere/a.cc", roots), "/elsewhere/a.cc");
  EXPECT_EQ(relative_to_roots("src/a.cc", roots), "src/a.cc");
  EXPECT_EQ(relative_to_roots("/work/space/a.cc", {"/work/space/"}), "a.cc");
}

// ---- evidence -----------------------------------------------------------------

constexpr const char* kArtifact =
    "int main(int argc, char** argv) {\n"
    "  const char* name =   argv[1];\n"
    "  return run(name);\n"
    "}\n";

TEST(ReviewFindingTest, FabricatedQuoteIsUnverifiedAndOutOfTheGate) {
  Finding f = make("x", Severity::Critical);
  f.evidence = "delete[] buffer; // twice";
  check_evidence(f, kArtifact);
  EXPECT_TRUE(f.unverified);
  EXPECT_FALSE(counts_for_gate(f));
  GateResult gate = apply_gate(reduce({{f}}), 0);
  EXPECT_EQ(gate.verdict, GateVerdict::Pass);
  EXPECT_EQ(gate.critical, 0);
  EXPECT_EQ(gate.excluded, 1);
}

TEST(ReviewFindingTest, QuoteMatchesAfterWhitespaceNormalising) {
  Finding f = make("x", Severity::Critical);
  f.evidence = "const char* name = argv[1];\n  return   run(name);";
  check_evidence(f, kArtifact);
  EXPECT_FALSE(f.unverified);
  f.evidence = "\"const char* name = argv[1];\"";  // one pair of quote marks is dropped
  check_evidence(f, kArtifact);
  EXPECT_FALSE(f.unverified);
  EXPECT_EQ(apply_gate({f}, 0).verdict, GateVerdict::Block);
}

TEST(ReviewFindingTest, ShortQuotesAreNotChecked) {
  EXPECT_FALSE(evidence_missing("nowhere!!!", kArtifact));   // 10 characters
  EXPECT_FALSE(evidence_missing("nowhere!!!!", kArtifact));  // 11
  EXPECT_TRUE(evidence_missing("nowhere!!!!!", kArtifact));  // 12: checked
  EXPECT_FALSE(evidence_missing("  a   b  ", kArtifact));
  EXPECT_FALSE(evidence_missing("", kArtifact));
}

// ---- reduce and the gate ------------------------------------------------------

TEST(ReviewGateTest, GateVerdicts) {
  EXPECT_EQ(apply_gate({}, 0).verdict, GateVerdict::Pass);
  EXPECT_EQ(apply_gate({make("a", Severity::Minor), make("b", Severity::Nit)}, 0).verdict, GateVerdict::Pass);
  EXPECT_EQ(apply_gate({make("a", Severity::Major), make("b", Severity::Minor)}, 0).verdict,
            GateVerdict::Revise);
  GateResult block = apply_gate({make("a", Severity::Major), make("b", Severity::Critical)}, 0);
  EXPECT_EQ(block.verdict, GateVerdict::Block);
  EXPECT_EQ(block.critical, 1);
  EXPECT_EQ(block.major, 1);
  EXPECT_STREQ(gate_verdict_name(block.verdict), "BLOCK");
}

TEST(ReviewGateTest, FailedLensIsIncompleteNeverPass) {
  EXPECT_EQ(apply_gate({}, 1).verdict, GateVerdict::Incomplete);
  EXPECT_EQ(apply_gate({make("a", Severity::Critical)}, 1).verdict, GateVerdict::Incomplete);
}

TEST(ReviewGateTest, RefutedFindingsDoNotCount) {
  Finding f = make("a", Severity::Critical);
  f.verdict = FindingVerdict::Refuted;
  EXPECT_EQ(apply_gate({f}, 0).verdict, GateVerdict::Pass);
  f.verdict = FindingVerdict::Confirmed;
  EXPECT_EQ(apply_gate({f}, 0).verdict, GateVerdict::Block);
}

TEST(ReviewGateTest, DedupeKeepsHighestSeverityAndMergesLenses) {
  Finding minor = make("same", Severity::Minor, "style");
  minor.claim = "minor wording";
  Finding critical = make("same", Severity::Critical, "security");
  critical.claim = "critical wording";
  Finding other = make("other", Severity::Nit, "style");
  std::vector<Finding> out = reduce({{minor, other}, {critical}, {make("same", Severity::Major, "style")}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].id, "same");
  EXPECT_EQ(out[0].severity, Severity::Critical);
  EXPECT_EQ(out[0].claim, "critical wording");
  EXPECT_EQ(out[0].lenses, (std::vector<std::string>{"style", "security"}));
  EXPECT_EQ(out[1].id, "other");
  EXPECT_EQ(apply_gate(out, 0).verdict, GateVerdict::Block);
}

TEST(ReviewGateTest, DedupePrefersACopyThatCounts) {
  Finding fabricated = make("same", Severity::Critical, "a");
  fabricated.unverified = true;
  Finding grounded = make("same", Severity::Major, "b");
  std::vector<Finding> out = reduce({{fabricated}, {grounded}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::Major);
  EXPECT_FALSE(out[0].unverified);
  EXPECT_EQ(apply_gate(out, 0).verdict, GateVerdict::Revise);
}

// ---- quality score ------------------------------------------------------------

TEST(ReviewScoreTest, ShippedRubricScores) {
  auto rubric = shipped_rubric();
  ASSERT_TRUE(rubric.has_value()) << rubric.error().message;
  EXPECT_EQ(quality_score({}, *rubric).score, 100);
  EXPECT_EQ(quality_score({}, *rubric).band, "excellent");
  // 100 - 10 (MAJOR) - 3 (MINOR) = 87: under good (90), over acceptable (80).
  QualityScore s = quality_score({make("a", Severity::Major), make("b", Severity::Minor)}, *rubric);
  EXPECT_EQ(s.score, 87);
  EXPECT_EQ(s.band, "acceptable");
  std::vector<Finding> many(5, make("c", Severity::Critical));
  EXPECT_EQ(quality_score(many, *rubric).score, 0);
  EXPECT_EQ(quality_score(many, *rubric).band, "below acceptable");
  Finding unverified = make("d", Severity::Critical);
  unverified.unverified = true;
  EXPECT_EQ(quality_score({unverified}, *rubric).score, 100);
}

TEST(ReviewScoreTest, CustomRubric) {
  auto rubric = parse_rubric(
      "deductions: {CRITICAL: 50, MAJOR: 20, MINOR: 0, NIT: 0}\nthresholds:\n  ship: 70\n  polish: 99\n",
      "r.yaml");
  ASSERT_TRUE(rubric.has_value()) << rubric.error().message;
  EXPECT_EQ(rubric->thresholds.front().first, "polish");
  QualityScore s = quality_score({make("a", Severity::Major), make("b", Severity::Nit)}, *rubric);
  EXPECT_EQ(s.score, 80);
  EXPECT_EQ(s.band, "ship");
}

TEST(ReviewScoreTest, BrokenRubricNamesFileAndLine) {
  auto rubric = parse_rubric(
      "version: 1\n"
      "deductions:\n"
      "  CRITICAL: 25\n"
      "  MAJOR: lots\n"
      "  MINOR: 3\n"
      "  NTI: 1\n"
      "thresholds:\n"
      "  good: 190\n",
      "rubric.yaml");
  ASSERT_FALSE(rubric.has_value());
  const std::string& m = rubric.error().message;
  EXPECT_NE(m.find("rubric.yaml:4: deductions.MAJOR: "), std::string::npos) << m;
  EXPECT_NE(m.find("rubric.yaml:6: deductions.NTI: "), std::string::npos) << m;
  EXPECT_NE(m.find("deductions.NIT: missing"), std::string::npos) << m;
  EXPECT_NE(m.find("rubric.yaml:8: thresholds.good: "), std::string::npos) << m;
}

TEST(ReviewScoreTest, RubricWithoutThresholdsIsRejected) {
  auto rubric = parse_rubric("deductions: {CRITICAL: 1, MAJOR: 1, MINOR: 1, NIT: 1}\n", "r.yaml");
  ASSERT_FALSE(rubric.has_value());
  EXPECT_NE(rubric.error().message.find("thresholds: missing"), std::string::npos) << rubric.error().message;
}

// ---- dry rounds and two-strikes -----------------------------------------------

TEST(ReviewRoundsTest, ConvergesAfterDryRounds) {
  // Round 1: two new MAJOR/CRITICAL. Round 2: one more new MAJOR. Round 3: the
  // same ids again plus a new MINOR (dry). Round 4: nothing (dry) -> converged at 4.
  std::vector<std::vector<Finding>> rounds = {
      {make("a", Severity::Critical), make("b", Severity::Major)},
      {make("b", Severity::Major), make("c", Severity::Major)},
      {make("c", Severity::Major), make("m", Severity::Minor)},
      {},
  };
  RoundProgress p = track_rounds(rounds, 2);
  EXPECT_EQ(p.new_blocking, (std::vector<int>{2, 1, 0, 0}));
  EXPECT_EQ(p.dry_streak, 2);
  EXPECT_EQ(p.converged_round, 4);
  EXPECT_FALSE(track_rounds({rounds[0], rounds[1], rounds[2]}, 2).converged_round.has_value());
}

TEST(ReviewRoundsTest, UnverifiedNewCriticalKeepsTheRoundDry) {
  Finding fabricated = make("z", Severity::Critical);
  fabricated.unverified = true;
  RoundProgress p = track_rounds({{make("a", Severity::Major)}, {fabricated}, {}}, 2);
  EXPECT_EQ(p.converged_round, 3);
}

TEST(ReviewRoundsTest, IdSeenInRoundsNAndNPlus2IsEscalatedOnce) {
  std::vector<std::vector<Finding>> rounds = {
      {make("a", Severity::Major), make("b", Severity::Minor)},
      {make("b", Severity::Minor)},
      {make("a", Severity::Major)},  // a: rounds 1 and 3 -> escalated at 3
      {make("b", Severity::Minor)},  // b: rounds 2 and 4 -> escalated at 4
      {make("a", Severity::Major)},  // a again: already escalated
  };
  RoundProgress p = track_rounds(rounds, 2);
  ASSERT_EQ(p.escalated.size(), 2u);
  EXPECT_EQ(p.escalated[0].id, "a");
  EXPECT_EQ(p.escalated[0].round, 3);
  EXPECT_EQ(p.escalated[1].id, "b");
  EXPECT_EQ(p.escalated[1].round, 4);
}

TEST(ReviewRoundsTest, ANitThatStaysIsNotEscalated) {
  RoundProgress p =
      track_rounds({{make("n", Severity::Nit)}, {make("n", Severity::Nit)}, {make("n", Severity::Nit)}}, 5);
  EXPECT_TRUE(p.escalated.empty());
  // Raised to MINOR by round 3: the loop acts on it now, and it has stayed.
  p = track_rounds({{make("n", Severity::Nit)}, {}, {make("n", Severity::Minor)}}, 5);
  ASSERT_EQ(p.escalated.size(), 1u);
  EXPECT_EQ(p.escalated[0].round, 3);
}

TEST(ReviewRoundsTest, WithFactsOnlyPatchedIdsAreEscalatedAndIncompleteRoundsAreNotDry) {
  const std::vector<std::vector<Finding>> rounds = {
      {make("fixed-twice", Severity::Major), make("needs-judgement", Severity::Major)},
      {make("fixed-twice", Severity::Major), make("needs-judgement", Severity::Major)},
      {make("fixed-twice", Severity::Major), make("needs-judgement", Severity::Major)},
  };
  std::vector<RoundFacts> facts(3);
  facts[0].patched = {"fixed-twice"};
  facts[1].patched = {"fixed-twice"};
  RoundProgress p = track_rounds(rounds, 5, facts);
  ASSERT_EQ(p.escalated.size(), 1u);
  EXPECT_EQ(p.escalated[0].id, "fixed-twice");
  // Nothing patched (the fixer is off): nothing escalated.
  EXPECT_TRUE(track_rounds(rounds, 5, std::vector<RoundFacts>(3)).escalated.empty());
  // Round 2 incomplete (a lens failed): it is not dry, so two more dry rounds are needed.
  std::vector<RoundFacts> incomplete(3);
  incomplete[1].complete = false;
  p = track_rounds(rounds, 2, incomplete);
  EXPECT_FALSE(p.converged_round);
  EXPECT_EQ(p.dry_streak, 1);
  EXPECT_EQ(track_rounds(rounds, 2, std::vector<RoundFacts>(3)).converged_round, 3);
}

TEST(ReviewRoundsTest, LineShiftDoesNotDefeatTwoStrikes) {
  json f = base_finding();
  Finding round1 = parsed(f);
  f["line"] = 42;  // an edit above moved it
  Finding round3 = parsed(f);
  RoundProgress p = track_rounds({{round1}, {}, {round3}}, 5);
  ASSERT_EQ(p.escalated.size(), 1u);
  EXPECT_EQ(p.new_blocking, (std::vector<int>{1, 0, 0}));
}

}  // namespace
}  // namespace orch::flows
