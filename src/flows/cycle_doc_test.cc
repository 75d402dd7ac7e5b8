// The document of a cycle run: what a resume and the next cycle read back.
#include "flows/cycle_doc.h"

#include <gtest/gtest.h>

namespace orch::flows::cycle_doc_test {
namespace {

using json = nlohmann::json;

Lifecycle doc_lifecycle() {
  auto l = Lifecycle::from_json(json::parse(R"({
    "states": ["stub", "implemented", "documented"],
    "stages": {"implement": "stub -> implemented", "document": "implemented -> documented"}})"));
  EXPECT_TRUE(l) << (l ? "" : l.error().message);
  return l ? *l : Lifecycle{};
}

const std::vector<MilestoneOutcome> kEveryOutcome = {
    MilestoneOutcome::Advanced,         MilestoneOutcome::Stuck,
    MilestoneOutcome::NoChange,         MilestoneOutcome::RejectedByScheduler,
    MilestoneOutcome::RejectedByReview, MilestoneOutcome::BlockedByFormalizeFailure,
    MilestoneOutcome::ScopeViolation};

RecordedDecision recorded(const std::string& id, MilestoneOutcome outcome, const std::string& state) {
  RecordedDecision d;
  d.id = id;
  d.job = "src-" + id + ".c";
  d.outcome = outcome;
  d.transition = outcome == MilestoneOutcome::Advanced ? state : milestone_outcome_name(outcome);
  if (outcome == MilestoneOutcome::Advanced) d.to = state;
  d.why = "why " + id;
  d.restored = outcome != MilestoneOutcome::Advanced;
  d.state = state;
  d.file_hash = "fnv1a64:" + id;
  return d;
}

json cycle_of(int n, const char* progress, const std::vector<RecordedDecision>& decisions) {
  json out = {{"cycle", n}, {"progress", progress}, {"decisions", json::array()}};
  for (const RecordedDecision& d : decisions) out["decisions"].push_back(decision_json(d));
  return out;
}

TEST(CycleDoc, EveryOutcomeWordRoundTripsThroughADecision) {
  for (MilestoneOutcome o : kEveryOutcome) {
    const RecordedDecision d = recorded("a", o, o == MilestoneOutcome::Advanced ? "implemented" : "stub");
    const json j = decision_json(d);
    EXPECT_EQ(j["outcome"], o == MilestoneOutcome::Advanced ? "advanced" : milestone_outcome_name(o));
    const RecordedDecision back = decision_from_json(json::parse(j.dump()), doc_lifecycle());
    EXPECT_EQ(back.outcome, o) << j.dump();
    EXPECT_EQ(decision_json(back), j);
    EXPECT_EQ(back.id, d.id);
    EXPECT_EQ(back.job, d.job);
    EXPECT_EQ(back.transition, d.transition);
    EXPECT_EQ(back.to, d.to);
    EXPECT_EQ(back.why, d.why);
    EXPECT_EQ(back.restored, d.restored);
    EXPECT_EQ(back.state, d.state);
    EXPECT_EQ(back.file_hash, d.file_hash);
  }
  // Nothing applied: no "to" written, none read back.
  EXPECT_FALSE(decision_json(recorded("a", MilestoneOutcome::NoChange, "stub")).contains("to"));
}

TEST(CycleDoc, HistoryReadsOnlyFinishedCyclesInOrder) {
  json doc = {{"cycles", json::array()}};
  doc["cycles"].push_back(cycle_of(1, "done",
                                   {recorded("a", MilestoneOutcome::NoChange, "stub"),
                                    recorded("b", MilestoneOutcome::Advanced, "implemented")}));
  doc["cycles"].push_back(cycle_of(2, "done",
                                   {recorded("b", MilestoneOutcome::ScopeViolation, "implemented"),
                                    recorded("a", MilestoneOutcome::RejectedByReview, "stub")}));
  // Cycle 3 was killed in its writer: its decisions are not history yet.
  doc["cycles"].push_back(cycle_of(3, "write", {recorded("a", MilestoneOutcome::Advanced, "implemented")}));
  doc["cycles"].push_back(cycle_of(4, "verify", {recorded("c", MilestoneOutcome::Stuck, "stub")}));

  const auto history = cycle_history(doc, doc_lifecycle());
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].id, "a");
  ASSERT_EQ(history[0].outcomes.size(), 2u);
  EXPECT_EQ(history[0].outcomes[0].cycle, 1);
  EXPECT_EQ(history[0].outcomes[0].outcome, MilestoneOutcome::NoChange);
  EXPECT_EQ(history[0].outcomes[0].transition, "no-change");
  EXPECT_EQ(history[0].outcomes[0].why, "why a");
  EXPECT_EQ(history[0].outcomes[0].state, "stub");
  EXPECT_EQ(history[0].outcomes[0].file_hash, "fnv1a64:a");
  EXPECT_EQ(history[0].outcomes[1].cycle, 2);
  EXPECT_EQ(history[0].outcomes[1].outcome, MilestoneOutcome::RejectedByReview);
  EXPECT_EQ(history[1].id, "b");
  ASSERT_EQ(history[1].outcomes.size(), 2u);
  EXPECT_EQ(history[1].outcomes[0].outcome, MilestoneOutcome::Advanced);
  EXPECT_EQ(history[1].outcomes[0].transition, "implemented");
  EXPECT_EQ(history[1].outcomes[1].outcome, MilestoneOutcome::ScopeViolation);

