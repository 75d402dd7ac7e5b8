// The cycle's lifecycle, objectives and jobs (seed 003), as pure functions.
#include "flows/cycle_objectives.h"

#include <gtest/gtest.h>

#include <map>

namespace orch::flows {
namespace {

using json = nlohmann::json;

// The seed's lifecycle, after nl_reviewed, and a polish stage.
Lifecycle seed_lifecycle() {
  auto l = Lifecycle::from_json(json::parse(R"({
    "states": ["nl_reviewed", "bound", "aligned", "proved", "polished"],
    "stages": {"formalize": "nl_reviewed -> bound|aligned", "prove": "aligned -> proved",
               "polish": "proved -> polished"}})"));
  EXPECT_TRUE(l) << (l ? "" : l.error().message);
  return l ? *l : Lifecycle{};
}

TEST(CycleLifecycle, LegalTransitionsAreTheStagesOnly) {
  const Lifecycle l = seed_lifecycle();
  EXPECT_TRUE(l.legal("nl_reviewed", "bound"));
  EXPECT_TRUE(l.legal("nl_reviewed", "aligned"));
  EXPECT_TRUE(l.legal("aligned", "proved"));
  EXPECT_FALSE(l.legal("nl_reviewed", "proved")) << "no stage skips prove";
  EXPECT_FALSE(l.legal("proved", "aligned")) << "never backwards";
  EXPECT_FALSE(l.legal("bound", "aligned")) << "no stage moves an item out of bound";
  EXPECT_FALSE(l.legal("polished", "polished"));
  EXPECT_EQ(l.stage_for("aligned")->name, "prove");
  EXPECT_EQ(l.stage_for("polished"), nullptr) << "done";
  EXPECT_EQ(l.stage_for("nonsense"), nullptr);
}

TEST(CycleLifecycle, EveryMistakeOfALifecycleIsNamedAtOnce) {
  auto bad = Lifecycle::from_json(json::parse(R"({
    "states": ["a", "b", "c", "a"],
    "stages": {"one": "a -> bb", "two": "c -> a", "three": "a -> b", "four": "b", "five": "b -> c"}})"));
  ASSERT_FALSE(bad);
  const std::string& m = bad.error().message;
  EXPECT_NE(m.find("lifecycle.states[3]: 'a' is listed twice"), std::string::npos) << m;
  EXPECT_NE(m.find("lifecycle.stages.one: 'bb' is not a state of lifecycle.states (did you mean 'b'?)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("lifecycle.stages.two: 'c' -> 'a' does not move forward"), std::string::npos) << m;
  EXPECT_NE(m.find("lifecycle.stages.three: stage 'one' already moves items out of 'a'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("lifecycle.stages.four: must be \"FROM -> TO\""), std::string::npos) << m;
  EXPECT_EQ(m.find("stages.five"), std::string::npos) << "a good stage is not named: " << m;
  EXPECT_FALSE(Lifecycle::from_json(json::parse(R"({"states": [], "stages": {}})")));
}

TEST(CycleLifecycle, AMilestoneSaysAStateOrOneOfTheSeedsWords) {
  const Lifecycle l = seed_lifecycle();
  EXPECT_EQ(parse_milestone_outcome("proved", l), MilestoneOutcome::Advanced);
  EXPECT_EQ(parse_milestone_outcome("no-change", l), MilestoneOutcome::NoChange);
  EXPECT_EQ(parse_milestone_outcome("scope-violation", l), MilestoneOutcome::ScopeViolation);
  EXPECT_EQ(parse_milestone_outcome("blocked-by-formalize-failure", l),
            MilestoneOutcome::BlockedByFormalizeFailure);
  EXPECT_EQ(parse_milestone_outcome("done!", l), std::nullopt);
  for (auto o : {MilestoneOutcome::Stuck, MilestoneOutcome::NoChange, MilestoneOutcome::RejectedByScheduler,
                 MilestoneOutcome::RejectedByReview, MilestoneOutcome::BlockedByFormalizeFailure,
                 MilestoneOutcome::ScopeViolation})
    EXPECT_EQ(parse_milestone_outcome(milestone_outcome_name(o), l), o);
}

ItemOutcome outcome(int cycle, MilestoneOutcome o, const std::string& state, const std::string& hash) {
  ItemOutcome out;
  out.cycle = cycle;
  out.outcome = o;
  out.transition = milestone_outcome_name(o);
  out.why = "cycle " + std::to_string(cycle);
  out.state = state;
  out.file_hash = hash;
  return out;
}

TEST(CycleObjectives, ItemsWithAStageAreSelectedWithTheirPastAttempts) {
  const Lifecycle l = seed_lifecycle();
  const std::vector<CycleItem> items = {{"t1", "A.lean", "aligned"},
                                        {"t2", "B.lean", "polished"},  // done
                                        {"t3", "A.lean", "nl_reviewed"},
                                        {"t4", "C.lean", "bound"}};  // no stage out of bound
  const std::vector<ItemHistory> history = {{"t1",
                                             {outcome(1, MilestoneOutcome::RejectedByReview, "aligned", "h1"),
                                              outcome(3, MilestoneOutcome::NoChange, "aligned", "h2")}}};
  auto hash = [](const std::string&) { return std::string("h3"); };
  const auto tasks = select_objectives(items, l, history, hash, 1);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].id, "t1");
  EXPECT_EQ(tasks[0].stage, "prove");
  ASSERT_EQ(tasks[0].past_attempts.size(), 1u) << "the window of one";
  EXPECT_EQ(tasks[0].past_attempts[0].cycle, 3) << "the newest";
  EXPECT_EQ(tasks[1].id, "t3");
  EXPECT_EQ(tasks[1].stage, "formalize");
  EXPECT_TRUE(tasks[1].past_attempts.empty());
  EXPECT_EQ(select_objectives(items, l, history, hash, 5)[0].past_attempts.size(), 2u);
}

TEST(CycleObjectives, TwoStrikesInConsecutiveCyclesMakeAnItemStuckUntilItsFileChanges) {
  const CycleItem item{"t1", "A.lean", "aligned"};
  const auto strike = MilestoneOutcome::NoChange;
  EXPECT_FALSE(is_stuck(item, {outcome(1, strike, "aligned", "h")}, "h")) << "one strike";
  EXPECT_TRUE(is_stuck(
      item,
      {outcome(1, strike, "aligned", "h"), outcome(2, MilestoneOutcome::RejectedByReview, "aligned", "h")},
      "h"));
  EXPECT_FALSE(is_stuck(item, {outcome(1, strike, "aligned", "h"), outcome(3, strike, "aligned", "h")}, "h"))
      << "not consecutive";
  EXPECT_FALSE(
      is_stuck(item, {outcome(1, strike, "aligned", "h"), outcome(2, strike, "aligned", "h")}, "edited"))
      << "its file changed by other means";
  EXPECT_FALSE(is_stuck(CycleItem{"t1", "A.lean", "nl_reviewed"},
                        {outcome(1, strike, "aligned", "h"), outcome(2, strike, "aligned", "h")}, "h"))
      << "its state changed by other means";
  EXPECT_TRUE(is_stuck(item, {outcome(4, MilestoneOutcome::Stuck, "aligned", "h")}, "h"))
      << "the agent's word";
  EXPECT_FALSE(is_stuck(
      item, {outcome(1, strike, "aligned", "h0"), outcome(2, MilestoneOutcome::Advanced, "aligned", "h")},
      "h"));

  const Lifecycle l = seed_lifecycle();
  const std::vector<ItemHistory> history = {
      {"t1", {outcome(1, strike, "aligned", "h"), outcome(2, strike, "aligned", "h")}}};
  auto same = [](const std::string&) { return std::string("h"); };
  EXPECT_TRUE(select_objectives({item}, l, history, same, 1).empty()) << "not selected again";
}

TEST(CycleObjectives, OneJobPerFileAndAFileInOneJobOnly) {
  const std::vector<CycleTask> tasks = {{"t1", "prove", "A.lean", "aligned", {}},
                                        {"t2", "prove", "B.lean", "aligned", {}},
                                        {"t3", "formalize", "A.lean", "nl_reviewed", {}},
                                        {"t4", "prove", "C.lean", "aligned", {}},
                                        {"t5", "prove", "B.lean", "aligned", {}}};
  const auto jobs = group_jobs(tasks);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].file, "A.lean");
  ASSERT_EQ(jobs[0].tasks.size(), 2u);
  EXPECT_EQ(jobs[0].tasks[1].id, "t3");
  EXPECT_EQ(jobs[1].file, "B.lean");
  EXPECT_EQ(jobs[1].tasks.size(), 2u);
  EXPECT_EQ(jobs[2].file, "C.lean");
  std::map<std::string, int> files;
  for (const auto& j : jobs) ++files[j.file];
  for (const auto& [file, n] : files) EXPECT_EQ(n, 1) << file;
}

}  // namespace
}  // namespace orch::flows
