// Seed 004's routing on the shipped tables: request types and domains with a real
// confidence, the threshold and the priority ranks, no domain → unknown, the
// budget allocation, CLI-first tool choice, and the report against
// schemas/skill-output.schema.json.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "exec/tool_registry.h"
#include "route/budget_allocation.h"
#include "route/domains.h"
#include "route/route_report.h"
#include "route/route_request.h"
#include "route/tables.h"
#include "route/tool_route.h"
#include "route/words.h"
#include "route/route_test_support.h"
#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch::route {
namespace {

using orch::testing::source_dir;
using orch::testing::TempDir;


using test::shipped;

LabelChoice domain(const std::string& request) {
  return domain_of(shipped(), words_of(request));
}
LabelChoice request_type(const std::string& request) {
  return request_type_of(shipped(), words_of(request));
}

double score_of(const LabelChoice& c, const std::string& name) {
  for (const auto& s : c.scores)
    if (s.name == name) return s.confidence;
  return 0;
}

TEST(RouteDomains, ConfidenceSaturatesAndIsNotNormalised) {
  const ConfidenceRules& rules = shipped().requests.confidence;
  EXPECT_EQ(confidence_of(rules, 0), 0.0);
  EXPECT_NEAR(confidence_of(rules, 1), 1 - std::exp(-1.0), 1e-12);
  EXPECT_NEAR(confidence_of(rules, 2), 0.8647, 1e-4);
  EXPECT_LT(confidence_of(rules, 10), 1.0);
  // One weak word alone: the best candidate is still weak, not 1.0.
  LabelChoice c = domain("any releases lately");
  ASSERT_EQ(c.scores.size(), 1u);
  EXPECT_EQ(c.scores[0].name, "watch");
  EXPECT_NEAR(c.scores[0].confidence, 0.393, 1e-3);
  EXPECT_FALSE(c.decided());
  EXPECT_HAS(c.reason, "below the threshold 0.60");
}

TEST(RouteDomains, WatchBeatsGithubForHackerNewsAboutARepo) {
  LabelChoice c = domain("watch hacker news for the releases of the Qdrant repo");
  EXPECT_EQ(c.name, "watch");
  // Each keyword once: the phrase "hacker news" and the word "news" are two keywords.
  ASSERT_FALSE(c.scores.empty());
  EXPECT_EQ(c.scores[0].matched, (std::vector<std::string>{"watch", "hacker news", "news", "releases"}));
  EXPECT_NEAR(c.confidence, 1 - std::exp(-3.5), 1e-9);  // releases weighs 0.5
  EXPECT_NEAR(score_of(c, "github"), 1 - std::exp(-1.0), 1e-9);
  ASSERT_EQ(c.scores.size(), 2u);
  EXPECT_EQ(c.scores[1].name, "github");
}

TEST(RouteDomains, TiesAboveHalfGoByThePriorityRanks) {
  LabelChoice vault = domain("sync the vault notes with the github repo");
  EXPECT_EQ(score_of(vault, "vault"), score_of(vault, "github"));
  EXPECT_EQ(vault.name, "vault");
  EXPECT_HAS(vault.reason, "vault has the highest priority");
  EXPECT_EQ(domain("check the disk usage of the vault").name, "system");
  // Further apart than tie_margin is no tie: the higher confidence wins whatever the rank.
  LabelChoice apart = domain("restart the service behind the github repo");  // system 0.63, github 0.86
  EXPECT_EQ(apart.name, "github");
}

TEST(RouteDomains, AnExactTieWithinOneRankIsUndecided) {
  LabelChoice c = domain("read papers and news");
  EXPECT_EQ(score_of(c, "papers"), score_of(c, "watch"));
  EXPECT_FALSE(c.decided());
  EXPECT_HAS(c.reason, "share a priority rank");
}

TEST(RouteDomains, NoDomainWordMeansUnknownNeverAFallback) {
  LabelChoice c = domain("make it nicer somehow");
  EXPECT_FALSE(c.decided());
  EXPECT_EQ(c.name, "");
  EXPECT_EQ(c.confidence, 0.0);
  EXPECT_TRUE(c.scores.empty());
  EXPECT_EQ(c.reason, "no domain word in the request");
}

TEST(RouteDomains, SubstringsOfKeywordsDoNotScore) {
  EXPECT_EQ(score_of(domain("improve the build"), "github"), 0.0) << "'pr' inside 'improve'";
  EXPECT_GT(score_of(domain("review the open pr"), "github"), 0.6);
  EXPECT_EQ(score_of(request_type("show the latest numbers"), "audit"), 0.0) << "'test' inside 'latest'";
  EXPECT_GT(score_of(request_type("test the parser"), "audit"), 0.6);
  EXPECT_EQ(score_of(domain("a normal day"), "system"), 0.0);
}

TEST(RouteDomains, RequestTypes) {
  EXPECT_EQ(request_type("list the repos").name, "query");
  EXPECT_EQ(request_type("audit and test the service").name, "audit");
  EXPECT_EQ(request_type("compare the two papers").name, "research");
  LabelChoice none = request_type("the weather");
  EXPECT_FALSE(none.decided());
  EXPECT_EQ(none.reason, "no request type word in the request");
}

// Seed 004 is French and so is its flagship example; its French words stand
// beside the English ones in requests.yaml.
TEST(RouteDomains, TheSeedsFrenchExamplesRouteAsTheSeedShows) {
  EXPECT_EQ(request_type("liste les repos Claude").name, "query");
  EXPECT_EQ(domain("liste les repos Claude").name, "github");
  // Test 5 of the seed: "domain=watch (score 1.0) > github (score 0.2)".
  LabelChoice watch = domain("veille hacker news sur les releases du repo Qdrant");
  EXPECT_EQ(watch.name, "watch") << watch.reason;
  EXPECT_GT(watch.confidence, score_of(watch, "github"));
  EXPECT_EQ(domain("surveille les releases de SQLite").name, "watch");
  EXPECT_EQ(request_type("teste le schéma").name, "audit");
  EXPECT_EQ(request_type("corrige le bug et pousse la branche").name, "action");
  EXPECT_EQ(domain("mets à jour le dépôt").name, "github");
  EXPECT_EQ(domain("liste les tâches du projet").name, "projects");
}

TEST(RouteDomains, BuildingIsAnAction) {
  LabelChoice c = request_type("build the docker image");
  EXPECT_EQ(c.name, "action") << c.reason;
  EXPECT_EQ(request_type("rebuild the index").name, "action");
}

TEST(RouteBudget, SeedAllocationsPerRequestType) {
  struct Row {
    const char* type;
    std::int64_t allocated, buffer, effective;
  };
  for (Row row : {Row{"query", 500, 100, 400}, Row{"action", 700, 140, 560}, Row{"workflow", 1200, 240, 960},
                  Row{"research", 1700, 340, 1360}, Row{"audit", 1000, 200, 800}}) {
    auto a = allocate_budget(shipped(), row.type, "x");
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->allocated, row.allocated) << row.type;
    EXPECT_EQ(a->safety_buffer, row.buffer) << row.type;
    EXPECT_EQ(a->effective_budget, row.effective) << row.type;
  }
}

