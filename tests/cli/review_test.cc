// Black-box tests of `orch review` through the real binary, with scripted
// reviewers, judge, claim verifier and fixer (tests/agents/fake_reviewer.py)
// whose answers change from round to round.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "engine/attempt_render.h"
#include "testing/fake_llm.h"
#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;

const char* const kDoc =
    "# Parser\n"
    "\n"
    "The function parse_args reads argv[1] without checking argc.\n"
    "It returns 0 on success.\n"
    "The buffer in copy_name holds 16 bytes but the name may be longer.\n";

json finding(const std::string& locus, const std::string& severity, const std::string& claim,
             const std::string& evidence = "", bool mechanical = false, int line = 0) {
  json f = {{"file", "doc.md"},
            {"locus", locus},
            {"severity", severity},
            {"claim", claim},
            {"mechanical", mechanical}};
  if (!evidence.empty()) f["evidence"] = evidence;
  if (line > 0) f["line"] = line;
  return f;
}

json answer(std::vector<json> findings) {
  return {{"findings", findings}, {"scorecard", json::object()}};
}

const json kArgc = finding("parse_args", "MAJOR", "argv[1] is read without checking argc",
                           "reads argv[1] without checking argc", true, 3);
const json kBuffer = finding("copy_name", "CRITICAL", "the name can overflow the 16-byte buffer",
                             "holds 16 bytes but the name may be longer", false, 5);

// A workspace with doc.md, the lens prompts, a workers file whose one worker is
// the scripted reviewer, the scenario and RUN.yaml.
struct Project {
  TempDir d;
  explicit Project(const json& scenario, const std::string& run_yaml, const std::string& worker_extra = "") {
    write_file(d / "doc.md", kDoc);
    write_file(d / "lenses" / "correctness.md", "Review for {{lens}} errors. The reader is {{audience}}.\n");
    write_file(d / "lenses" / "safety.md", "Review for memory safety.\n");
    write_file(
        d / "workers.yaml",
        fmt::format("workers:\n  fake:\n    argv: [python3, {}, {}, \"{{prompt}}\"]\n    output: text\n{}",
                    (source_dir() / "tests" / "agents" / "fake_reviewer.py").string(),
                    (d / "scenario.json").string(), worker_extra));
    write_file(d / "scenario.json", scenario.dump(2));
    write_file(d / "RUN.yaml", run_yaml);
  }
  fs::path path() const { return d.path(); }
  // The calls the scripted roles got, "ROLE LENS ROUND ATTEMPT" each.
  std::vector<std::string> calls() const {
    std::vector<std::string> out;
    if (!fs::exists(d / "calls.log")) return out;
    std::istringstream in(read_file(d / "calls.log"));
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
  int count_calls(const std::string& prefix) const {
    int n = 0;
    for (const auto& c : calls()) n += c.starts_with(prefix);
    return n;
  }
};

std::string run_yaml(const std::string& extra, const std::string& lenses = "") {
  return "name: parser doc\n"
         "artifacts: [doc.md]\n"
         "workers: workers.yaml\n"
         "fields: {audience: developers}\n"
         "lenses:\n" +
         (lenses.empty() ? "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"
                           "  - {name: safety, prompt: lenses/safety.md, worker: fake}\n"
                         : lenses) +
         extra;
}

json review_doc_of(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j.is_discarded() ? json::object() : j;
}

void expect_valid_report(const json& doc) {
  static const auto schema =
      JsonSchema::load_file((source_dir() / "schemas" / "review-report.schema.json").string());
  ASSERT_TRUE(schema) << schema.error().message;
  auto problems = schema->validate(doc);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems[0]) << "\n" << doc.dump(2);
}

struct Reviewed {
  int exit_code = -1;
  json doc;
  std::string err;
};

Reviewed review(const Project& p, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"review", "--config", "RUN.yaml", "--yes", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_orch(args, p.path());
  Reviewed out{r.exit_code, review_doc_of(r.out), r.err};
  if (out.doc.contains("id")) expect_valid_report(out.doc);
  return out;
}

// The Markdown report orch wrote beside the ledger.
std::string review_markdown_of(const Project& p, const json& doc) {
  return read_file(p.d / ".orch" / "reviews" / (doc["id"].get<std::string>() + ".md"));
}

const json* find_finding(const json& doc, const std::string& locus) {
  for (const auto& f : doc["findings"])
    if (f["locus"] == locus) return &f;
  return nullptr;
}

TEST(CliReview, TheGateGivesBlockReviseAndPassAndTheExitCodeFollows) {
  const std::string one_round = "max_rounds: 1\ndry_rounds: 1\n";
  {
    Project p({{"reviewer", {{"safety", {{"default", answer({kBuffer})}}}}}}, run_yaml(one_round));
    auto r = review(p);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.doc["verdict"], "BLOCK");
    EXPECT_EQ(r.doc["status"], "failed");
    EXPECT_EQ(r.doc["rounds"][0]["counts"]["critical"], 1);
    EXPECT_EQ(r.doc["score"]["score"], 75);  // 100 - 25 for a CRITICAL (the shipped rubric)
  }
  {
    Project p({{"reviewer", {{"correctness", {{"default", answer({kArgc})}}}}}}, run_yaml(one_round));
    auto r = review(p);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.doc["verdict"], "REVISE");
  }
  {
    Project p(
        {{"reviewer", {{"correctness", {{"default", answer({finding("title", "nit", "terse title")})}}}}}},
        run_yaml(one_round));
    auto r = review(p);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.doc["verdict"], "PASS");
    EXPECT_EQ(r.doc["status"], "passed");
    EXPECT_EQ(r.doc["rounds"][0]["counts"]["nit"], 1);
    // Both lenses ran in round 1, with their prompts' fields filled.
    EXPECT_EQ(p.count_calls("reviewer correctness 1 1"), 1);
    EXPECT_EQ(p.count_calls("reviewer safety 1 1"), 1);
    const std::string prompt = read_file(p.d / "prompts" / "reviewer-correctness-r1-a1.txt");
    EXPECT_NE(prompt.find("Review for correctness errors. The reader is developers."), std::string::npos)
        << prompt;
  }
}

TEST(CliReview, TwoLensesReportingOneDefectAtDifferentLinesMakeOneFinding) {
  json shifted = kArgc;
  shifted["line"] = 4;
  shifted["severity"] = "minor";  // the more severe copy is kept
  Project p(
      {{"reviewer",
        {{"correctness", {{"default", answer({kArgc})}}}, {"safety", {{"default", answer({shifted})}}}}}},
      run_yaml("max_rounds: 1\ndry_rounds: 1\n"));
  auto r = review(p);
  ASSERT_EQ(r.doc["rounds"][0]["findings"].size(), 1u) << r.doc.dump(2);
  const json& f = r.doc["rounds"][0]["findings"][0];
  EXPECT_EQ(f["severity"], "MAJOR");
  EXPECT_EQ(f["lenses"], json({"correctness", "safety"}));
  EXPECT_EQ(r.doc["rounds"][0]["counts"]["major"], 1);
}

