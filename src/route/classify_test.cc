// The seed's classification rules (seed 000), each as a test, on the shipped
// tables (data/route/*.yaml): whole words and declared stems, the known
// misfires, the seed's tie-break order, ambiguity, complexity, strategies,
// pipelines and budgets.
#include "route/classify.h"

#include <gtest/gtest.h>

#include <string>

#include "route/tables.h"
#include "route/words.h"
#include "route/route_test_support.h"
#include "testing/testing.h"

namespace orch::route {
namespace {

using orch::testing::TempDir;

using test::shipped;

// Every intent with a keyword hit.
std::vector<std::string> hit_intents(const std::string& request) {
  std::vector<std::string> out;
  for (const auto& s : classify(shipped(), request).scores) out.push_back(s.intent);
  return out;
}

bool hits(const std::string& request, const std::string& intent) {
  auto all = hit_intents(request);
  return std::find(all.begin(), all.end(), intent) != all.end();
}

std::string intent_of(const std::string& request) {
  return classify(shipped(), request).intent;
}

std::string complexity_of(const std::string& request) {
  return classify(shipped(), request).complexity;
}

// "w w w ..." with n words.
std::string words(int n, const std::string& word = "widget") {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? " " : "") + word;
  return out;
}

TEST(RouteWords, LowerCasesAndCutsAtEveryNonAlphanumeric) {
  EXPECT_EQ(words_of("Fix the CI/CD pipeline's `flaky` test-run, v1.2!"),
            (std::vector<std::string>{"fix", "the", "ci", "cd", "pipeline", "s", "flaky", "test", "run", "v1",
                                      "2"}));
  // UTF-8 letters stay in the word; curly quotes and the no-break space separate.
  EXPECT_EQ(words_of("réparer \xE2\x80\x9C"
                     "crash\xE2\x80\x9D\xC2\xA0now"),
            (std::vector<std::string>{"réparer", "crash", "now"}));
  EXPECT_EQ(count_code_points("héllo"), 5);
}

TEST(RouteWords, KeywordsMatchWholeWordsOnly) {
  Keyword ci{"ci", {"ci"}, "", {}, 1.0, 1};
  EXPECT_FALSE(find_keyword(words_of("fix the circuit driver"), ci));
  EXPECT_EQ(find_keyword(words_of("the CI is red"), ci), "ci");
  Keyword stem{"mal", {}, "mal", {"malware", "malicious"}, 1.0, 1};
  EXPECT_FALSE(find_keyword(words_of("normal mal maliciously"), stem)) << "only the declared forms match";
  EXPECT_EQ(find_keyword(words_of("remove the malware"), stem), "malware");
  Keyword phrase{"hacker news", {"hacker", "news"}, "", {}, 1.0, 1};
  EXPECT_EQ(find_keyword(words_of("watch Hacker News"), phrase), "hacker news");
  EXPECT_FALSE(find_keyword(words_of("news for hackers"), phrase));
}

TEST(RouteClassify, CiDoesNotFireInsideCircuit) {
  Classification c = classify(shipped(), "fix the circuit driver");
  EXPECT_EQ(c.intent, "bug_fix");
  EXPECT_FALSE(hits("fix the circuit driver", "deployment"));
  EXPECT_TRUE(hits("fix the ci config", "deployment")) << "the whole word still counts";
}

TEST(RouteClassify, KnownSubstringMisfiresDoNotFire) {
  EXPECT_FALSE(hits("update the capital letters in the title", "feature")) << "'api' inside 'capital'";
  EXPECT_TRUE(hits("expose it through the api", "feature"));
  EXPECT_FALSE(hits("keep the normal flow", "security")) << "the stem 'mal' inside 'normal'";
  EXPECT_TRUE(hits("scan for malware", "security"));
  EXPECT_FALSE(hits("prefix the names", "bug_fix")) << "'fix' inside 'prefix'";
  EXPECT_FALSE(hits("the player cannot jump", "architecture")) << "'layer' inside 'player'";
}

TEST(RouteClassify, InflectedFormsMatchThroughDeclaredStems) {
  for (const char* request : {"fixing the login", "fixed the login", "fixes the login"}) {
    Classification c = classify(shipped(), request);
    EXPECT_EQ(c.intent, "bug_fix") << request;
    ASSERT_FALSE(c.scores.empty());
    EXPECT_EQ(c.scores.front().matched, std::vector<std::string>{words_of(request).front()});
  }
  EXPECT_EQ(intent_of("optimizing the query planner"), "performance");
  EXPECT_EQ(intent_of("migration notes are investigated"), "research");
}

// Seed 000: "quick_fix, bug_fix, feature, architecture, research, documentation,
// performance, security, deployment ... ties broken by dict order".
TEST(RouteClassify, TiesFollowTheSeedsOrderQuickFixFirst) {
  const RouteTables& t = shipped();
  std::vector<std::string> order;
  for (const auto& intent : t.intents) order.push_back(intent.name);
  EXPECT_EQ(order, (std::vector<std::string>{"quick_fix", "bug_fix", "feature", "architecture", "research",
                                             "documentation", "performance", "security", "deployment"}));
  // One hit each for quick_fix (typo), bug_fix (fix) and documentation (readme).
  Classification c = classify(t, "fix typo in readme");
  EXPECT_EQ(c.intent, "quick_fix") << c.intent_reason;
  ASSERT_EQ(c.scores.size(), 3u);
  EXPECT_EQ(c.scores[1].intent, "bug_fix");
  EXPECT_EQ(c.scores[2].intent, "documentation");
  EXPECT_NE(c.intent_reason.find("seed 000's order"), std::string::npos) << c.intent_reason;
  EXPECT_EQ(c.complexity, "trivial");
  // bug_fix is written before deployment and security.
  EXPECT_EQ(intent_of("fix the deploy script"), "bug_fix");
  EXPECT_EQ(intent_of("fix the password check"), "bug_fix");
  // More hits beat the order.
  EXPECT_EQ(intent_of("deploy the release to staging, then fix it"), "deployment");
}

// The seed's own deep-pipeline trace: "design-and-implement-a-workflow", the
// orchestrator's build, ran the deep strategy.
TEST(RouteClassify, TheSeedsDeepExampleIsArchitectureAndComplex) {
  Classification c =
      classify(shipped(), "design and implement a workflow orchestrator as the central runtime of the OS");
  EXPECT_EQ(c.intent, "architecture") << c.intent_reason;
  EXPECT_EQ(c.complexity, "complex");
  EXPECT_EQ(strategy_for(shipped(), c.complexity, ModelNeed::Required), "deep");
  EXPECT_EQ(c.budget_tokens, 12000);
}

// A phrase keyword that occurs claims its words: "memory leak" is bug_fix's,
// and security's single word `leak` does not score on it too (which tied the two
// and sent a memory leak down the security path). A `leak` elsewhere still counts.
TEST(RouteClassify, APhraseClaimsItsWordsFromSingleWordKeywords) {
  Classification c = classify(shipped(), "there is a memory leak in the parser");
  EXPECT_EQ(c.intent, "bug_fix") << c.intent_reason;
  EXPECT_FALSE(hits("there is a memory leak in the parser", "security"));
  ASSERT_EQ(c.scores.size(), 1u);
  EXPECT_EQ(c.scores[0].matched, std::vector<std::string>{"memory leak"});
  EXPECT_EQ(intent_of("memory leak"), "bug_fix");
  // Its own intent's single word does not count twice on it either.
  Classification sql = classify(shipped(), "sql injection in the login form");
  ASSERT_FALSE(sql.scores.empty());
  EXPECT_EQ(sql.scores[0].intent, "security");
  EXPECT_EQ(sql.scores[0].matched, std::vector<std::string>{"sql injection"});
  // The word outside the phrase is a word of its own.
  EXPECT_TRUE(hits("the memory leak also leaks the session token", "security"));
}

TEST(RouteWords, PhrasesClaimTheirWordsAcrossLists) {
  const std::vector<Keyword> security = {{"leak", {"leak"}, "", {}, 1.0, 1}};
  const std::vector<Keyword> bug_fix = {{"memory leak", {"memory", "leak"}, "", {}, 1.0, 2},
                                        {"fix", {"fix"}, "", {}, 1.0, 3}};
  const std::vector<Keyword> longer = {{"big memory leak", {"big", "memory", "leak"}, "", {}, 1.0, 4}};
  auto hits = find_keywords_claiming(words_of("fix the memory leak"), {&security, &bug_fix});
  EXPECT_TRUE(hits[0].empty());
  ASSERT_EQ(hits[1].size(), 2u);
  EXPECT_EQ(hits[1][0].matched, "memory leak");
  EXPECT_EQ(hits[1][1].matched, "fix");
  // The longer phrase claims first, whatever the order of the lists.
  hits = find_keywords_claiming(words_of("a big memory leak"), {&bug_fix, &longer});
  EXPECT_TRUE(hits[0].empty());
  ASSERT_EQ(hits[1].size(), 1u);
  // A second occurrence of the word is free.
  hits = find_keywords_claiming(words_of("leak: the memory leak"), {&security, &bug_fix});
  EXPECT_EQ(hits[0].size(), 1u);
  EXPECT_EQ(hits[1].size(), 1u);
}

TEST(RouteClassify, NoHitIsAmbiguous) {
  Classification c = classify(shipped(), "make it nicer somehow");
  EXPECT_TRUE(c.ambiguous);
  EXPECT_EQ(c.intent, "");
  EXPECT_TRUE(c.scores.empty());
  EXPECT_TRUE(c.engines.empty());
  EXPECT_TRUE(c.verify.empty());
  EXPECT_EQ(c.complexity, "standard") << "complexity.yaml's default";
  EXPECT_EQ(c.budget_tokens, 3000);
  EXPECT_NE(c.intent_reason.find("ask"), std::string::npos);
}

// `orch task --assume`: the assumed intent's engines, budget and checklist,
// with what the keywords said kept in the reason.
TEST(RouteClassify, AnAssumedIntentReplacesTheKeywordVerdict) {
  Classification c = classify_as(shipped(), "make it nicer somehow", "research");
  EXPECT_FALSE(c.ambiguous);
  EXPECT_EQ(c.intent, "research");
  EXPECT_EQ(c.budget_tokens, 20000);
  EXPECT_FALSE(c.verify.empty());
  EXPECT_FALSE(c.engines.empty());
  EXPECT_NE(c.intent_reason.find("no keyword matched"), std::string::npos) << c.intent_reason;
  Classification over = classify_as(shipped(), "fix the login crash", "security");
  EXPECT_EQ(over.intent, "security");
  EXPECT_EQ(over.complexity, "standard") << "security is never below standard";
  EXPECT_NE(over.intent_reason.find("the keywords said bug_fix"), std::string::npos) << over.intent_reason;
}

TEST(RouteClassify, ComplexityFollowsTheIntent) {
  EXPECT_EQ(complexity_of("fix the login crash"), "standard");
  EXPECT_EQ(complexity_of("quick tweak to the footer"), "trivial");
  EXPECT_EQ(complexity_of("refactor the parser"), "complex") << "architecture is complex";
}

TEST(RouteClassify, MoreThanSixtyWordsIsComplex) {
  EXPECT_EQ(complexity_of("fix the crash " + words(57)), "standard");    // 60 words
  Classification c = classify(shipped(), "fix the crash " + words(58));  // 61 words
  EXPECT_EQ(c.word_count, 61);
  EXPECT_EQ(c.complexity, "complex");
  EXPECT_NE(c.complexity_reasons.back().find("61 words"), std::string::npos);
}

TEST(RouteClassify, ComplexWordsRaiseAndTrivialWordsLower) {
  EXPECT_EQ(complexity_of("fix the crash across all services"), "complex");
  EXPECT_EQ(complexity_of("migrate the login page"), "complex");
  EXPECT_EQ(complexity_of("fix the typo in the login page"), "trivial");
  // A complex word beats a trivial one.
  EXPECT_EQ(complexity_of("rename the fields across the codebase"), "complex");
  // A trivial word never takes an intent below its min.
  Classification sec = classify(shipped(), "fix the typo in the password check of the login credentials");
  EXPECT_EQ(sec.intent, "security");
  EXPECT_EQ(sec.complexity, "standard");
  EXPECT_EQ(complexity_of("rename the architecture layers"), "complex");
}

TEST(RouteClassify, BudgetsByComplexityAndResearch) {
  EXPECT_EQ(classify(shipped(), "fix the typo in the footer").budget_tokens, 600);
  EXPECT_EQ(classify(shipped(), "fix the login crash").budget_tokens, 3000);
  EXPECT_EQ(classify(shipped(), "redesign the storage layer").budget_tokens, 12000);
  Classification research = classify(shipped(), "research how others store traces");
  EXPECT_EQ(research.intent, "research");
  EXPECT_EQ(research.budget_tokens, 20000);
}

TEST(RouteClassify, EnginesChecklistAndRecallTagsComeFromTheTables) {
  Classification c = classify(shipped(), "Fix the stale date crash in navigation");
  EXPECT_EQ(c.intent, "bug_fix");
  EXPECT_EQ(c.engines, (std::vector<std::string>{"experience", "knowledge", "audit"}));
  ASSERT_FALSE(c.verify.empty());
  EXPECT_EQ(c.verify.front().check, "root cause named, not symptom");
  EXPECT_TRUE(c.verify.front().attest);
  // Keywords (fix, crash) and stopwords (the, in) are not tags.
  EXPECT_EQ(c.recall_tags, (std::vector<std::string>{"stale", "date", "navigation"}));
}

TEST(RouteStrategy, ComplexityToStrategyToPipeline) {
  const RouteTables& t = shipped();
  EXPECT_EQ(strategy_for(t, "trivial", ModelNeed::Required), "direct");
  EXPECT_EQ(strategy_for(t, "standard", ModelNeed::CacheFirst), "recall-execute-verify");
  EXPECT_EQ(strategy_for(t, "complex", ModelNeed::Required), "deep");
  EXPECT_EQ(strategy_for(t, "complex", ModelNeed::None), "tool-direct");
  EXPECT_EQ(strategy_for(t, "huge", ModelNeed::Required), "");
  using V = std::vector<std::string>;
  EXPECT_EQ(pipeline_for(t, "direct"), (V{"RECALL", "EXECUTE", "VERIFY", "SUMMARIZE"}));
  EXPECT_EQ(pipeline_for(t, "recall-execute-verify"),
            (V{"RECALL", "PLAN", "EXECUTE", "VERIFY", "SUMMARIZE"}));
  EXPECT_EQ(pipeline_for(t, "deep"),
            (V{"RECALL", "SIMILARITY", "PLAN", "EXECUTE", "VERIFY", "REVIEW", "SUMMARIZE"}));
  EXPECT_EQ(pipeline_for(t, "tool-direct"), (V{"ROUTE", "EXECUTE", "VERIFY", "SUMMARIZE"}));
  EXPECT_TRUE(pipeline_for(t, "nope").empty());
}

TEST(RouteStrategy, TheCapabilityGateInItsOrder) {
  EXPECT_EQ(model_need(true, "trivial", true), ModelNeed::None)
      << "a tool that covers the request needs no model, however similar a past trace";
  EXPECT_EQ(model_need(true, "trivial", false), ModelNeed::CacheFirst);
  EXPECT_EQ(model_need(true, "standard", true), ModelNeed::CacheFirst);
  EXPECT_EQ(model_need(false, "trivial", true), ModelNeed::None);
  EXPECT_EQ(model_need(false, "standard", true), ModelNeed::Required)
      << "only a trivial request goes tool-direct";
  EXPECT_EQ(model_need(false, "trivial", false), ModelNeed::Required);
  EXPECT_STREQ(model_need_name(ModelNeed::CacheFirst), "cache-first");
}

}  // namespace
}  // namespace orch::route