TEST(RouteBudget, InputIsEstimatedFromCodePoints) {
  auto estimate = [](const std::string& input) {
    return allocate_budget(shipped(), "query", input)->input_estimated;
  };
  EXPECT_EQ(estimate(""), 1);
  EXPECT_EQ(estimate("abc"), 1);
  EXPECT_EQ(estimate("abcdefgh"), 2);
  EXPECT_EQ(estimate("abcdefghijk"), 2);
  EXPECT_EQ(estimate("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"), 2)
      << "8 x é: 16 bytes, 8 characters";
  auto big = allocate_budget(shipped(), "query", std::string(1604, 'a'));
  EXPECT_EQ(big->input_estimated, 401);
  EXPECT_TRUE(big->input_exceeds_budget());
  EXPECT_FALSE(allocate_budget(shipped(), "query", std::string(1600, 'a'))->input_exceeds_budget());
}

TEST(RouteBudget, AnUnknownTypeNamesTheKnownOnes) {
  auto a = allocate_budget(shipped(), "reserch", "x");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, ErrorCode::InvalidInput);
  EXPECT_HAS(a.error().message, "unknown request type 'reserch' (did you mean 'research'?)");
  EXPECT_HAS(a.error().message, "research, workflow, audit, action, query");
}

ToolRegistry registry() {
  auto r = parse_tool_registry(R"(tools:
  filestats:
    command: [./filestats.sh]
    status: prod_ready
    safe_for_agents: true
    risk: low
    output_schema: {}
    commands:
      count: {capabilities: [count-lines, count-words]}
  wip:
    command: [./wip.sh]
    status: in_progress
    safe_for_agents: true
    risk: low
    output_schema: {}
    commands:
      run: {capabilities: [summarise]}
  unsafe:
    command: [./unsafe.sh]
    status: prod_ready
    safe_for_agents: false
    risk: low
    output_schema: {}
    commands:
      run: {capabilities: [summarise]}
  say:
    command: [./say.sh]
    status: prod_ready
    safe_for_agents: true
    risk: low
    output_schema: {}
    commands:
      run: {}
)",
                               "registry.yml");
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : ToolRegistry{};
}