TEST(CliReview, AFabricatedQuoteIsCaughtAndKeptOutOfTheGate) {
  json fabricated = finding("parse_args", "CRITICAL", "frees the buffer twice", "free(buf); free(buf);");
  Project p({{"reviewer", {{"safety", {{"default", answer({fabricated})}}}}}},
            run_yaml("max_rounds: 1\ndry_rounds: 1\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.doc["verdict"], "PASS");
  EXPECT_EQ(r.doc["rounds"][0]["counts"]["excluded"], 1);
  const json* f = find_finding(r.doc, "parse_args");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE((*f)["unverified"].get<bool>());
  EXPECT_EQ((*f)["history"][0]["status"], "unverified");
}

TEST(CliReview, TheJudgesHallucinatedCriticalIsDroppedAndAGroundedOneKept) {
  json invented = finding("main", "CRITICAL", "main leaks the config file handle");
  json grounded = finding("copy_name", "CRITICAL", "copy_name overflows its buffer");
  json scenario = {
      {"reviewer", {{"correctness", {{"default", answer({kArgc})}}}}},
      {"judge", {{"default", answer({kArgc, invented, grounded})}}},
      {"verifier",
       {{{"match", "leaks the config"},
         {"answer", {{"verdict", "confirmed"}, {"evidence", "fclose(config) is never called"}}}},
        {{"match", "overflows its buffer"},
         {"answer",
          {{"verdict", "confirmed"}, {"evidence", "holds 16 bytes but the name may be longer"}}}}}}};
  Project p(scenario,
            run_yaml("max_rounds: 1\ndry_rounds: 1\njudge: {worker: fake}\nverifier: {worker: fake}\n"));
  auto r = review(p);
  const json& round = r.doc["rounds"][0];
  EXPECT_EQ(round["judge"]["introduced"].size(), 2u) << round.dump(2);
  ASSERT_EQ(round["judge"]["hallucinated"].size(), 1u);
  ASSERT_EQ(round["judge"]["grounded"].size(), 1u);
  const json* bad = find_finding(r.doc, "main");
  const json* good = find_finding(r.doc, "copy_name");
  ASSERT_TRUE(bad && good);
  EXPECT_TRUE((*bad)["judge_hallucinated"].get<bool>());
  EXPECT_EQ((*good)["verdict"], "confirmed");
  // The verdict is recomputed without the hallucination: the grounded CRITICAL blocks.
  EXPECT_EQ(round["verdict"], "BLOCK");
  EXPECT_EQ(round["counts"]["critical"], 1);
  EXPECT_EQ(round["counts"]["excluded"], 1);
  // Each claim went to the verifier in its own step; the lenses' MAJOR was not re-checked.
  EXPECT_EQ(p.count_calls("verifier"), 2);
  EXPECT_NE(review_markdown_of(p, r.doc).find("[JUDGE-HALLUCINATED]"), std::string::npos);
}

// Round 1 finds a MAJOR that the fixer fixes; rounds 2 and 3 add nothing new:
// converged at round 3 (two dry rounds), PASS, exit 0.
TEST(CliReview, ConvergesAfterTwoDryRoundsAtAKnownRound) {
  json scenario = {
      {"reviewer", {{"correctness", {{"1", answer({kArgc})}, {"default", answer({})}}}}},
      {"fixer",
       {{"default",
         {{"edits",
           {{{"file", "doc.md"}, {"replace", "without checking argc"}, {"with", "after checking argc"}}}},
          {"raw", "checked argc first"}}}}}};
  Project p(scenario, run_yaml("fixer: {worker: fake}\nverify: grep -q 'after checking argc' doc.md\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.doc.dump(2);
  ASSERT_EQ(r.doc["rounds"].size(), 3u);
  EXPECT_EQ(r.doc["rounds"][0]["verdict"], "REVISE");
  EXPECT_EQ(r.doc["rounds"][0]["fix"]["status"], "applied");
  EXPECT_EQ(r.doc["rounds"][0]["fix"]["to_fix"].size(), 1u);
  EXPECT_EQ(r.doc["rounds"][1]["dry"], true);
  EXPECT_EQ(r.doc["rounds"][2]["final"], true);
  EXPECT_NE(r.doc["stop_reason"].get<std::string>().find("converged: 2 dry rounds in a row at round 3"),
            std::string::npos);
  EXPECT_NE(read_file(p.d / "doc.md").find("after checking argc"), std::string::npos);
  EXPECT_EQ((*find_finding(r.doc, "parse_args"))["state"], "gone");
  // Each round is a fresh context: round 2's prompts carry nothing of round 1's findings.
  EXPECT_EQ(read_file(p.d / "prompts" / "reviewer-correctness-r2-a1.txt").find("argc"), std::string::npos);
}

// Every round adds a new MAJOR: the loop never converges and max_rounds ends it.
TEST(CliReview, MaxRoundsBoundsALoopThatDoesNotConverge) {
  json per_round = json::object();
  for (int i = 1; i <= 3; ++i)
    per_round[std::to_string(i)] =
        answer({finding(fmt::format("step{}", i), "MAJOR", fmt::format("defect {}", i))});
  Project p({{"reviewer", {{"correctness", per_round}}}}, run_yaml("max_rounds: 3\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.doc["rounds"].size(), 3u);
  EXPECT_EQ(r.doc["status"], "failed");
  EXPECT_NE(r.doc["stop_reason"].get<std::string>().find("max_rounds (3) reached"), std::string::npos)
      << r.doc["stop_reason"];
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.doc["rounds"][i]["new_blocking"], 1);
}

// The fixer "fixes" the mechanical MAJOR without effect: it is there in rounds 1
// and 3, so round 3 escalates it (two-strikes), round 3's fix is not given it, and
// the review ends escalated (exit 3).
TEST(CliReview, TwoStrikesEscalatesAFindingThatSurvivesRoundsNAndNPlus2) {
  json scenario = {{"reviewer", {{"correctness", {{"default", answer({kArgc})}}}}},
                   {"fixer", {{"default", {{"raw", "done (not really)"}}}}}};
  Project p(scenario, run_yaml("fixer: {worker: fake}\nverify: 'true'\ndry_rounds: 3\nmax_rounds: 4\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 3) << r.err << r.doc.dump(2);
  EXPECT_EQ(r.doc["status"], "escalated");
  ASSERT_EQ(r.doc["escalations"].size(), 1u);
  EXPECT_EQ(r.doc["escalations"][0]["round"], 3);
  const json& rounds = r.doc["rounds"];
  EXPECT_EQ(rounds[0]["fix"]["status"], "applied");
  EXPECT_EQ(rounds[1]["fix"]["status"], "applied");
  // Round 3: escalated, so listed for the human and not patched a third time.
  EXPECT_EQ(rounds[2]["escalated"].size(), 1u);
  EXPECT_TRUE(rounds[2]["fix"]["to_fix"].empty());
  EXPECT_EQ(rounds[2]["fix"]["for_human"].size(), 1u);
  EXPECT_EQ(p.count_calls("fixer"), 2);
  EXPECT_EQ((*find_finding(r.doc, "parse_args"))["state"], "escalated");
}

// Each call costs 1000 tokens and reserves 1000: with a cap of 2500, round 2's
// reviewer cannot start. The review stops and asks (exit 3) with the report so
// far; --resume with a higher cap goes on from there.
TEST(CliReview, TheSpendCapStopsAndAsksAndAHigherCapResumes) {
  json scenario = {{"reviewer", {{"correctness", {{"1", answer({kArgc})}, {"default", answer({})}}}}},
                   {"fixer", {{"default", {{"raw", "fixed"}}}}}};
  Project p(scenario,
            run_yaml("fixer: {worker: fake}\nverify: 'true'\nspend_cap_tokens: 2500\n",
                     "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"),
            "    reserve_tokens: 1000\n");
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 3) << r.err << r.doc.dump(2);
  EXPECT_EQ(r.doc["status"], "spend_cap");
  EXPECT_EQ(r.doc["rounds"].size(), 1u);
  EXPECT_EQ(r.doc["tokens"]["spent"], 2000);  // round 1's reviewer and fix; nothing overshot
  EXPECT_NE(r.doc["stop_reason"].get<std::string>().find("spend cap of 2500"), std::string::npos);
  const std::string id = r.doc["id"];

  auto again = run_orch({"review", "--resume", id, "--json"}, p.path());
  EXPECT_EQ(again.exit_code, 2) << "the same cap cannot go on: " << again.err;
  EXPECT_NE(again.err.find("--spend-cap"), std::string::npos) << again.err;

  auto resumed = run_orch({"review", "--resume", id, "--spend-cap", "20000", "--json"}, p.path());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  json doc = review_doc_of(resumed.out);
  expect_valid_report(doc);
  EXPECT_EQ(doc["status"], "passed");
  EXPECT_EQ(doc["rounds"].size(), 3u);
  EXPECT_EQ(doc["tokens"]["cap"], 20000);
  EXPECT_EQ(p.count_calls("reviewer correctness 1"), 1) << "round 1 is not run again";
  // The plan the stopped phase was resumed with (its budget raised) is kept in
  // that run's folder of the store: .orch/reviews/ holds review documents only,
  // so whatever reads every .json there as a report finds nothing else.
  for (const auto& e : fs::directory_iterator(p.d / ".orch" / "reviews")) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == id + ".json" || name == id + ".md") << name;
    if (name.ends_with(".json")) expect_valid_report(review_doc_of(read_file(e.path())));
  }
  const std::string raised_run = doc["rounds"][1]["runs"]["reviewers"];
  EXPECT_TRUE(fs::exists(p.d / ".orch" / "runs" / raised_run / "spend-cap-plan.json"));
}

// The first of two reviewers reports more than the whole cap: the phase's run
// stops ("tokens: 5000 spent of 3000") and the review with it. Resumed with a
// cap raised, but not past what was spent, it stops again and says so about the
// cap it has now; before, it quoted that run's reason under the old cap.
TEST(CliReview, ACapRaisedButNotPastTheSpendIsTheCapTheReportNames) {
  json costly = answer({});
  costly["tokens"] = 5000;
  Project p({{"reviewer", {{"correctness", {{"default", costly}}}}}},
            run_yaml("spend_cap_tokens: 3000\nmax_parallel: 1\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 3) << r.err << r.doc.dump(2);
  ASSERT_EQ(r.doc["status"], "spend_cap");
  EXPECT_TRUE(r.doc["rounds"].empty()) << "round 1's phase is the one stopped";
  EXPECT_NE(r.doc["stop_reason"].get<std::string>().find("5000 spent of 3000"), std::string::npos)
      << r.doc["stop_reason"];
  EXPECT_EQ(p.count_calls("reviewer safety"), 0);
  const std::string id = r.doc["id"];

  auto raised = run_orch({"review", "--resume", id, "--spend-cap", "4000", "--json"}, p.path());
  EXPECT_EQ(raised.exit_code, 3) << raised.err;
  const json doc = review_doc_of(raised.out);
  expect_valid_report(doc);
  EXPECT_EQ(doc["status"], "spend_cap");
  EXPECT_EQ(doc["tokens"], json({{"spent", 5000}, {"cap", 4000}}));
  const std::string why = doc["stop_reason"];
  EXPECT_NE(why.find("the spend cap of 4000 tokens was reached"), std::string::npos) << why;
  EXPECT_NE(why.find("round 1 (reviewers) with 5000 spent: nothing is left of the spend cap"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("3000"), std::string::npos) << "the old cap is not the one now: " << why;
  const std::string md = review_markdown_of(p, doc);
  EXPECT_EQ(md.find("3000"), std::string::npos) << md;
  EXPECT_NE(md.find("5000 spent of a 4000 cap"), std::string::npos) << md;

  auto past = run_orch({"review", "--resume", id, "--spend-cap", "50000", "--json"}, p.path());
  EXPECT_EQ(past.exit_code, 0) << past.err;
  const json done = review_doc_of(past.out);
  EXPECT_EQ(done["status"], "passed");
  EXPECT_EQ(done["stop_reason"].get<std::string>().find("spend cap"), std::string::npos)
      << done["stop_reason"];
  EXPECT_EQ(p.count_calls("reviewer correctness 1"), 1) << "the reviewer that answered is not asked again";
  EXPECT_EQ(p.count_calls("reviewer safety 1"), 1);
}

// One reviewer answers prose first and valid JSON when told the validation
// errors (repaired); another never answers valid JSON (failed): INCOMPLETE.
TEST(CliReview, InvalidReviewerOutputGetsOneRepairAndAFailedLensMakesTheRoundIncomplete) {
  json bad_severity = finding("title", "SEVERE", "x");
  json scenario = {
      {"reviewer",
       {{"correctness", {{"default", {{"attempts", {{{"raw", "Looks fine to me!"}}, answer({kArgc})}}}}}},
        {"safety", {{"default", answer({bad_severity})}}}}}};
  Project p(scenario, run_yaml("max_rounds: 1\ndry_rounds: 1\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json& round = r.doc["rounds"][0];
  EXPECT_EQ(round["verdict"], "INCOMPLETE");
  EXPECT_EQ(round["failed_lenses"], 1);
  EXPECT_EQ(round["reviewers"][0]["status"], "repaired");
  EXPECT_EQ(round["reviewers"][0]["attempts"], 2);
  EXPECT_EQ(round["reviewers"][1]["status"], "failed");
  EXPECT_NE(round["reviewers"][1]["reason"].get<std::string>().find("/findings/0/severity"),
            std::string::npos)
      << round["reviewers"][1]["reason"];
  EXPECT_EQ(p.count_calls("reviewer safety 1"), 2) << "one repair attempt, no more";
  // The repair attempt was told why the first failed.
  const std::string repair = read_file(p.d / "prompts" / "reviewer-correctness-r1-a2.txt");
  EXPECT_NE(repair.find("The previous attempt failed"), std::string::npos);
  EXPECT_NE(repair.find("result_json: the result is not JSON"), std::string::npos) << repair;
  // The repaired reviewer's finding still counts.
  EXPECT_EQ(round["counts"]["major"], 1);
}

// A reviewer whose CLI is not installed is a set-up error the pre-flight
// catches: exit 2, every role that cannot start named, nothing run or recorded
// (before, every lens FAILED in every round and the review scored 100).
TEST(CliReview, AReviewerThatCannotStartIsASetUpErrorBeforeAnythingRuns) {
  Project p(json::object(),
            run_yaml("judge: {worker: absent}\nverifier: {worker: fake}\n",
                     "  - {name: correctness, prompt: lenses/correctness.md, worker: absent}\n"
                     "  - {name: safety, prompt: lenses/safety.md, worker: fake}\n"),
            "  absent:\n    argv: [orch-test-no-such-agent, -p, \"{prompt}\"]\n");
  auto r = run_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("2 of the review's roles cannot start, so nothing was run"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("lens 'correctness': worker 'absent': cannot run 'orch-test-no-such-agent'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("judge: worker 'absent'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("lens 'safety'"), std::string::npos) << r.err;
  EXPECT_TRUE(p.calls().empty()) << "nothing launched";
  EXPECT_FALSE(fs::exists(p.d / ".orch" / "orch.db")) << "nothing recorded";
}

// A review in which no lens produced findings has nothing to score: its score
// is null and its report says INCOMPLETE, never "Quality score: 100"; a failed
// lens is listed under the table, whose rows keep their nine cells.
TEST(CliReview, AReviewInWhichEveryLensFailedHasNoScore) {
  json scenario = {{"reviewer",
                    {{"correctness", {{"default", {{"raw", "I cannot | review this"}}}}},
                     {"safety", {{"default", {{"exit", 1}, {"raw", "crashed"}}}}}}}};
  Project p(scenario, run_yaml("max_rounds: 2\ndry_rounds: 1\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.doc["verdict"], "INCOMPLETE");
  ASSERT_TRUE(r.doc.contains("score"));
  EXPECT_TRUE(r.doc["score"].is_null()) << r.doc["score"];
  const std::string md = review_markdown_of(p, r.doc);
  EXPECT_EQ(md.find("Quality score:** 100"), std::string::npos) << md;
  EXPECT_NE(md.find("Quality score:** none (INCOMPLETE"), std::string::npos) << md;
  EXPECT_NE(md.find("- round 1, lens `safety`:"), std::string::npos) << md;
  std::istringstream lines(md);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("| ")) continue;
    ++rows;
    EXPECT_EQ(std::count(line.begin(), line.end(), '|'), 10) << line;
  }
  EXPECT_GE(rows, 2) << md;
}

// A score is that of the last round in which every lens ran.
TEST(CliReview, TheScoreIsThatOfTheLastCompleteRound) {
  json scenario = {{"reviewer",
                    {{"correctness", {{"1", answer({kBuffer})}, {"default", {{"raw", "no"}}}}},
                     {"safety", {{"default", answer({})}}}}}};
  Project p(scenario, run_yaml("max_rounds: 2\ndry_rounds: 2\nfixer: off\n"));
  auto r = review(p);
  ASSERT_EQ(r.doc["rounds"].size(), 2u) << r.doc.dump(2);
  EXPECT_EQ(r.doc["rounds"][1]["verdict"], "INCOMPLETE");
  EXPECT_EQ(r.doc["score"]["score"], 75);
  EXPECT_EQ(r.doc["score"]["round"], 1);
  EXPECT_NE(review_markdown_of(p, r.doc).find("from round 1, the last in which every lens ran"),
            std::string::npos);
}

// The fixer inserts lines above the finding without fixing it: round 2 reports
// it at another line, and it is the same finding (same id, not new).
// Reviews launched at once from one RUN.yaml (the same second, the same name)
// each get an id of their own: none fails on the ledger's unique id.
TEST(CliReview, ReviewsLaunchedAtOnceEachGetTheirOwnId) {
  Project p({{"reviewer", {{"safety", {{"default", answer({})}}}}}},
            run_yaml("max_rounds: 1\ndry_rounds: 1\n"));
  std::vector<pid_t> pids;
  for (int i = 0; i < 4; ++i)
    pids.push_back(orch::testing::spawn_orch({"review", "--config", "RUN.yaml", "--yes", "--json"}, p.path(),
                                             p.d / fmt::format("out{}.txt", i)));
  std::set<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    const int code = orch::testing::wait_exit(pids[static_cast<std::size_t>(i)]);
    const std::string out = read_file(p.d / fmt::format("out{}.txt", i));
    EXPECT_EQ(code, 0) << out;
    const auto start = out.find('{');
    ASSERT_NE(start, std::string::npos) << out;
    ids.insert(review_doc_of(out.substr(start))["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 4u);
}

TEST(CliReview, FindingIdsAreStableUnderALineShift) {
  json moved = kArgc;
  moved["line"] = 6;
  json scenario = {
      {"reviewer", {{"correctness", {{"1", answer({kArgc})}, {"default", answer({moved})}}}}},
      {"fixer",
       {{"default",
         {{"edits", {{{"file", "doc.md"}, {"replace", "# Parser\n"}, {"with", "# Parser\n\nIntro.\n\n"}}}},
          {"raw", "ok"}}}}}};
  Project p(scenario, run_yaml("fixer: {worker: fake}\nverify: 'true'\nmax_rounds: 2\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  auto r = review(p);
  const json& rounds = r.doc["rounds"];
  ASSERT_EQ(rounds.size(), 2u) << r.doc.dump(2);
  EXPECT_EQ(rounds[0]["findings"][0]["line"], 3);
  EXPECT_EQ(rounds[1]["findings"][0]["line"], 6);
  EXPECT_EQ(rounds[0]["findings"][0]["id"], rounds[1]["findings"][0]["id"]);
  EXPECT_EQ(rounds[1]["new_blocking"], 0);
  EXPECT_EQ(rounds[1]["dry"], true);
  ASSERT_EQ(r.doc["findings"].size(), 1u);
  EXPECT_EQ(r.doc["findings"][0]["history"].size(), 2u);
}

// The fixer's edit breaks the verify command: the artifact is put back exactly
// as it was, and the round records the rollback with the failed check.
TEST(CliReview, AFixThatBreaksTheVerifyCommandIsRolledBack) {
  json scenario = {{"reviewer", {{"correctness", {{"default", answer({kArgc})}}}}},
                   {"fixer",
                    {{"default",
                      {{"edits", {{{"file", "doc.md"}, {"replace", "# Parser"}, {"with", "# BROKEN"}}}},
                       {"raw", "ok"}}}}}};
  Project p(scenario, run_yaml("fixer: {worker: fake}\nverify: grep -q '^# Parser' doc.md\nmax_rounds: 2\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  auto r = review(p);
  const json& fix = r.doc["rounds"][0]["fix"];
  EXPECT_EQ(fix["status"], "rolled_back") << fix.dump(2);
  EXPECT_NE(fix["reason"].get<std::string>().find("shell_zero"), std::string::npos) << fix["reason"];
  EXPECT_EQ(read_file(p.d / "doc.md"), kDoc);
  EXPECT_EQ(p.count_calls("fixer"), 1);
}

// A finding may name any file of the workspace, not only an artifact: the fix
// step's `writes` cover every file the fixer is given findings on, so a fix that
// breaks the verify command is rolled back in all of them. Before, notes.txt kept
// the fixer's edit, round 2's quote no longer matched, and the review PASSed.
TEST(CliReview, ARolledBackFixRestoresEveryFileItWasGivenFindingsOn) {
  json notes = finding("intro", "MAJOR", "the notes repeat the argc defect", "argc is never checked", true);
  notes["file"] = "notes.txt";
  json scenario = {
      {"reviewer", {{"correctness", {{"default", answer({notes})}}}}},
      {"fixer",
       {{"default",
         {{"edits",
           {{{"file", "notes.txt"}, {"replace", "argc is never checked"}, {"with", "argc is checked"}},
            {{"file", "doc.md"}, {"replace", "# Parser"}, {"with", "# BROKEN"}}}},
          {"raw", "ok"}}}}}};
  Project p(scenario, run_yaml("fixer: {worker: fake}\nverify: grep -q '^# Parser' doc.md\nmax_rounds: 2\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  const std::string kNotes = "Open points: argc is never checked in parse_args.\n";
  write_file(p.d / "notes.txt", kNotes);
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.doc["rounds"][0]["fix"]["status"], "rolled_back") << r.doc["rounds"][0]["fix"].dump(2);
  EXPECT_EQ(read_file(p.d / "notes.txt"), kNotes) << "the finding's file is restored with the artifacts";
  EXPECT_EQ(read_file(p.d / "doc.md"), kDoc);
  ASSERT_EQ(r.doc["rounds"].size(), 2u);
  EXPECT_EQ(r.doc["rounds"][1]["counts"]["major"], 1) << "the unfixed finding still counts";
  EXPECT_EQ(r.doc["verdict"], "REVISE");
}

// The fixer gets findings only on files a rollback can restore: one on a file
// outside the workspace, or in orch's own store, is for the human.
TEST(CliReview, AFindingOutsideTheWorkspaceOrInTheStoreIsNotGivenToTheFixer) {
  json outside = finding("intro", "MAJOR", "a file outside is wrong", "", true);
  outside["file"] = "../outside.txt";
  json store = finding("ledger", "MAJOR", "the ledger is wrong", "", true);
  store["file"] = ".orch/orch.db";
  json scenario = {{"reviewer", {{"correctness", {{"default", answer({outside, store})}}}}}};
  Project p(scenario, run_yaml("fixer: {worker: fake}\nverify: 'true'\nmax_rounds: 2\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json& fix = r.doc["rounds"][0]["fix"];
  EXPECT_EQ(fix["status"], "nothing_to_fix") << fix.dump(2);
  EXPECT_EQ(fix["for_human"].size(), 2u) << fix.dump(2);
  EXPECT_EQ(p.count_calls("fixer"), 0);
}

// A fixer that changes a file of another finding, one it was not given and a
// rollback does not restore, is caught: the review ends escalated (exit 3) naming
// the file. Before, the edit voided the finding's quote and the review PASSed.
TEST(CliReview, AFixerThatChangesAFileItWasNotGivenIsEscalated) {
  json notes = finding("intro", "MAJOR", "the notes repeat the argc defect", "argc is never checked", false);
  notes["file"] = "notes.txt";
  json edit = {{"file", "doc.md"}, {"replace", "without checking argc"}, {"with", "after checking argc"}};
  json scenario = {
      {"reviewer", {{"correctness", {{"default", answer({kArgc, notes})}}}}},
      {"fixer",
       {{"default",
         {{"edits",
           {edit, {{"file", "notes.txt"}, {"replace", "argc is never checked"}, {"with", "argc is fine"}}}},
          {"raw", "ok"}}}}}};
  Project p(scenario,
            run_yaml("fixer: {worker: fake}\nverify: grep -q 'after checking argc' doc.md\nmax_rounds: 2\n",
                     "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  write_file(p.d / "notes.txt", "Open points: argc is never checked in parse_args.\n");
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.doc["status"], "escalated");
  ASSERT_EQ(r.doc["rounds"].size(), 1u) << "no round runs on files orch cannot vouch for";
  const json& fix = r.doc["rounds"][0]["fix"];
  EXPECT_EQ(fix["status"], "applied") << fix.dump(2);
  EXPECT_EQ(fix["changed_outside"], json::array({"notes.txt"})) << fix.dump(2);
  EXPECT_NE(r.doc["stop_reason"].get<std::string>().find("notes.txt"), std::string::npos)
      << r.doc["stop_reason"];
}

TEST(CliReview, PreFlightHaltsOnEveryUnresolvedFieldBeforeAnythingLaunches) {
  Project p(json::object(),
            "name: broken\n"
            "artifacts: [doc.md, missing.md]\n"
            "workers: workers.yaml\n"
            "lenses:\n"
            "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"
            "  - {name: style, prompt: lenses/none.md, worker: faek}\n"
            "judge: {worker: fake}\n");
  auto r = run_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("RUN.yaml:2: artifacts: 'missing.md': no such file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fields.audience: unresolved"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lenses[1].prompt: prompt file 'lenses/none.md'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no worker 'faek'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(did you mean 'fake'?)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("verifier: unresolved"), std::string::npos) << r.err;
  EXPECT_TRUE(p.calls().empty()) << "nothing launched";
  EXPECT_FALSE(fs::exists(p.d / ".orch" / "orch.db")) << "nothing recorded";
}

// `{{{{` in a lens prompt is a literal `{{`: a prompt can show a template's
// `{{user}}` to the reviewer (before, it was a field to fill, unresolved: exit 2).
TEST(CliReview, FourBracesInALensPromptReachTheReviewerAsTwo) {
  Project p(json::object(), run_yaml("max_rounds: 1\ndry_rounds: 1\n",
                                     "  - {name: style, prompt: lenses/jinja.md, worker: fake}\n"));
  write_file(p.d / "lenses" / "jinja.md", "Templates write {{{{user}} and {{{{ lens }}; this is {{lens}}.\n");
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string prompt = read_file(p.d / "prompts" / "reviewer-style-r1-a1.txt");
  EXPECT_NE(prompt.find("Templates write {{user}} and {{ lens }}; this is style."), std::string::npos)
      << prompt;
}

// A lens prompt or rubric that cannot be read is named once, as RUN.yaml names it.
TEST(CliReview, AMissingLensPromptOrRubricIsNamedOnce) {
  Project p(json::object(), run_yaml("rubric: no-rubric.yaml\n",
                                     "  - {name: style, prompt: lenses/none.md, worker: fake}\n"));
  auto r = run_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("lenses[0].prompt: prompt file 'lenses/none.md': cannot open: "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rubric: 'no-rubric.yaml': cannot open: "), std::string::npos) << r.err;
  for (const std::string name : {"none.md", "no-rubric.yaml"}) {
    const std::size_t first = r.err.find(name);
    EXPECT_NE(first, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(name, first + 1), std::string::npos) << name << " is named twice: " << r.err;
  }
}

TEST(CliReview, ABadRunYamlIsRefusedWithLinesAndFields) {
  Project p(json::object(),
            "artifacts: [doc.md]\n"
            "lenses:\n"
            "  - {name: correctness, prompt: lenses/correctness.md}\n"
            "max_round: 3\n"
            "dry_rounds: zero\n");
  auto r = run_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("RUN.yaml:3: lenses[0]: needs 'worker: NAME' or 'model: NAME'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("RUN.yaml:4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'max_rounds'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("RUN.yaml:5: dry_rounds"), std::string::npos) << r.err;

  // A model as the fixer gets its one plain message, not the schema's mismatch.
  write_file(p.d / "RUN.yaml", run_yaml("verify: \"true\"\nfixer: {model: m}\n"));
  auto model_fixer = run_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path());
  EXPECT_EQ(model_fixer.exit_code, 2) << model_fixer.err;
  EXPECT_NE(model_fixer.err.find("fixer: a model cannot edit files"), std::string::npos) << model_fixer.err;
  EXPECT_EQ(model_fixer.err.find("schemas/review-config.schema.json"), std::string::npos) << model_fixer.err;
}

// Without --yes and with no terminal to ask on, the review is not launched.
TEST(CliReview, WithoutYesAndNoTerminalNothingIsLaunched) {
  Project p({{"reviewer", json::object()}}, run_yaml(""));
  auto r = run_orch({"review", "--config", "RUN.yaml"}, p.path());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("Pre-Flight Report: review 'parser doc'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 x 1 reviewer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("estimated"), std::string::npos) << r.out;
  // The fake reviewer reports no usage: the cap cannot see its spend, and says so.
  EXPECT_NE(r.out.find("WARNING: the spend cap cannot see what worker:fake spends"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("--yes"), std::string::npos) << r.err;
  EXPECT_TRUE(p.calls().empty());
  // Listing reviews where there is no ledger lists none and makes none.
  auto list = run_orch({"review", "--list", "--json"}, p.path());
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(review_doc_of(list.out), json::array());
  EXPECT_FALSE(fs::exists(p.d / ".orch" / "orch.db"));
}

// kill -9 while round 1's second reviewer works; --resume continues the round:
// the reviewer that finished is not asked again, the interrupted one is, and the
// review ends as an uninterrupted one would.
TEST(CliReview, KillMinus9MidRoundThenResumeContinuesTheRound) {
  json slow_then_answer = {
      {"attempts", json::array({json{{"sleep", 30}, {"raw", "slow"}}, answer({kBuffer})})}};
  json scenario = json::object();
  scenario["reviewer"]["correctness"]["default"] = answer({kArgc});
  scenario["reviewer"]["safety"]["1"] = slow_then_answer;
  Project p(scenario, run_yaml("max_rounds: 1\ndry_rounds: 1\nmax_parallel: 1\n"));
  pid_t pid = orch::testing::spawn_orch({"review", "--config", "RUN.yaml", "--yes", "--json"}, p.path(),
                                        p.d / "out.txt");
  ASSERT_TRUE(orch::testing::wait_for([&] { return p.count_calls("reviewer safety 1 1") == 1; }, 30000))
      << read_file(p.d / "out.txt");
  kill(pid, SIGKILL);
  orch::testing::wait_exit(pid);
  EXPECT_EQ(p.count_calls("reviewer correctness 1"), 1);

  auto list = run_orch({"review", "--list", "--json"}, p.path());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  json reviews = review_doc_of(list.out);
  ASSERT_EQ(reviews.size(), 1u);
  EXPECT_EQ(reviews[0]["status"], "running");
  const std::string id = reviews[0]["id"];

  auto r = run_orch({"review", "--resume", id, "--json"}, p.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  json doc = review_doc_of(r.out);
  expect_valid_report(doc);
  EXPECT_EQ(doc["verdict"], "BLOCK");
  EXPECT_EQ(doc["rounds"].size(), 1u);
  EXPECT_EQ(doc["rounds"][0]["counts"]["critical"], 1);
  EXPECT_EQ(doc["rounds"][0]["counts"]["major"], 1);
  EXPECT_EQ(p.count_calls("reviewer correctness 1"), 1) << "the finished reviewer is not asked again";
  EXPECT_EQ(p.count_calls("reviewer safety 1 2"), 1) << "the interrupted one is";

  auto shown = run_orch({"review", "--show", id}, p.path());
  EXPECT_EQ(shown.exit_code, 0);
  EXPECT_NE(shown.out.find("| 1 | BLOCK |"), std::string::npos) << shown.out;
  auto ended = run_orch({"review", "--resume", id}, p.path());
  EXPECT_EQ(ended.exit_code, 2) << "an ended review is not resumed";
}

// A lens played by a model: one chat call to an OpenAI-compatible provider (our
// fake, real HTTP on 127.0.0.1) with the artifact's text in the prompt; the
// usage it reports is charged, and the pre-flight prices the calls.
TEST(CliReview, ALensPlayedByAModelGetsTheArtifactAndIsCharged) {
  orch::testing::FakeLlmServer server("sk-review-123456");
  ASSERT_TRUE(server.started());
  Project p(json::object(), run_yaml("max_rounds: 1\ndry_rounds: 1\nmodels: models.yaml\n",
                                     "  - {name: llm_lens, prompt: lenses/model.md, model: m}\n"));
  write_file(p.d / "models.yaml",
             fmt::format(
                 "providers:\n  fake: {{api: openai, base_url: \"{}/v1\", api_key_env: ORCH_TEST_REVIEW_KEY, "
                 "timeout: 10s}}\nmodels:\n  m: {{provider: fake, model: review-test, max_tokens: 500, "
                 "price_in: 1.0, price_out: 2.0}}\n",
                 server.url()));
  write_file(p.d / "lenses" / "model.md",
             "Review it. [[usage: 300 50]] [[json: " + answer({kArgc}).dump() + "]]\n");
  auto r = run_orch({"review", "--config", "RUN.yaml", "--yes", "--json"}, p.path(),
                    {{"ORCH_TEST_REVIEW_KEY", server.api_key()}});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  json doc = review_doc_of(r.out);
  expect_valid_report(doc);
  EXPECT_EQ(doc["verdict"], "REVISE");
  EXPECT_EQ(doc["tokens"]["spent"], 350);
  EXPECT_NE(r.err.find("estimated cost ~$"), std::string::npos)
      << "--json prints the pre-flight on stderr: " << r.err;
  const json requests = server.requests();
  ASSERT_EQ(requests.size(), 1u) << requests.dump(2);
  EXPECT_NE(requests[0]["body"].dump().find("reads argv[1] without checking argc"), std::string::npos)
      << "a model cannot read the workspace: the artifact's text is in its prompt";
}

// The judge may downgrade and merge, but a finding it just leaves out is kept; a
// judge that fails leaves the lenses' findings as they were.
TEST(CliReview, TheJudgeMergesAndDowngradesButCannotDropAndItsFailureChangesNothing) {
  json style = finding("title", "MINOR", "the title says nothing", "# Parser");
  json argc_as_minor = kArgc;
  argc_as_minor["severity"] = "MINOR";
  json twin = finding("parse_args", "MAJOR", "argc is never compared to 2");  // the same defect, another id
  json scenario = {{"reviewer",
                    {{"correctness", {{"default", answer({kArgc, twin})}}},
                     {"safety", {{"default", answer({kBuffer, style})}}}}}};
  // Round 1's judge: downgrades argc, merges its twin into it, leaves out the
  // CRITICAL and the style finding without a word.
  json judge = answer({argc_as_minor});
  scenario["judge"] = {{"default", judge}};
  Project p(scenario,
            run_yaml("max_rounds: 1\ndry_rounds: 1\njudge: {worker: fake}\nverifier: {worker: fake}\n"));
  // The judge names the twin's id as merged into argc's: the ids orch gives them
  // are read from a first review.
  auto first = review(p);
  std::string argc_id_seen, twin_id;
  for (const auto& f : first.doc["rounds"][0]["findings"]) {
    if (f["claim"] == kArgc["claim"]) argc_id_seen = f["id"];
    if (f["claim"] == twin["claim"]) twin_id = f["id"];
  }
  ASSERT_FALSE(argc_id_seen.empty());
  ASSERT_FALSE(twin_id.empty()) << first.doc["rounds"][0].dump(2);
  judge["merged"] = {{twin_id, argc_id_seen}};
  scenario["judge"] = {{"default", judge}};
  write_file(p.d / "scenario.json", scenario.dump(2));
  auto r = review(p);
  const json& jd = r.doc["rounds"][0]["judge"];
  EXPECT_EQ(jd["status"], "ok");
  EXPECT_EQ(jd["downgraded"], json({argc_id_seen}));
  EXPECT_EQ(jd["merged"], json({{twin_id, argc_id_seen}}));
  EXPECT_EQ(jd["kept"].size(), 2u) << "the CRITICAL and the style finding stay: " << jd.dump(2);
  EXPECT_EQ(r.doc["rounds"][0]["verdict"], "BLOCK") << "the CRITICAL the judge left out still blocks";
  EXPECT_EQ(r.doc["rounds"][0]["counts"]["minor"], 2);

  // A judge that never answers valid JSON: the lenses' findings stand.
  scenario["judge"] = {{"default", {{"raw", "I am not sure."}}}};
  write_file(p.d / "scenario.json", scenario.dump(2));
  auto failed = review(p);
  EXPECT_EQ(failed.doc["rounds"][0]["judge"]["status"], "failed");
  EXPECT_EQ(failed.doc["rounds"][0]["verdict"], "BLOCK");
  EXPECT_EQ(failed.doc["rounds"][0]["counts"]["major"], 2);
}

// The id orch gives a finding of the fake reviewer (no rule: the claim is the
// key), as docs/review.md defines it: the first 12 hex digits of FNV-1a 64.
std::string id_of(const json& f) {
  std::string claim = f["claim"];
  for (char& c : claim) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return fingerprint_of(
             fmt::format("{}\n{}\n{}", f["file"].get<std::string>(), f["locus"].get<std::string>(), claim))
      .substr(0, 12);
}

// A lens's CRITICAL, judged by `judge` (and its claims by `verifier`), in one round.
Reviewed judge_the_buffer_critical(const json& judge, const json& verifier = json::array()) {
  Project p({{"reviewer", {{"safety", {{"default", answer({kBuffer})}}}}},
             {"judge", {{"default", judge}}},
             {"verifier", verifier}},
            run_yaml("max_rounds: 1\ndry_rounds: 1\njudge: {worker: fake}\nverifier: {worker: fake}\n"));
  auto r = review(p);
  if (r.doc.contains("id")) r.err += "\n" + review_markdown_of(p, r.doc);
  return r;
}

// The round still BLOCKs on the lens's CRITICAL, as the lens reported it.
void expect_the_buffer_critical_blocks(const Reviewed& r) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.doc["verdict"], "BLOCK") << r.doc["rounds"][0].dump(2);
  const json* f = find_finding(r.doc, "copy_name");
  ASSERT_NE(f, nullptr) << r.doc.dump(2);
  EXPECT_EQ((*f)["id"], id_of(kBuffer));
  EXPECT_EQ((*f)["severity"], "CRITICAL");
  EXPECT_EQ((*f)["evidence"], kBuffer["evidence"]);
  EXPECT_FALSE((*f)["unverified"].get<bool>());
  EXPECT_FALSE(f->contains("verdict")) << f->dump(2);
  EXPECT_EQ((*f)["history"][0]["status"], "counted");
  // Its line of the Markdown report carries no tag.
  const std::size_t at = r.err.find(fmt::format("`{}`", id_of(kBuffer)));
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  EXPECT_EQ(line.find('['), std::string::npos) << line;
}

// A merge folds a finding into a kept, counted lens finding at least as severe;
// any other merge is refused and the finding stays as the lenses reported it.
TEST(CliReview, TheJudgeCannotMergeALensCriticalAway) {
  // Into a NIT the judge made up, with a quote that is not in the file.
  json invented_nit = finding("title", "NIT", "the title is vague", "# Parser of everything ever written");
  json judge = answer({invented_nit});
  judge["merged"] = {{id_of(kBuffer), id_of(invented_nit)}};
  {
    auto r = judge_the_buffer_critical(judge);
    expect_the_buffer_critical_blocks(r);
    const json& jd = r.doc["rounds"][0]["judge"];
    EXPECT_TRUE(jd["merged"].empty()) << jd.dump(2);
    EXPECT_EQ(jd["merge_refused"], json({{id_of(kBuffer), id_of(invented_nit)}})) << jd.dump(2);
    EXPECT_EQ(jd["kept"], json({id_of(kBuffer)}));
  }
  // Into a CRITICAL the judge made up, which the claim verifier refutes.
  json invented = finding("main", "CRITICAL", "main leaks the config file handle");
  judge = answer({invented});
  judge["merged"] = {{id_of(kBuffer), id_of(invented)}};
  {
    auto r = judge_the_buffer_critical(
        judge, json::array({{{"match", "leaks the config"}, {"answer", {{"verdict", "refuted"}}}}}));
    expect_the_buffer_critical_blocks(r);
    EXPECT_EQ(r.doc["rounds"][0]["judge"]["hallucinated"], json({id_of(invented)}));
    EXPECT_TRUE(r.doc["rounds"][0]["judge"]["merged"].empty());
  }
  // Into a CRITICAL the verifier confirms, but that no lens raised: refused too
  // (a merge keeps one of the lenses' findings).
  {
    auto r = judge_the_buffer_critical(
        judge,
        json::array(
            {{{"match", "leaks the config"},
              {"answer",
               {{"verdict", "confirmed"}, {"evidence", "holds 16 bytes but the name may be longer"}}}}}));
    expect_the_buffer_critical_blocks(r);
    EXPECT_TRUE(r.doc["rounds"][0]["judge"]["merged"].empty());
    EXPECT_EQ(r.doc["rounds"][0]["counts"]["critical"], 2);
  }
}

TEST(CliReview, TheJudgeCannotMergeACriticalIntoALesserLensFinding) {
  Project p({{"reviewer", {{"safety", {{"default", answer({kBuffer, kArgc})}}}}},
             {"judge",
              {{"default",
                {{"findings", {kArgc}},
                 {"scorecard", json::object()},
                 {"merged", {{id_of(kBuffer), id_of(kArgc)}}}}}}}},
            run_yaml("max_rounds: 1\ndry_rounds: 1\njudge: {worker: fake}\nverifier: {worker: fake}\n"));
  auto r = review(p);
  EXPECT_EQ(r.doc["verdict"], "BLOCK") << r.doc["rounds"][0].dump(2);
  EXPECT_EQ(r.doc["rounds"][0]["counts"]["critical"], 1);
  EXPECT_EQ(r.doc["rounds"][0]["counts"]["major"], 1);
  EXPECT_EQ(r.doc["rounds"][0]["judge"]["merge_refused"], json({{id_of(kBuffer), id_of(kArgc)}}));
}

// `verdict` is the claim verifier's: a judge that writes "refuted" on a lens's
// CRITICAL does not exclude it.
TEST(CliReview, TheJudgeCannotRefuteALensFinding) {
  json refuted = kBuffer;
  refuted["verdict"] = "refuted";
  expect_the_buffer_critical_blocks(judge_the_buffer_critical(answer({refuted})));
}

// The evidence of a lens finding stays the lens's: a judge that echoes it with a
// quote of its own (not in the file) neither voids it nor changes its claim.
TEST(CliReview, TheJudgeCannotRewriteALensFindingsEvidence) {
  json rewritten = kBuffer;
  rewritten["evidence"] = "char name[16]; strcpy(name, input);";
  rewritten["failing_case"] = "a name of 17 bytes";
  rewritten["mechanical"] = true;
  auto r = judge_the_buffer_critical(answer({rewritten}));
  expect_the_buffer_critical_blocks(r);
  const json* f = find_finding(r.doc, "copy_name");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ((*f)["failing_case"], "");
  EXPECT_FALSE((*f)["mechanical"].get<bool>());
  // A downgrade is the judge's to make, and keeps the lens's evidence.
  json downgraded = rewritten;
  downgraded["severity"] = "MINOR";
  auto d = judge_the_buffer_critical(answer({downgraded}));
  EXPECT_EQ(d.exit_code, 0) << d.err;
  const json* g = find_finding(d.doc, "copy_name");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ((*g)["severity"], "MINOR");
  EXPECT_EQ((*g)["evidence"], kBuffer["evidence"]);
  EXPECT_FALSE((*g)["unverified"].get<bool>());
  EXPECT_EQ(d.doc["rounds"][0]["judge"]["downgraded"], json({id_of(kBuffer)}));
}

// One lens names the file as listed, another by its absolute path: one finding.
TEST(CliReview, AnAbsolutePathInTheWorkspaceGetsTheSameIdAsTheRelativeOne) {
  Project p(json::object(), run_yaml("max_rounds: 1\ndry_rounds: 1\n"));
  json absolute = kArgc;
  absolute["file"] = (p.d / "doc.md").string();
  write_file(p.d / "scenario.json", json({{"reviewer",
                                           {{"correctness", {{"default", answer({kArgc})}}},
                                            {"safety", {{"default", answer({absolute})}}}}}})
                                        .dump(2));
  auto r = review(p);
  ASSERT_EQ(r.doc["rounds"][0]["findings"].size(), 1u) << r.doc["rounds"][0].dump(2);
  const json& f = r.doc["rounds"][0]["findings"][0];
  EXPECT_EQ(f["file"], "doc.md");
  EXPECT_EQ(f["id"], id_of(kArgc));
  EXPECT_EQ(f["lenses"], json({"correctness", "safety"}));
  EXPECT_EQ(r.doc["rounds"][0]["counts"]["major"], 1);
}

// A review another process is driving: the message names commands that work.
TEST(CliReview, AReviewDrivenElsewhereNamesACommandThatWorks) {
  json slow = {{"attempts", json::array({json{{"sleep", 30}, {"raw", "slow"}}, answer({kArgc})})}};
  json scenario = json::object();
  scenario["reviewer"]["correctness"]["default"] = slow;
  Project p(scenario, run_yaml("max_rounds: 1\ndry_rounds: 1\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  pid_t pid =
      orch::testing::spawn_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path(), p.d / "out.txt");
  ASSERT_TRUE(orch::testing::wait_for([&] { return p.count_calls("reviewer correctness 1 1") == 1; }, 30000))
      << read_file(p.d / "out.txt");
  const json reviews = review_doc_of(run_orch({"review", "--list", "--json"}, p.path()).out);
  ASSERT_EQ(reviews.size(), 1u);
  const std::string id = reviews[0]["id"];
  auto busy = run_orch({"review", "--resume", id}, p.path());
  EXPECT_EQ(busy.exit_code, 2) << busy.err;
  EXPECT_EQ(busy.err.find("orch cancel review-"), std::string::npos) << busy.err;
  const std::string kill_it = fmt::format("`kill -INT {}`", pid);
  EXPECT_NE(busy.err.find(kill_it), std::string::npos) << busy.err;
  EXPECT_NE(busy.err.find(fmt::format("`orch review --resume {}`", id)), std::string::npos) << busy.err;
  // Nor can it be abandoned while it runs: the message names the command for that.
  auto busy_abandon = run_orch({"review", "--abandon", id}, p.path());
  EXPECT_EQ(busy_abandon.exit_code, 2) << busy_abandon.err;
  EXPECT_NE(busy_abandon.err.find(kill_it), std::string::npos) << busy_abandon.err;
  EXPECT_NE(busy_abandon.err.find(fmt::format("end it with `orch review --abandon {}`", id)),
            std::string::npos)
      << busy_abandon.err;
  EXPECT_EQ(review_doc_of(run_orch({"review", "--list", "--json"}, p.path()).out)[0]["status"], "running");
  // What it says works: the interrupted review resumes.
  kill(pid, SIGINT);
  EXPECT_EQ(orch::testing::wait_exit(pid), 130) << read_file(p.d / "out.txt");
  auto r = run_orch({"review", "--resume", id, "--json"}, p.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(review_doc_of(r.out)["verdict"], "REVISE");
}

TEST(CliReview, AMissingConfigIsNamedOnce) {
  TempDir d;
  auto r = run_orch({"review", "--config", "RUN.yaml", "--yes"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("orch: RUN.yaml: cannot open"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("RUN.yaml: RUN.yaml"), std::string::npos) << r.err;
}

// The judge raises a lens's MAJOR to CRITICAL and repeats it: one claim step;
// the verifier refutes it, so the raise is dropped and the lens's MAJOR stays.
TEST(CliReview, AnUngroundedRaiseFallsBackToTheLensFinding) {
  json raised = kArgc;
  raised["severity"] = "CRITICAL";
  json raised_again = raised;  // the same finding (same file, locus, claim) at another line
  raised_again["line"] = 9;
  json scenario = {{"reviewer", {{"correctness", {{"default", answer({kArgc})}}}}},
                   {"judge", {{"default", answer({raised, raised_again})}}},
                   {"verifier", {{{"match", "argv"}, {"answer", {{"verdict", "refuted"}}}}}}};
  Project p(scenario,
            run_yaml("max_rounds: 1\ndry_rounds: 1\njudge: {worker: fake}\nverifier: {worker: fake}\n",
                     "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  auto r = review(p);
  const json& round = r.doc["rounds"][0];
  EXPECT_EQ(p.count_calls("verifier"), 1) << "one claim per id";
  EXPECT_EQ(round["judge"]["hallucinated"].size(), 1u) << round.dump(2);
  ASSERT_EQ(round["findings"].size(), 1u);
  EXPECT_EQ(round["findings"][0]["severity"], "MAJOR");
  EXPECT_FALSE(round["findings"][0]["judge_hallucinated"].get<bool>());
  EXPECT_EQ(round["verdict"], "REVISE");
}

// A claim verifier that cannot answer: the claim is kept, and the round cannot PASS.
TEST(CliReview, AVerifierThatFailsLeavesTheClaimAndMakesTheRoundIncomplete) {
  json invented = finding("main", "CRITICAL", "main never frees the config");
  json scenario = {{"judge", {{"default", answer({invented})}}},
                   {"verifier", {{{"match", "never frees"}, {"answer", {{"exit", 1}, {"raw", "crashed"}}}}}}};
  Project p(scenario,
            run_yaml("max_rounds: 1\ndry_rounds: 1\njudge: {worker: fake}\nverifier: {worker: fake}\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json& round = r.doc["rounds"][0];
  EXPECT_EQ(round["judge"]["unchecked"].size(), 1u) << round.dump(2);
  EXPECT_EQ(round["verdict"], "INCOMPLETE");
  EXPECT_EQ(round["counts"]["critical"], 1);
}

// "${...}" and "#E0" in an artifact, a quote and the verify command are text,
// never placeholders.
TEST(CliReview, PlaceholderLikeTextInArtifactsAndQuotesIsPassedAsWritten) {
  json css = finding("colors", "MAJOR", "hard-coded colour", "color: #E0E0E0; content: '${name}';", true);
  json scenario = {{"reviewer", {{"correctness", {{"default", answer({css})}}}}},
                   {"judge", {{"default", answer({css})}}},
                   {"fixer", {{"default", {{"raw", "nothing"}}}}}};
  Project p(scenario, run_yaml("max_rounds: 2\njudge: {worker: fake}\nverifier: {worker: fake}\n"
                               "fixer: {worker: fake}\nverify: \"test -n \\\"${HOME}\\\"\"\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  write_file(p.d / "doc.md", std::string(kDoc) + "color: #E0E0E0; content: '${name}';\n");
  auto r = review(p);
  ASSERT_EQ(r.doc["rounds"].size(), 2u) << r.err;
  EXPECT_FALSE(r.doc["rounds"][0]["findings"][0]["unverified"].get<bool>());
  EXPECT_EQ(r.doc["rounds"][0]["fix"]["status"], "applied") << r.doc["rounds"][0]["fix"].dump();
  const std::string judge_prompt = read_file(p.d / "prompts" / "judge---r1-a1.txt");
  EXPECT_NE(judge_prompt.find("#E0E0E0; content: '${name}'"), std::string::npos) << judge_prompt;
  EXPECT_NE(read_file(p.d / "prompts" / "fixer---r1-a1.txt").find("test -n \"${HOME}\""), std::string::npos);
}

// With the fixer off nothing is patched, so nothing is escalated: a MAJOR that
// stays is listed for the human and the review ends failed (exit 1).
TEST(CliReview, WithTheFixerOffAFindingThatStaysIsForTheHumanNotEscalated) {
  Project p({{"reviewer", {{"correctness", {{"default", answer({kArgc})}}}}}}, run_yaml(""));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.doc["status"], "failed");
  EXPECT_TRUE(r.doc["escalations"].empty());
  EXPECT_EQ(r.doc["rounds"].size(), 3u);
  EXPECT_EQ(r.doc["rounds"][0]["fix"]["status"], "off");
  EXPECT_EQ(r.doc["rounds"][0]["fix"]["for_human"].size(), 1u);
}

// A fixer that writes a lot of non-ASCII: its account is kept, cut on a
// character boundary, and the document stays valid JSON.
TEST(CliReview, ALongNonAsciiFixerAccountIsKeptWhole) {
  std::string account;
  for (int i = 0; i < 1500; ++i) account += "—é";
  json scenario = {{"reviewer", {{"correctness", {{"1", answer({kArgc})}, {"default", answer({})}}}}},
                   {"fixer", {{"default", {{"raw", account}}}}}};
  Project p(scenario, run_yaml("fixer: {worker: fake}\nverify: 'true'\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string kept = r.doc["rounds"][0]["fix"]["account"];
  EXPECT_LE(kept.size(), 2000u);
  EXPECT_GT(kept.size(), 1990u);
  EXPECT_EQ(kept.find("\xEF\xBF\xBD"), std::string::npos) << "no character was cut in half";
}

// kill -9 while the fixer is editing: the fix run is resumed — the half-edited
// artifact is restored from the snapshot and the fixer runs again — and the
// review ends as an uninterrupted one would.
TEST(CliReview, KillMinus9DuringTheFixRestoresTheArtifactAndRunsTheFixAgain) {
  json edit = {{"file", "doc.md"}, {"replace", "without checking argc"}, {"with", "after checking argc"}};
  json scenario = {
      {"reviewer", {{"correctness", {{"1", answer({kArgc})}, {"default", answer({})}}}}},
      {"fixer",
       {{"default",
         {{"attempts",
           json::array({json{{"edits", {{{"file", "doc.md"}, {"replace", "# Parser"}, {"with", "# HALF"}}}},
                             {"sleep", 30}},
                        json{{"edits", {edit}}, {"raw", "fixed"}}})}}}}}};
  Project p(scenario, run_yaml("fixer: {worker: fake}\nverify: grep -q 'after checking argc' doc.md\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  pid_t pid =
      orch::testing::spawn_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path(), p.d / "out.txt");
  ASSERT_TRUE(orch::testing::wait_for([&] { return p.count_calls("fixer") == 1; }, 30000))
      << read_file(p.d / "out.txt");
  ASSERT_TRUE(orch::testing::wait_for(
      [&] { return read_file(p.d / "doc.md").find("# HALF") != std::string::npos; }, 10000));
  kill(pid, SIGKILL);
  orch::testing::wait_exit(pid);
  auto list = run_orch({"review", "--list", "--json"}, p.path());
  const std::string id = review_doc_of(list.out)[0]["id"];
  auto r = run_orch({"review", "--resume", id, "--json"}, p.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json doc = review_doc_of(r.out);
  EXPECT_EQ(doc["rounds"][0]["fix"]["status"], "applied");
  const std::string text = read_file(p.d / "doc.md");
  EXPECT_EQ(text.find("# HALF"), std::string::npos) << "the interrupted edit was rolled back first: " << text;
  EXPECT_NE(text.find("after checking argc"), std::string::npos);
  EXPECT_EQ(p.count_calls("fixer - 1 2"), 1);
  EXPECT_EQ(p.count_calls("reviewer correctness 1"), 1);
}

// A review killed (kill -9) while its fixer was half-way through an edit, then
// doc.md edited by hand after that: the state a user resumes from.
struct KilledFixThenHandEdit {
  Project p;
  std::string id;
  std::string edited;  // doc.md as the user left it
  KilledFixThenHandEdit()
      : p({{"reviewer", {{"correctness", {{"1", answer({kArgc})}, {"default", answer({})}}}}},
           {"fixer",
            {{"default",
              {{"attempts",
                json::array(
                    {json{{"edits", {{{"file", "doc.md"}, {"replace", "# Parser"}, {"with", "# HALF"}}}},
                          {"sleep", 30}},
                     json{{"edits",
                           {{{"file", "doc.md"},
                             {"replace", "without checking argc"},
                             {"with", "after checking argc"}}}},
                          {"raw", "fixed"}}})}}}}}},
          run_yaml("fixer: {worker: fake}\nverify: grep -q 'after checking argc' doc.md\n",
                   "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n")) {
    pid_t pid =
        orch::testing::spawn_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path(), p.d / "out.txt");
    EXPECT_TRUE(orch::testing::wait_for([&] { return p.count_calls("fixer") == 1; }, 30000))
        << read_file(p.d / "out.txt");
    EXPECT_TRUE(orch::testing::wait_for(
        [&] { return read_file(p.d / "doc.md").find("# HALF") != std::string::npos; }, 10000));
    kill(pid, SIGKILL);
    orch::testing::wait_exit(pid);
    id = review_doc_of(run_orch({"review", "--list", "--json"}, p.path()).out)[0]["id"];
    // Later than orch allows the fixer's own changes to be stamped after its last
    // heartbeat (3 s): this edit cannot be the fixer's.
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    edited = read_file(p.d / "doc.md") + "A note the user added by hand.\n";
    write_file(p.d / "doc.md", edited);
  }
};

// The resume does not put the snapshot back over the hand edit (before, it did,
// and the edit was lost): it refuses, naming the file, with nothing changed and
// nothing run; --keep-edits keeps the user's version and runs the fix again on it.
TEST(CliReview, AResumeAfterKillMinus9AsksBeforeLosingAHandEditAndKeepsItWhenTold) {
  KilledFixThenHandEdit k;
  auto refused = run_orch({"review", "--resume", k.id, "--json"}, k.p.path());
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("since then this file changed: doc.md (changed "), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find(fmt::format("`orch review --resume {} --keep-edits`", k.id)), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find(fmt::format("`orch review --resume {} --discard-edits`", k.id)),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(read_file(k.p.d / "doc.md"), k.edited) << "nothing was put back";
  EXPECT_EQ(k.p.count_calls("fixer"), 1) << "nothing was run";

  auto kept = run_orch({"review", "--resume", k.id, "--keep-edits", "--json"}, k.p.path());
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  const json doc = review_doc_of(kept.out);
  expect_valid_report(doc);
  EXPECT_EQ(doc["rounds"][0]["fix"]["status"], "applied") << doc["rounds"][0]["fix"].dump(2);
  const std::string text = read_file(k.p.d / "doc.md");
  EXPECT_NE(text.find("A note the user added by hand."), std::string::npos) << text;
  EXPECT_NE(text.find("# HALF"), std::string::npos) << "the user's version is kept whole: " << text;
  EXPECT_NE(text.find("after checking argc"), std::string::npos) << "the fix ran again on it: " << text;
  EXPECT_EQ(k.p.count_calls("fixer - 1 2"), 1);
}

// --discard-edits: the user says so, and the file goes back to what it was before the fix.
TEST(CliReview, AResumeWithDiscardEditsPutsTheFileBackAsBeforeTheFix) {
  KilledFixThenHandEdit k;
  auto r = run_orch({"review", "--resume", k.id, "--discard-edits", "--json"}, k.p.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(review_doc_of(r.out)["rounds"][0]["fix"]["status"], "applied");
  const std::string text = read_file(k.p.d / "doc.md");
  EXPECT_EQ(text.find("A note the user added by hand."), std::string::npos) << text;
  EXPECT_EQ(text.find("# HALF"), std::string::npos) << text;
  EXPECT_NE(text.find("after checking argc"), std::string::npos) << text;
  auto flags = run_orch({"review", "--config", "RUN.yaml", "--keep-edits"}, k.p.path());
  EXPECT_EQ(flags.exit_code, 2) << "--keep-edits goes with --resume: " << flags.err;
}

// A review of one lens that its spend cap stops in round 1: unfinished.
struct StoppedAtItsCap {
  Project p{json{{"reviewer", {{"correctness", {{"default", answer({kArgc})}}}}}},
            run_yaml("spend_cap_tokens: 1500\n",
                     "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"),
            "    reserve_tokens: 1000\n"};
  Reviewed first = review(p);
};

// A new review of artifacts an unfinished review still holds warns, naming that
// review and how to go on with it (before, it said nothing).
TEST(CliReview, ANewReviewOfArtifactsAnUnfinishedReviewHoldsWarns) {
  StoppedAtItsCap stopped;
  Project& p = stopped.p;
  const Reviewed& first = stopped.first;
  ASSERT_EQ(first.doc["status"], "spend_cap") << first.err;
  const std::string id = first.doc["id"];
  auto second = review(p);
  EXPECT_NE(second.err.find(fmt::format("WARNING: review {} (spend_cap, ", id)), std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find("is unfinished on doc.md"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find(fmt::format("`orch review --resume {} --spend-cap N`", id)), std::string::npos)
      << second.err;
  // Another workspace's artifacts are not this review's.
  write_file(p.d / "other" / "doc.md", kDoc);
  auto elsewhere =
      run_orch({"review", "--config", "../RUN.yaml", "--yes", "--store", "../.orch/orch.db"}, p.d / "other");
  EXPECT_EQ(elsewhere.err.find("WARNING: review"), std::string::npos) << elsewhere.err;
}

// `--abandon ID` ends an unfinished review: recorded as abandoned (the ledger, the
// copies beside it, --list), no longer warned about or resumable; a review that
// has ended, or an unknown one, is refused with exit 2.
TEST(CliReview, AbandoningAnUnfinishedReviewEndsItAndItsWarning) {
  StoppedAtItsCap stopped;
  Project& p = stopped.p;
  const Reviewed& first = stopped.first;
  ASSERT_EQ(first.doc["status"], "spend_cap") << first.err;
  const std::string id = first.doc["id"];
  const std::string doc_before = read_file(p.d / "doc.md");

  auto abandoned = run_orch({"review", "--abandon", id, "--json"}, p.path());
  ASSERT_EQ(abandoned.exit_code, 0) << abandoned.err;
  const json doc = review_doc_of(abandoned.out);
  expect_valid_report(doc);
  EXPECT_EQ(doc["status"], "abandoned");
  EXPECT_EQ(doc["id"], id);
  EXPECT_NE(doc["stop_reason"].get<std::string>().find("abandoned by `orch review --abandon` (spend_cap, "),
            std::string::npos)
      << doc["stop_reason"];
  EXPECT_EQ(doc["rounds"], first.doc["rounds"]) << "what was done stays";
  EXPECT_NE(abandoned.err.find(fmt::format("review {}: abandoned", id)), std::string::npos) << abandoned.err;
  EXPECT_EQ(read_file(p.d / "doc.md"), doc_before) << "no file is touched";
  EXPECT_EQ(review_doc_of(read_file(p.d / ".orch" / "reviews" / (id + ".json")))["status"], "abandoned");
  EXPECT_NE(review_markdown_of(p, doc).find("abandoned"), std::string::npos);

  auto list = run_orch({"review", "--list", "--json"}, p.path());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json listed = review_doc_of(list.out);
  ASSERT_EQ(listed.size(), 1u) << list.out;
  EXPECT_EQ(listed[0]["status"], "abandoned");

  auto second = review(p);
  EXPECT_EQ(second.err.find("WARNING: review"), std::string::npos) << second.err;

  auto resumed = run_orch({"review", "--resume", id, "--spend-cap", "100000"}, p.path());
  EXPECT_EQ(resumed.exit_code, 2) << resumed.err;
  EXPECT_NE(resumed.err.find(fmt::format("review '{}' has ended (abandoned): nothing to resume", id)),
            std::string::npos)
      << resumed.err;
  auto again = run_orch({"review", "--abandon", id}, p.path());
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find(fmt::format("review '{}' has ended (abandoned): nothing to abandon", id)),
            std::string::npos)
      << again.err;
  auto unknown = run_orch({"review", "--abandon", "no-such-review"}, p.path());
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("no review 'no-such-review'"), std::string::npos) << unknown.err;
  auto both = run_orch({"review", "--abandon", id, "--list"}, p.path());
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_NE(both.err.find("give one of"), std::string::npos) << both.err;
}

// The spend cap reached by the fix: the fix stays pending and runs when resumed
// with a higher cap.
TEST(CliReview, TheSpendCapInTheFixPhaseLeavesItPendingForTheResume) {
  json edit = {{"file", "doc.md"}, {"replace", "without checking argc"}, {"with", "after checking argc"}};
  json scenario = {{"reviewer", {{"correctness", {{"1", answer({kArgc})}, {"default", answer({})}}}}},
                   {"fixer", {{"default", {{"edits", {edit}}, {"raw", "fixed"}}}}}};
  Project p(
      scenario,
      run_yaml(
          "fixer: {worker: fake}\nverify: grep -q 'after checking argc' doc.md\nspend_cap_tokens: 1500\n",
          "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"),
      "    reserve_tokens: 1000\n");
  auto r = review(p);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.doc["status"], "spend_cap");
  EXPECT_EQ(r.doc["rounds"][0]["fix"]["status"], "pending");
  EXPECT_EQ(p.count_calls("fixer"), 0);
  auto resumed = run_orch({"review", "--resume", r.doc["id"], "--spend-cap", "50000", "--json"}, p.path());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(review_doc_of(resumed.out)["rounds"][0]["fix"]["status"], "applied");
  EXPECT_EQ(p.count_calls("fixer"), 1);
}

// Two reviewers per lens are two steps (LENS-1, LENS-2) whose findings are
// reduced together; without fresh context, a round's reviewers are told the last
// round's counted findings (and only those).
TEST(CliReview, SeveralReviewersPerLensAndAReviewWithoutFreshContext) {
  json fabricated = finding("intro", "MAJOR", "made-up quote", "this sentence is not in the file");
  json scenario = {
      {"reviewer", {{"correctness", {{"1", answer({kArgc, fabricated})}, {"default", answer({kArgc})}}}}}};
  Project p(scenario, run_yaml("reviewers: 2\nmax_rounds: 2\nfresh_context: false\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  auto r = review(p);
  const json& round1 = r.doc["rounds"][0];
  ASSERT_EQ(round1["reviewers"].size(), 2u) << round1.dump(2);
  EXPECT_EQ(round1["reviewers"][0]["step"], "correctness-1");
  EXPECT_EQ(round1["reviewers"][1]["step"], "correctness-2");
  EXPECT_EQ(p.count_calls("reviewer correctness 1 1"), 2);
  EXPECT_EQ(round1["counts"]["major"], 1) << "the two reviewers' copies are one finding";
  EXPECT_EQ(round1["counts"]["excluded"], 1);
  const std::string prompt2 = read_file(p.d / "prompts" / "reviewer-correctness-r2-a1.txt");
  EXPECT_NE(prompt2.find("### previous_findings"), std::string::npos) << prompt2;
  EXPECT_NE(prompt2.find("argv[1] is read without checking argc"), std::string::npos);
  EXPECT_EQ(prompt2.find("made-up quote"), std::string::npos) << "an unverified finding is not passed on";
}

// Ctrl-C (SIGINT) in the middle of a round: orch stops its steps, records the
// run interrupted and exits 130 with the command that continues; the review stays
// running, and --resume finishes it. A burst of signals after it (SIGTERMs, as a
// `timeout` sends: one that killed orch would show as 143) stops it once: a later
// one does not kill orch before the report.
TEST(CliReview, AnInterruptedReviewExits130AndResumes) {
  json slow_then_answer = {
      {"attempts", json::array({json{{"sleep", 30}, {"raw", "slow"}}, answer({kArgc})})}};
  json scenario = json::object();
  scenario["reviewer"]["correctness"]["default"] = slow_then_answer;
  Project p(scenario, run_yaml("max_rounds: 1\ndry_rounds: 1\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  pid_t pid =
      orch::testing::spawn_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path(), p.d / "out.txt");
  ASSERT_TRUE(orch::testing::wait_for([&] { return p.count_calls("reviewer correctness 1 1") == 1; }, 30000))
      << read_file(p.d / "out.txt");
  kill(pid, SIGINT);
  for (int i = 0; i < 300 && orch::testing::process_alive(pid); ++i) {
    kill(pid, SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(orch::testing::wait_exit(pid), 130) << read_file(p.d / "out.txt");
  const std::string out = read_file(p.d / "out.txt");
  EXPECT_NE(out.find("interrupted in round 1 (reviewers): continue with `orch review --resume"),
            std::string::npos)
      << out;
  auto list = run_orch({"review", "--list", "--json"}, p.path());
  const json reviews = review_doc_of(list.out);
  ASSERT_EQ(reviews.size(), 1u);
  EXPECT_EQ(reviews[0]["status"], "running");
  auto r = run_orch({"review", "--resume", reviews[0]["id"], "--json"}, p.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(review_doc_of(r.out)["verdict"], "REVISE");
}

// `orch cancel` of the run of the review's current phase stops the review: no
// round is recorded from the cancelled run, no further round runs, and orch
// exits 130 as for Ctrl-C. The review stays resumable: --resume runs the
// cancelled reviewer again. Before, the cancelled round was recorded INCOMPLETE
// and later rounds ran on to PASS, exit 0.
TEST(CliReview, CancellingThePhaseRunStopsTheReview) {
  json scenario = json::object();
  scenario["reviewer"]["correctness"]["1"] = {{"sleep", 30}, {"raw", "slow"}};
  Project p(scenario, run_yaml("max_rounds: 3\ndry_rounds: 1\n",
                               "  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n"));
  pid_t pid =
      orch::testing::spawn_orch({"review", "--config", "RUN.yaml", "--yes"}, p.path(), p.d / "out.txt");
  ASSERT_TRUE(orch::testing::wait_for([&] { return p.count_calls("reviewer correctness 1 1") == 1; }, 30000))
      << read_file(p.d / "out.txt");
  std::string run_id;
  // The phase's run is found by its owner (runs --json), as a dashboard would.
  for (const auto& run : review_doc_of(run_orch({"runs", "--json"}, p.path()).out))
    if (run["owner"].is_object() && run["owner"]["kind"] == "review" && run["owner"]["round"] == 1 &&
        run["owner"]["phase"] == "reviewers")
      run_id = run["id"];
  ASSERT_FALSE(run_id.empty());
  const json report = review_doc_of(run_orch({"status", run_id, "--json"}, p.path()).out);
  EXPECT_EQ(report["run"]["owner"]["kind"], "review") << report.dump();
  EXPECT_FALSE(report["run"]["owner"]["id"].get<std::string>().empty());
  auto cancelled = run_orch({"cancel", run_id}, p.path());
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.err;
  EXPECT_EQ(orch::testing::wait_exit(pid), 130) << read_file(p.d / "out.txt");
  const std::string out = read_file(p.d / "out.txt");
  EXPECT_NE(out.find(fmt::format("run {} was cancelled", run_id)), std::string::npos) << out;
  EXPECT_EQ(p.count_calls("reviewer"), 1) << "no further reviewer ran";
  const json reviews = review_doc_of(run_orch({"review", "--list", "--json"}, p.path()).out);
  ASSERT_EQ(reviews.size(), 1u);
  EXPECT_EQ(reviews[0]["status"], "running");
  EXPECT_EQ(reviews[0]["rounds"], 0) << "the cancelled round is not recorded";
  // Resumed, the cancelled reviewer runs again (now it answers) and the review ends.
  write_file(p.d / "scenario.json",
             json({{"reviewer", {{"correctness", {{"default", answer({kArgc})}}}}}}).dump());
  auto r = run_orch({"review", "--resume", reviews[0]["id"], "--json"}, p.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const json doc = review_doc_of(r.out);
  EXPECT_EQ(doc["verdict"], "REVISE");
  EXPECT_EQ(doc["rounds"][0]["failed_lenses"], 0) << doc["rounds"][0].dump(2);
}

}  // namespace
}  // namespace orch
