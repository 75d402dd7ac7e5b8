// Black-box tests of `orch route` and `orch budget-check` through the real binary:
// every `route --json` output checked against schemas/skill-output.schema.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using orch::testing::CommandResult;
using orch::testing::run_command;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;


// The --json output, parsed, after checking it against the published contract.
json route_report_of(const CommandResult& r) {
  auto doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << "not JSON:\n" << r.out << r.err;
  if (doc.is_discarded()) return json();
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / "skill-output.schema.json").string());
  EXPECT_TRUE(schema) << schema.error().message;
  if (schema) {
    auto violations = schema->validate(doc);
    EXPECT_TRUE(violations.empty()) << violations.front() << "\n" << r.out;
  }
  return doc;
}

void write_route_registry(const TempDir& d) {
  write_file(d / ".orch" / "registry.yml", R"(tools:
  filestats:
    command: [./filestats.sh]
    status: prod_ready
    safe_for_agents: true
    risk: low
    output_schema: {type: object}
    commands:
      count: {capabilities: [count-lines]}
)");
}

TEST(CliRoute, WatchBeatsGithubAndTheReportFollowsTheContract) {
  TempDir d;
  auto r = run_orch({"route", "watch hacker news for the releases of the Qdrant repo", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json doc = route_report_of(r);
  EXPECT_EQ(doc["skill_name"], "orch route");
  const json& intent = doc["output"]["data"]["intent"];
  EXPECT_EQ(intent["domain"], "watch");
  ASSERT_EQ(intent["domains"].size(), 2u);
  EXPECT_EQ(intent["domains"][1]["name"], "github");
  EXPECT_EQ(intent["domains"][1]["confidence"], 0.632);
  EXPECT_GT(intent["domain_confidence"].get<double>(), intent["domains"][1]["confidence"].get<double>());
  EXPECT_EQ(doc["tokens_used"]["total"], 0);
  EXPECT_TRUE(doc["run_id"].is_null());
}

// A phrase keyword claims its words: "memory leak" is a bug, and security's single
// word "leak" does not score on it too.
TEST(CliRoute, AMultiWordKeywordClaimsItsWords) {
  TempDir d;
  auto r = run_orch({"route", "there is a memory leak in the parser", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 3) << "no request type or domain word: undecided\n" << r.out << r.err;
  json doc = route_report_of(r);
  const json& c = doc["output"]["data"]["classification"];
  EXPECT_EQ(c["intent"], "bug_fix") << c.dump(2);
  ASSERT_EQ(c["scores"].size(), 1u) << c["scores"].dump();
  EXPECT_EQ(c["scores"][0]["intent"], "bug_fix");
}

TEST(CliRoute, ARequestThatCannotBeDecidedSaysSo) {
  TempDir d;
  auto r = run_orch({"route", "make it nicer somehow", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  json doc = route_report_of(r);
  EXPECT_EQ(doc["status"], "partial");
  EXPECT_EQ(doc["output"]["data"]["decided"], false);
  EXPECT_EQ(doc["output"]["data"]["undecided"].size(), 2u) << "the request type and the domain";
  EXPECT_EQ(doc["error"]["code"], "route_undecided");
  const json& data = doc["output"]["data"];
  EXPECT_EQ(data["intent"]["type"], "unknown");
  EXPECT_EQ(data["intent"]["domain"], "unknown");
  EXPECT_EQ(data["intent"]["domain_confidence"], 0);
  EXPECT_TRUE(data["token_budget"].is_null()) << "no type, no guessed allocation";
  EXPECT_TRUE(data["classification"]["ambiguous"].get<bool>());

  auto text = run_orch({"route", "make it nicer somehow"}, d.path());
  ASSERT_EQ(text.exit_code, 3) << text.err;
  EXPECT_HAS(text.out, "domain        unknown (0.00): no domain word in the request");
  EXPECT_HAS(text.out, "status        partial: undecided");
}

TEST(CliRoute, DryRunToolChoiceAndBudget) {
  TempDir d;
  write_route_registry(d);
  auto r = run_orch({"route", "quick: count the lines of the system log", "--dry-run", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json doc = route_report_of(r);
  EXPECT_EQ(doc["status"], "dry_run");
  const json& data = doc["output"]["data"];
  EXPECT_EQ(data["routing"]["selected_tool"], "filestats");
  EXPECT_EQ(data["routing"]["command"], "count");
  EXPECT_EQ(data["routing"]["registry_status"], "prod_ready");
  EXPECT_EQ(data["intent"]["type"], "query");
  EXPECT_EQ(data["intent"]["domain"], "system");
  EXPECT_EQ(data["token_budget"]["allocated"], 500);
  EXPECT_EQ(data["token_budget"]["effective"], 400);
  EXPECT_EQ(data["classification"]["strategy"], "tool-direct");
  EXPECT_FALSE(fs::exists(d / ".orch" / "orch.db")) << "route never opens the ledger";

  // Without the registry the same request has no tool and needs a model.
  auto no_tools = run_orch({"route", "quick: count the lines of the system log", "--json", "--registry",
                            (source_dir() / "tests" / "data" / "chain-tools" / "registry.yml").string()},
                           d.path());
  ASSERT_EQ(no_tools.exit_code, 0) << no_tools.err;
  json other = route_report_of(no_tools);
  EXPECT_EQ(other["output"]["data"]["routing"]["match"], "no_match");
  EXPECT_EQ(other["output"]["data"]["classification"]["strategy"], "direct");
}

TEST(CliRoute, AProjectTableReplacesTheShippedOne) {
  TempDir d;
  write_file(d / ".orch" / "route" / "strategies.yaml", R"(version: 1
by_complexity: {trivial: direct, standard: direct, complex: direct}
no_model: direct
pipelines:
  direct: [RECALL, EXECUTE, VERIFY, SUMMARIZE]
)");
  auto r = run_orch({"route", "redesign the storage layer", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 3) << "no request type or domain word: undecided\n" << r.out << r.err;
  json doc = route_report_of(r);
  EXPECT_EQ(doc["output"]["data"]["classification"]["complexity"], "complex");
  EXPECT_EQ(doc["output"]["data"]["classification"]["strategy"], "direct");
  bool overridden = false;
  for (const auto& t : doc["output"]["data"]["tables"])
    if (t["name"] == "strategies.yaml") overridden = t["overridden"].get<bool>();
  EXPECT_TRUE(overridden);
}

TEST(CliRoute, ABrokenTableExitsTwoNamingFileAndLine) {
  TempDir d;
  write_file(d / ".orch" / "route" / "budgets.yaml", "version: 1\ntokens:\n  by_complexity: {trivial: -5}\n");
  auto r = run_orch({"route", "fix the crash"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_HAS(
      r.err,
      ".orch/route/budgets.yaml:3: tokens.by_complexity.trivial: must be a whole number of at least 1");
  auto j = run_orch({"route", "fix the crash", "--json"}, d.path());
  EXPECT_EQ(j.exit_code, 2);
  json doc = route_report_of(j);
  EXPECT_EQ(doc["status"], "error");
  EXPECT_EQ(doc["error"]["code"], "orch_error");

  auto empty = run_orch({"route", "  "}, d.path());
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_HAS(empty.err, "the request is empty");
}

// A project's override that cannot be read, or a table name orch would not
// read, is an error: never the shipped table in silence.
TEST(CliRoute, AnOverrideThatCannotBeReadIsAnErrorNotTheShippedTable) {
  {
    TempDir d;
    fs::create_directories(d / ".orch" / "route");
    fs::create_symlink(d / "gone.yaml", d / ".orch" / "route" / "verify.yaml");
    auto r = run_orch({"route", "fix the crash"}, d.path());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_HAS(r.err, "cannot read the route table: .orch/route/verify.yaml: cannot open: No such file");
  }
  {
    TempDir d;
    fs::create_directories(d / ".orch" / "route" / "intents.yaml");
    auto r = run_orch({"route", "fix the crash"}, d.path());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_HAS(r.err, "intents.yaml: is a folder, not a file");
  }
  {
    TempDir d;
    write_file(d / ".orch" / "route", "not a folder\n");
    auto r = run_orch({"route", "fix the crash"}, d.path());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_HAS(r.err, ".orch/route: not a folder");
  }
  {
    TempDir d;
    write_file(d / ".orch" / "route" / "INTENTS.YAML", "version: 1\n");
    auto r = run_orch({"route", "fix the crash"}, d.path());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_HAS(r.err, "INTENTS.YAML: not a route table, so it would be ignored");
  }
  {
    TempDir d;
    auto r = run_orch({"route", "fix the crash", "--workspace", "nowhere"}, d.path());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_HAS(r.err, "workspace 'nowhere' is not a usable folder: No such file or directory");
    auto b =
        run_orch({"budget-check", "--intent", "query", "--input", "hi", "--workspace", "nowhere"}, d.path());
    EXPECT_EQ(b.exit_code, 2) << b.out << b.err;
    EXPECT_HAS(b.err, "workspace 'nowhere' is not a usable folder: No such file or directory");
  }
}

TEST(CliBudgetCheck, SeedFiguresForResearch) {
  TempDir d;
  auto r = run_orch({"budget-check", "--intent", "research", "--input", "abcdefgh", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["allocated"], 1700);
  EXPECT_EQ(doc["safety_buffer"], 340);
  EXPECT_EQ(doc["effective_budget"], 1360);
  EXPECT_EQ(doc["input_estimated"], 2);
  auto text = run_orch({"budget-check", "--intent", "query", "--input", "hello"}, d.path());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_HAS(text.out, "query: allocated 500 (base 200 + query 300), safety buffer 100 (20%), effective 400");
  EXPECT_HAS(text.out, "an estimate");
}

TEST(CliBudgetCheck, StdinUnknownTypesAndInputsOverTheBudget) {
  TempDir d;
  auto piped = run_command(
      {"/bin/sh", "-c", "printf 'abcdefghijkl' | \"$ORCH\" budget-check --intent audit --input - --json"},
      d.path(), {{"ORCH", orch::testing::orch_binary()}});
  ASSERT_EQ(piped.exit_code, 0) << piped.out << piped.err;
  EXPECT_EQ(json::parse(piped.out)["input_estimated"], 3);

  auto unknown = run_orch({"budget-check", "--intent", "reserch", "--input", "x"}, d.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_HAS(unknown.err, "unknown request type 'reserch' (did you mean 'research'?)");
  EXPECT_HAS(unknown.err, "query");

  auto over =
      run_orch({"budget-check", "--intent", "query", "--input", std::string(1604, 'a'), "--json"}, d.path());
  EXPECT_EQ(over.exit_code, 4) << over.out << over.err;
  EXPECT_EQ(json::parse(over.out)["input_exceeds_budget"], true);
  EXPECT_HAS(over.err, "exceeds the effective budget of 400 tokens");
}

// The README's own example: a plural of a phrase keyword counts (forms are declared,
// never guessed, and the shipped tables declare them).
TEST(CliRoute, ThePluralOfAPhraseKeywordCounts) {
  TempDir d;
  auto r = run_orch({"route", "list the open pull requests", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json doc = route_report_of(r);
  EXPECT_EQ(doc["output"]["data"]["intent"]["domain"], "github") << r.out;
}

// Issue 31: one answer. "list the open pull requests" is query/github: the
// route is decided (status success, no error, exit 0), and the classification
// beside it says, apart, that no keyword tells what kind of work it is. An
// undecided route says so in every field and exits 3.
TEST(CliRoute, AnUndecidedRouteIsOneAnswerInEveryFieldAndExitsThree) {
  TempDir d;
  auto decided = run_orch({"route", "list the open pull requests", "--json"}, d.path());
  EXPECT_EQ(decided.exit_code, 0) << decided.out << decided.err;
  json ok = route_report_of(decided);
  EXPECT_EQ(ok["status"], "success");
  EXPECT_EQ(ok["output"]["data"]["decided"], true);
  EXPECT_EQ(ok["output"]["data"]["intent"]["type"], "query");
  EXPECT_EQ(ok["output"]["data"]["intent"]["domain"], "github");
  EXPECT_TRUE(ok["error"].is_null()) << ok["error"];
  EXPECT_EQ(ok["output"]["data"]["classification"]["ambiguous"], true);
  for (const bool dry_run : {false, true}) {
    SCOPED_TRACE(dry_run ? "--dry-run" : "no --dry-run");
    std::vector<std::string> args = {"route", "make it nicer somehow", "--json"};
    if (dry_run) args.push_back("--dry-run");
    auto r = run_orch(args, d.path());
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    json doc = route_report_of(r);
    EXPECT_EQ(doc["status"], dry_run ? "dry_run" : "partial");
    const json& data = doc["output"]["data"];
    EXPECT_EQ(data["intent"]["decided"], false);
    EXPECT_EQ(data["decided"], false);
    ASSERT_EQ(data["undecided"].size(), 2u) << data["undecided"].dump();
    EXPECT_EQ(doc["error"]["code"], "route_undecided");
    EXPECT_TRUE(doc["output"]["summary"].get<std::string>().starts_with("undecided ("));
  }
  auto text = run_orch({"route", "list the open pull requests"}, d.path());
  EXPECT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_HAS(text.out, "status        success");
}

// Seed 004's flagship example is French; its /tk:* commands come first as system.
TEST(CliRoute, TheSeedsFrenchExampleAndItsTkCommands) {
  TempDir d;
  auto r = run_orch({"route", "liste les repos Claude", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << "the seed's example is routed\n" << r.out << r.err;
  json doc = route_report_of(r);
  EXPECT_EQ(doc["status"], "success");
  EXPECT_EQ(doc["output"]["data"]["intent"]["type"], "query") << r.out;
  EXPECT_EQ(doc["output"]["data"]["intent"]["domain"], "github") << r.out;
  for (const char* command : {"/tk:route", "/tk:chain", "/tk:budget-check", "/tk:orchestrate", "/tk:boot"}) {
    auto c = run_orch({"route", std::string(command) + " liste les repos Claude", "--json"}, d.path());
    EXPECT_EQ(c.exit_code, 0) << command << "\n" << c.out << c.err;
    json cdoc = route_report_of(c);
    EXPECT_EQ(cdoc["output"]["data"]["intent"]["domain"], "system") << command << "\n" << c.out;
    EXPECT_EQ(cdoc["output"]["data"]["intent"]["domain_confidence"], 1.0) << command;
  }
  auto build = run_orch({"route", "build the docker image", "--json"}, d.path());
  EXPECT_EQ(route_report_of(build)["output"]["data"]["intent"]["type"], "action") << build.out;
}

}  // namespace
}  // namespace orch