TEST(RouteTool, ACapabilityTheRequestNamesChoosesASelectableTool) {
  ToolRegistry tools = registry();
  ToolRoute t = route_to_tool(&tools, words_of("count the lines of notes.txt"));
  EXPECT_TRUE(t.chosen) << t.reason;
  EXPECT_EQ(t.tool, "filestats");
  EXPECT_EQ(t.command, "count");
  EXPECT_EQ(t.capability, "count-lines");
  EXPECT_EQ(t.status, "prod_ready");
  EXPECT_EQ(t.risk, "low");
  EXPECT_TRUE(covered_by_tool(&tools, "count the lines of notes.txt"));
  EXPECT_FALSE(covered_by_tool(&tools, "count the stars")) << "every word of a capability is needed";
}

TEST(RouteTool, OnlyCliFirstToolsAreChosenAndTheReasonSaysWhy) {
  ToolRegistry tools = registry();
  ToolRoute t = route_to_tool(&tools, words_of("summarise the notes"));
  EXPECT_FALSE(t.chosen);
  EXPECT_EQ(t.named, std::vector<std::string>{"summarise"});
  EXPECT_HAS(t.reason, "tool 'wip' is in_progress");
  EXPECT_HAS(t.reason, "tool 'unsafe' is not safe_for_agents");
  // Tool and sub-command names are not read: "say" and "run" are everyday words.
  ToolRoute say = route_to_tool(&tools, words_of("say hello and run"));
  EXPECT_FALSE(say.chosen);
  EXPECT_HAS(say.reason, "the request names no capability");
  ToolRoute none = route_to_tool(nullptr, words_of("count the lines"));
  EXPECT_FALSE(none.chosen);
  EXPECT_HAS(none.reason, "no tool registry");
}

TEST(RouteRequest, AnUndecidedTypeGetsNoBudget) {
  auto d = route_request(shipped(), nullptr, "the weather in paris");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_FALSE(d->request_type.decided());
  EXPECT_FALSE(d->budget);
  EXPECT_HAS(d->budget_reason, "request type is undecided");
  EXPECT_FALSE(d->decided());
}

// The report, validated against the published contract.
nlohmann::json checked(const RouteReport& r) {
  nlohmann::json doc = nlohmann::json::parse(route_report_json(r, "2026-01-01T00:00:00.000Z").dump());
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / "skill-output.schema.json").string());
  EXPECT_TRUE(schema) << schema.error().message;
  if (schema) {
    auto violations = schema->validate(doc);
    EXPECT_TRUE(violations.empty()) << violations.front() << "\n" << doc.dump(2);
  }
  return doc;
}

