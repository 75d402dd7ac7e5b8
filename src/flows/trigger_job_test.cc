// TriggerJob: the seed's three signals, and the requests that must stay one step.
#include "flows/trigger_job.h"

#include <gtest/gtest.h>

namespace orch::flows {
namespace {

JobSignal signal_of(const char* request) { return trigger_job(request).signal; }

// ---- seed 002's own cases ----------------------------------------------------

TEST(TriggerJobTest, SeedReadXAndWriteYStaysOneStep) {
  EXPECT_EQ(signal_of("read X and write Y"), JobSignal::None);
  EXPECT_EQ(signal_of("Read config.yaml and write a summary to notes.md"), JobSignal::None);
}

TEST(TriggerJobTest, SeedJobPhrasesFire) {
  TriggerResult all = trigger_job("Do all of the following: tidy the imports in the parser.");
  EXPECT_EQ(all.signal, JobSignal::JobPhrase);
  EXPECT_EQ(all.phrase, "do all of the following");
  TriggerResult each = trigger_job("For each module under src/, add a license header");
  EXPECT_EQ(each.signal, JobSignal::JobPhrase);
  EXPECT_EQ(each.phrase, "for each");
  EXPECT_EQ(signal_of("Run this workflow: lint, then package"), JobSignal::JobPhrase);
  EXPECT_EQ(signal_of("Follow the following workflow for the release"), JobSignal::JobPhrase);
}

TEST(TriggerJobTest, SeedChecklistOfTwoOrMoreItemsFires) {
  TriggerResult r = trigger_job("Please:\n1. bump the version\n2. update the changelog\n3. tag the release\n");
  ASSERT_EQ(r.signal, JobSignal::Checklist);
  EXPECT_EQ(r.items, (std::vector<std::string>{"bump the version", "update the changelog", "tag the release"}));
  TriggerResult bullets = trigger_job("Cleanup:\n- delete build/ artefacts\n* drop the old CI config\n");
  ASSERT_EQ(bullets.signal, JobSignal::Checklist);
  EXPECT_EQ(bullets.items, (std::vector<std::string>{"delete build/ artefacts", "drop the old CI config"}));
  TriggerResult parens = trigger_job("(1) rename foo.cc\n(2) move it to src/");
  EXPECT_EQ(parens.items, (std::vector<std::string>{"rename foo.cc", "move it to src/"}));
  TriggerResult checkbox = trigger_job("- [ ] write the spec\n- [x] review it");
  EXPECT_EQ(checkbox.items, (std::vector<std::string>{"write the spec", "review it"}));
}

TEST(TriggerJobTest, SeedThreeDistinctVerbsJoinedByConjunctionsFire) {
  TriggerResult r = trigger_job("Read the logs, summarize the errors and email the summary to the team");
  ASSERT_EQ(r.signal, JobSignal::CompoundVerbs);
  EXPECT_EQ(r.verbs, (std::vector<std::string>{"read", "summarize", "email"}));
  EXPECT_EQ(signal_of("Fix the parser, then run the tests and commit"), JobSignal::CompoundVerbs);
  EXPECT_EQ(signal_of("Clean and format the code, then publish it"), JobSignal::CompoundVerbs);
}

// ---- where the seed's real implementation fell short -------------------------

TEST(TriggerJobTest, WordsInsideOtherWordsAreNotVerbs) {
  // "rewrite" is not "write", "retest"/"prebuild" are not verbs, "undo" is not "do".
  TriggerResult r = trigger_job("Rewrite the intro, prebuild the wheel and retest");
  EXPECT_EQ(r.signal, JobSignal::None) << r.explanation();
  EXPECT_EQ(r.verbs, (std::vector<std::string>{"rewrite"}));
  EXPECT_EQ(signal_of("undo all of the following changes"), JobSignal::JobPhrase);  // the phrase is whole words
  EXPECT_EQ(signal_of("undo all of the followings"), JobSignal::None);
}

TEST(TriggerJobTest, WorkflowAsANounIsNotAJob) {
  EXPECT_EQ(signal_of("fix the CI workflow file"), JobSignal::None);
  EXPECT_EQ(signal_of("Why does the release workflow fail on tags?"), JobSignal::None);
  EXPECT_EQ(signal_of("Create a GitHub workflow that builds, tests and deploys the app"), JobSignal::None);
}

TEST(TriggerJobTest, InflectedVerbsAreRecognised) {
  EXPECT_EQ(action_verb_base("running"), "run");
  EXPECT_EQ(action_verb_base("summarized"), "summarize");
  EXPECT_EQ(action_verb_base("committed"), "commit");
  EXPECT_EQ(action_verb_base("copied"), "copy");
  EXPECT_EQ(action_verb_base("wrote"), "write");
  EXPECT_EQ(action_verb_base("writing"), "write");
  EXPECT_EQ(action_verb_base("rewriting"), "rewrite");
  EXPECT_EQ(action_verb_base("tests"), "");  // third person / plural: not counted
  EXPECT_EQ(action_verb_base("circuit"), "");
  EXPECT_EQ(action_verb_base("string"), "");  // "str" + "ing" is no verb
  TriggerResult r = trigger_job("Running the suite, fixing what fails and summarizing it for the team");
  ASSERT_EQ(r.signal, JobSignal::CompoundVerbs) << r.explanation();
  EXPECT_EQ(r.verbs, (std::vector<std::string>{"run", "fix", "summarize"}));
}

// Issue 31: a verb counts in any inflection, the third person included, when its
// object follows it (alone, "updates" or "tests" is mostly a plural noun).
TEST(TriggerJobTest, ThirdPersonVerbsCountWithTheirObject) {
  TriggerResult r = trigger_job("summarizes the doc, analyzes it and reviews it");
  ASSERT_EQ(r.signal, JobSignal::CompoundVerbs) << r.explanation();
  EXPECT_EQ(r.verbs, (std::vector<std::string>{"summarize", "analyze", "review"}));
  EXPECT_EQ(trigger_job("Fixes the parser, copies the fixtures and reruns the suite").verbs,
            (std::vector<std::string>{"fix", "copy", "rerun"}));
  // Plural nouns after a conjunction stay nouns.
  EXPECT_EQ(signal_of("Fix the parser, then run the lints and tests"), JobSignal::None);
  EXPECT_EQ(signal_of("Write the release notes for the fixes and updates"), JobSignal::None);
  // "rewrites" is "rewrite", never "write".
  EXPECT_EQ(trigger_job("Rewrites the intro").verbs, (std::vector<std::string>{"rewrite"}));
}

TEST(TriggerJobTest, TheIssuesJobsFire) {
  TriggerResult research = trigger_job("research these five HTTP libraries and write me a comparison");
  ASSERT_EQ(research.signal, JobSignal::CountedItems) << research.explanation();
  EXPECT_EQ(research.phrase, "these five http libraries");
  EXPECT_EQ(research.verbs, (std::vector<std::string>{"research", "write"}));
  EXPECT_EQ(trigger_job("run the tests in parallel").signal, JobSignal::JobPhrase);
  EXPECT_EQ(trigger_job("run the tests in parallel").phrase, "in parallel");
  EXPECT_EQ(trigger_job("explain this step by step").phrase, "step by step");
  TriggerResult following = trigger_job("do the following: tidy the imports in the parser");
  EXPECT_EQ(following.signal, JobSignal::JobPhrase);
  EXPECT_EQ(following.phrase, "do the following");
}

TEST(TriggerJobTest, TheNewSignalsKeepTheSeedsGuards) {
  // "in parallel" and "step by step" ask for work only in a request for work.
  EXPECT_EQ(signal_of("the tests run in parallel and hang"), JobSignal::None);
  EXPECT_EQ(signal_of("Why does the build fail step by step?"), JobSignal::None);
  // Counted items need two clause verbs, three things or more, and things, not units.
  EXPECT_EQ(signal_of("research these five HTTP libraries"), JobSignal::None);
  EXPECT_EQ(signal_of("compare these two libraries and write me a comparison"), JobSignal::None);
  EXPECT_EQ(signal_of("run the tests 5 times and fix the flaky one"), JobSignal::None);
  EXPECT_EQ(signal_of("read X and write Y"), JobSignal::None);
  EXPECT_EQ(signal_of("fix the CI workflow file"), JobSignal::None);
  EXPECT_EQ(signal_of("Rewrite the intro and prebuild the wheel"), JobSignal::None);
}

// ---- biased toward one step: tricky negatives ---------------------------------

TEST(TriggerJobTest, OneOrTwoVerbsNeverFire) {
  EXPECT_EQ(signal_of("Fix the flaky test in parser_test.cc"), JobSignal::None);
  EXPECT_EQ(signal_of("Refactor the loader and add a test"), JobSignal::None);
  EXPECT_EQ(signal_of("test, test and test again"), JobSignal::None);  // distinct verbs
}

TEST(TriggerJobTest, VerbsThatAreAlsoNounsNeedAVerbPosition) {
  // "build" and "test" after "the ... and" are nouns: write is the only verb.
  TriggerResult r = trigger_job("Write a report on the build and test results, and release notes");
  EXPECT_EQ(r.signal, JobSignal::None) << r.explanation();
  // The same words in verb position count.
  EXPECT_EQ(signal_of("Build the app, test it and release it"), JobSignal::CompoundVerbs);
}

TEST(TriggerJobTest, VerbsInsideADescriptionDoNotCount) {
  EXPECT_EQ(signal_of("Write a script to parse the logs, extract the errors and email them"), JobSignal::None);
  EXPECT_EQ(signal_of("Add a function that reads, validates and stores the config"), JobSignal::None);
}

TEST(TriggerJobTest, VerbsMustStartClausesAndBeJoinedByAConjunction) {
  // Verbs in the middle of a clause are not coordinated actions.
  EXPECT_EQ(signal_of("Explain why tests that read files and write logs fail to run"), JobSignal::None);
  // Three verb clauses with no conjunction at all.
  EXPECT_EQ(signal_of("Read the spec. Fix the bug. Deploy."), JobSignal::None);
}

TEST(TriggerJobTest, CodeAndQuotesAreNotRead) {
  EXPECT_EQ(signal_of("What does `read, parse and write` do in main.py?"), JobSignal::None);
  EXPECT_EQ(signal_of("Rename the \"fetch, parse and store\" option to ingest"), JobSignal::None);
  EXPECT_EQ(signal_of("Why does this fail?\n```\n- a\n- b\n1. c\n2. d\nfor each x: read, fix and test x\n```"),
            JobSignal::None);
  EXPECT_EQ(signal_of("Convert the for-each loop to a range-for"), JobSignal::None);
}

TEST(TriggerJobTest, NumbersInProseAndVersionsAreNotAList) {
  EXPECT_EQ(signal_of("Upgrade to Python 3.11. Then nothing else."), JobSignal::None);
  EXPECT_EQ(signal_of("Bump the version from 1.2.3 to 1.3.0"), JobSignal::None);
  EXPECT_EQ(signal_of("We have 2 failures:\n1. test_parse times out"), JobSignal::None);  // one item
  EXPECT_EQ(signal_of("1.5 seconds is too slow\n2.0 is the target"), JobSignal::None);
  EXPECT_EQ(signal_of("Call f(1) and g(2) from main"), JobSignal::None);
  EXPECT_EQ(signal_of("Use options 2) and 3) from the doc"), JobSignal::None);  // not numbered from 1
  EXPECT_EQ(signal_of("-5 degrees\nis cold"), JobSignal::None);
  EXPECT_EQ(signal_of("2. fix b\n3. fix c"), JobSignal::None);  // does not start at 1
}

TEST(TriggerJobTest, InlineEnumerationsFire) {
  TriggerResult r = trigger_job("Two things: 1) drop the cache and 2) rebuild the index");
  ASSERT_EQ(r.signal, JobSignal::Checklist);
  EXPECT_EQ(r.items, (std::vector<std::string>{"drop the cache", "rebuild the index"}));
}

TEST(TriggerJobTest, TheExplanationNamesTheSignal) {
  EXPECT_EQ(trigger_job("- a\n- b").explanation(), "an enumerated checklist of 2 items");
  EXPECT_EQ(trigger_job("for each file, add a header").explanation(), "the job phrase 'for each'");
  EXPECT_NE(trigger_job("fix it").explanation().find("no job signal"), std::string::npos);
}

}  // namespace
}  // namespace orch::flows