  EXPECT_TRUE(cycle_history(json::object(), doc_lifecycle()).empty());
}

TEST(CycleDoc, EveryOutcomeWordRoundTripsThroughHistory) {
  json doc = {{"cycles", json::array()}};
  for (std::size_t i = 0; i < kEveryOutcome.size(); ++i)
    doc["cycles"].push_back(
        cycle_of(static_cast<int>(i) + 1, "done",
                 {recorded("a", kEveryOutcome[i],
                           kEveryOutcome[i] == MilestoneOutcome::Advanced ? "implemented" : "stub")}));
  const auto history = cycle_history(json::parse(doc.dump()), doc_lifecycle());
  ASSERT_EQ(history.size(), 1u);
  ASSERT_EQ(history[0].outcomes.size(), kEveryOutcome.size());
  for (std::size_t i = 0; i < kEveryOutcome.size(); ++i) {
    EXPECT_EQ(history[0].outcomes[i].outcome, kEveryOutcome[i]) << i;
    EXPECT_EQ(history[0].outcomes[i].cycle, static_cast<int>(i) + 1);
  }
}

TEST(CycleDoc, ATaskRoundTripsWithItsPastAttempts) {
  CycleTask t{"gcd", "document", "src/arith.c", "implemented", {}};
  t.past_attempts.push_back(
      ItemOutcome{1, MilestoneOutcome::Advanced, "implemented", "compiles", "implemented", "fnv1a64:1"});
  t.past_attempts.push_back(ItemOutcome{2, MilestoneOutcome::RejectedByScheduler, "documented",
                                        "the gate failed on the file as it is (exit 1)", "implemented",
                                        "fnv1a64:2"});
  const json j = cycle_task_json(t);
  EXPECT_EQ(j["past_attempts"][0]["outcome"], "advanced");
  EXPECT_EQ(j["past_attempts"][1]["outcome"], "rejected-by-scheduler");
  auto back = cycle_task_from_json(json::parse(j.dump()), doc_lifecycle());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->id, "gcd");
  EXPECT_EQ(back->stage, "document");
  EXPECT_EQ(back->file, "src/arith.c");
  EXPECT_EQ(back->state, "implemented");
  ASSERT_EQ(back->past_attempts.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const ItemOutcome& a = back->past_attempts[i];
    const ItemOutcome& b = t.past_attempts[i];
    EXPECT_EQ(a.cycle, b.cycle);
    EXPECT_EQ(a.outcome, b.outcome);
    EXPECT_EQ(a.transition, b.transition);
    EXPECT_EQ(a.why, b.why);
    EXPECT_EQ(a.state, b.state);
    EXPECT_EQ(a.file_hash, b.file_hash);
  }
  EXPECT_EQ(cycle_task_json(*back), j);

  // The objectives of a cycle, as a resume reads them; a broken one is skipped.
  json cycle = {{"objectives", json::array({j, json{{"id", "x"}}})}};
  const auto tasks = cycle_tasks_of(cycle, doc_lifecycle());
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].past_attempts.size(), 2u);
  EXPECT_FALSE(cycle_task_from_json(json{{"id", "x"}, {"stage", "implement"}}, doc_lifecycle()));
}

TEST(CycleDoc, ProgressNamesRoundTrip) {
  for (CycleProgress p :
       {CycleProgress::Prepare, CycleProgress::Plan, CycleProgress::Work, CycleProgress::Review,
        CycleProgress::Verify, CycleProgress::Write, CycleProgress::Done})
    EXPECT_EQ(parse_cycle_progress(cycle_progress_name(p)), p);
  EXPECT_EQ(parse_cycle_progress("finished"), std::nullopt);
}

}  // namespace
}  // namespace orch::flows::cycle_doc_test