TEST(RouteReportTest, ADecidedRequestIsASuccess) {
  ToolRegistry tools = registry();
  auto r = make_route_report(shipped(), &tools, "list the open github issues with a crash", false);
  ASSERT_TRUE(r) << r.error().message;
  nlohmann::json doc = checked(*r);
  EXPECT_EQ(doc["status"], "success");
  EXPECT_EQ(doc["skill_name"], "orch route");
  EXPECT_TRUE(doc["error"].is_null());
  const auto& data = doc["output"]["data"];
  EXPECT_EQ(data["intent"]["type"], "query");
  EXPECT_EQ(data["intent"]["domain"], "github");
  EXPECT_EQ(data["intent"]["domain_confidence"], 0.777);
  EXPECT_EQ(data["routing"]["match"], "no_match");
  EXPECT_EQ(data["routing"]["fallback"], "model");
  EXPECT_EQ(data["token_budget"]["allocated"], 500);
  EXPECT_EQ(data["token_budget"]["effective"], 400);
  EXPECT_EQ(data["classification"]["intent"], "bug_fix");
  EXPECT_EQ(data["classification"]["strategy"], "recall-execute-verify");
  EXPECT_EQ(doc["tokens_used"]["total"], 0) << "a route runs nothing";
}

TEST(RouteReportTest, AnUndecidedRequestIsPartialAndSaysWhy) {
  auto r = make_route_report(shipped(), nullptr, "count the lines", false);
  ASSERT_TRUE(r) << r.error().message;
  nlohmann::json doc = checked(*r);
  EXPECT_EQ(doc["status"], "partial");
  EXPECT_EQ(doc["error"]["code"], "route_undecided");
  EXPECT_HAS(doc["error"]["message"].get<std::string>(), "domain: no domain word in the request");
  EXPECT_EQ(doc["error"]["message"].get<std::string>().find("classification"), std::string::npos)
      << "the kind of work is reported beside the route, not as its error";
  EXPECT_EQ(doc["output"]["data"]["intent"]["domain"], "unknown");
  EXPECT_EQ(doc["output"]["data"]["intent"]["domain_confidence"], 0);
  EXPECT_EQ(doc["output"]["data"]["intent"]["decided"], false);
}

// Issue 31: the route is decided or not as a whole, and every field says the
// same. Its verdict is seed 004's request type and domain; the seed 000
// classification (what kind of work) is reported beside it, ambiguous or not.
TEST(RouteReportTest, UndecidedIsOneAnswerInEveryField) {
  // Decided: query/github, though no keyword says what kind of work it is.
  auto r = make_route_report(shipped(), nullptr, "list the open pull requests", false);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->decided());
  nlohmann::json doc = checked(*r);
  const auto& data = doc["output"]["data"];
  EXPECT_EQ(data["intent"]["type"], "query");
  EXPECT_EQ(data["intent"]["domain"], "github");
  EXPECT_EQ(data["intent"]["decided"], true);
  EXPECT_EQ(data["decided"], true);
  EXPECT_EQ(data["undecided"], nlohmann::json::array());
  EXPECT_EQ(doc["status"], "success");
  EXPECT_TRUE(doc["error"].is_null()) << doc["error"];
  EXPECT_TRUE(doc["output"]["summary"].get<std::string>().starts_with("decided: ")) << doc["output"]["summary"];
  EXPECT_EQ(data["classification"]["ambiguous"], true) << "reported beside the route, not as its verdict";
  EXPECT_TRUE(data["classification"]["intent"].is_null());
  EXPECT_HAS(format_route_report(*r), "status        success\n");

  // Undecided: the status, the error, data.decided, undecided[] and the summary agree.
  auto u = make_route_report(shipped(), nullptr, "make it nicer somehow", false);
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->decided());
  nlohmann::json no = checked(*u);
  const auto& ndata = no["output"]["data"];
  EXPECT_EQ(ndata["decided"], false);
  EXPECT_EQ(ndata["intent"]["decided"], false);
  ASSERT_EQ(ndata["undecided"].size(), 2u) << ndata["undecided"];
  EXPECT_TRUE(ndata["undecided"][0].get<std::string>().starts_with("intent.type: ")) << ndata["undecided"];
  EXPECT_TRUE(ndata["undecided"][1].get<std::string>().starts_with("intent.domain: no domain word"));
  EXPECT_EQ(no["status"], "partial");
  EXPECT_EQ(no["error"]["code"], "route_undecided");
  EXPECT_EQ(no["error"]["message"], ndata["undecided"][0].get<std::string>() + "; " +
                                        ndata["undecided"][1].get<std::string>());
  EXPECT_TRUE(no["output"]["summary"].get<std::string>().starts_with("undecided (intent.type: "));
  EXPECT_HAS(format_route_report(*u), "status        partial: undecided intent.type: ");

  // --dry-run changes the status only.
  auto dry = make_route_report(shipped(), nullptr, "make it nicer somehow", true);
  ASSERT_TRUE(dry);
  nlohmann::json dry_doc = checked(*dry);
  EXPECT_EQ(dry_doc["status"], "dry_run");
  EXPECT_EQ(dry_doc["error"]["code"], "route_undecided");
  EXPECT_EQ(dry_doc["output"]["data"]["decided"], false);
}

// The published contract refuses a report whose fields disagree.
TEST(RouteReportTest, TheSchemaRefusesAReportThatContradictsItself) {
  auto r = make_route_report(shipped(), nullptr, "make it nicer somehow", false);
  ASSERT_TRUE(r);
  nlohmann::json doc = nlohmann::json::parse(route_report_json(*r, "2026-01-01T00:00:00.000Z").dump());
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / "skill-output.schema.json").string());
  ASSERT_TRUE(schema) << schema.error().message;
  ASSERT_TRUE(schema->validate(doc).empty());
  nlohmann::json success = doc;
  success["status"] = "success";
  success["error"] = nullptr;
  EXPECT_FALSE(schema->validate(success).empty()) << "success with data.decided false";
  nlohmann::json decided = doc;
  decided["output"]["data"]["decided"] = true;
  decided["output"]["data"]["undecided"] = nlohmann::json::array();
  EXPECT_FALSE(schema->validate(decided).empty()) << "decided with an undecided intent";
  nlohmann::json other_code = doc;
  other_code["error"]["code"] = "orch_error";
  EXPECT_FALSE(schema->validate(other_code).empty()) << "undecided is route_undecided";
  auto ok = make_route_report(shipped(), nullptr, "list the open pull requests", false);
  ASSERT_TRUE(ok);
  nlohmann::json contradiction = nlohmann::json::parse(route_report_json(*ok, "2026-01-01T00:00:00.000Z").dump());
  ASSERT_TRUE(schema->validate(contradiction).empty());
  contradiction["error"] = {{"code", "route_undecided"}, {"message", "x"}, {"recoverable", true}, {"step", nullptr}};
  EXPECT_FALSE(schema->validate(contradiction).empty()) << "a decided route with an error (the issue's report)";
}

TEST(RouteReportTest, ATrivialRequestAToolCoversGoesToolDirect) {
  ToolRegistry tools = registry();
  auto r = make_route_report(shipped(), &tools, "quick: count the lines of the system log", true);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->classification.complexity, "trivial");
  EXPECT_EQ(r->model_need, ModelNeed::None);
  EXPECT_EQ(r->strategy, "tool-direct");
  nlohmann::json doc = checked(*r);
  EXPECT_EQ(doc["status"], "dry_run");
  EXPECT_EQ(doc["output"]["data"]["routing"]["selected_tool"], "filestats");
  EXPECT_EQ(doc["output"]["data"]["classification"]["pipeline"],
            nlohmann::json::array({"ROUTE", "EXECUTE", "VERIFY", "SUMMARIZE"}));
  EXPECT_HAS(format_route_report(*r), "tool-direct (model none): ROUTE -> EXECUTE -> VERIFY -> SUMMARIZE");
}

}  // namespace
}  // namespace orch::route
