// The writer of `orch cycle`: which milestones change a state, and the audit.
#include "flows/cycle_writer.h"

#include <gtest/gtest.h>

namespace orch::flows {
namespace {

using json = nlohmann::json;

Lifecycle lifecycle() {
  auto l = Lifecycle::from_json(json::parse(R"({
    "states": ["nl_reviewed", "bound", "aligned", "proved"],
    "stages": {"formalize": "nl_reviewed -> bound|aligned", "prove": "aligned -> proved"}})"));
  EXPECT_TRUE(l);
  return l ? *l : Lifecycle{};
}

Milestone claim(const std::string& transition, bool accepted = true) {
  return Milestone{"t1", transition, accepted, false, "the proof checks", ""};
}

const CycleItem kAligned{"t1", "A.lean", "aligned"};

TEST(CycleWriter, ALegalAcceptedTransitionWhoseGateHoldsIsApplied) {
  const auto d = decide_milestone(kAligned, claim("proved"), lifecycle(), 0);
  EXPECT_EQ(d.outcome, MilestoneOutcome::Advanced);
  EXPECT_EQ(d.to, "proved");
  EXPECT_FALSE(d.restore_baseline);
}

TEST(CycleWriter, AReviewerClaimingProvedWhileTheGateFailsIsRejectedAndRolledBack) {
  const auto d = decide_milestone(kAligned, claim("proved"), lifecycle(), 1);
  EXPECT_EQ(d.outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_EQ(d.to, std::nullopt);
  EXPECT_TRUE(d.restore_baseline);
  EXPECT_NE(d.why.find("the gate failed on the file as it is (exit 1)"), std::string::npos) << d.why;
  const auto unrun = decide_milestone(kAligned, claim("proved"), lifecycle(), std::nullopt);
  EXPECT_EQ(unrun.outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_TRUE(unrun.restore_baseline);
}

TEST(CycleWriter, AnIllegalTransitionIsRejectedWhateverTheReviewAndTheGateSay) {
  const auto skip =
      decide_milestone(CycleItem{"t1", "A.lean", "nl_reviewed"}, claim("proved"), lifecycle(), 0);
  EXPECT_EQ(skip.outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_TRUE(skip.restore_baseline);
  EXPECT_NE(skip.why.find("'nl_reviewed' -> 'proved' is not a transition of the lifecycle (stage formalize "
                          "moves 'nl_reviewed' to bound or aligned)"),
            std::string::npos)
      << skip.why;
  const auto back = decide_milestone(kAligned, claim("bound"), lifecycle(), 0);
  EXPECT_EQ(back.outcome, MilestoneOutcome::RejectedByScheduler);
  const auto nonsense = decide_milestone(kAligned, claim("done!"), lifecycle(), 0);
  EXPECT_EQ(nonsense.outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_TRUE(nonsense.restore_baseline);
}

TEST(CycleWriter, WhatTheReviewRefusesOrDidNotMoveIsRecordedAndTheFileRestoredWhenItMustBe) {
  const auto refused = decide_milestone(kAligned, claim("proved", false), lifecycle(), 0);
  EXPECT_EQ(refused.outcome, MilestoneOutcome::RejectedByReview);
  EXPECT_TRUE(refused.restore_baseline);
  Milestone rollback = claim("proved");
  rollback.rollback_required = true;
  EXPECT_TRUE(decide_milestone(kAligned, rollback, lifecycle(), 0).restore_baseline);
  EXPECT_EQ(decide_milestone(kAligned, rollback, lifecycle(), 0).to, std::nullopt);
  const auto none = decide_milestone(kAligned, claim("no-change"), lifecycle(), 0);
  EXPECT_EQ(none.outcome, MilestoneOutcome::NoChange);
  EXPECT_FALSE(none.restore_baseline);
  EXPECT_EQ(none.to, std::nullopt);
  const auto scope = decide_milestone(kAligned, claim("scope-violation"), lifecycle(), 0);
  EXPECT_EQ(scope.outcome, MilestoneOutcome::ScopeViolation);
  EXPECT_TRUE(scope.restore_baseline);
}

// decide_job: the file is one unit; t1 and t2 are two items of A.lean.
Milestone claim_for(const std::string& id, const std::string& transition) {
  return Milestone{id, transition, true, false, id + "'s evidence", ""};
}

const std::vector<CycleItem> kTwoAligned = {{"t1", "A.lean", "aligned"}, {"t2", "A.lean", "aligned"}};

TEST(CycleWriterJob, OneMoveAppliedBesideANoChangeKeepsTheFile) {
  const auto job =
      decide_job(kTwoAligned, {claim_for("t1", "proved"), claim_for("t2", "no-change")}, lifecycle(), {0, 0});
  EXPECT_FALSE(job.restore_baseline);
  ASSERT_EQ(job.tasks.size(), 2u);
  EXPECT_EQ(job.tasks[0].outcome, MilestoneOutcome::Advanced);
  EXPECT_EQ(job.tasks[0].to, "proved");
  EXPECT_FALSE(job.tasks[0].restore_baseline);
  EXPECT_EQ(job.tasks[1].outcome, MilestoneOutcome::NoChange);
  EXPECT_EQ(job.tasks[1].to, std::nullopt);
  EXPECT_FALSE(job.tasks[1].restore_baseline);
}

TEST(CycleWriterJob, OneMoveAppliedBesideARefusedOneKeepsTheFileAsTheGateCheckedIt) {
  const auto job =
      decide_job(kTwoAligned, {claim_for("t1", "proved"), claim_for("t2", "proved")}, lifecycle(), {0, 1});
  EXPECT_FALSE(job.restore_baseline);
  EXPECT_EQ(job.tasks[0].to, "proved");
  EXPECT_EQ(job.tasks[1].outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_EQ(job.tasks[1].to, std::nullopt);
}

TEST(CycleWriterJob, ARollbackOfOneTaskPutsTheFileBackAndVoidsTheOthersMove) {
  Milestone rollback = claim_for("t2", "no-change");
  rollback.rollback_required = true;
  const auto job = decide_job(kTwoAligned, {claim_for("t1", "proved"), rollback}, lifecycle(), {0, 0});
  EXPECT_TRUE(job.restore_baseline);
  ASSERT_EQ(job.tasks.size(), 2u);
  EXPECT_EQ(job.tasks[0].outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_EQ(job.tasks[0].to, std::nullopt);
  EXPECT_TRUE(job.tasks[0].restore_baseline);
  EXPECT_NE(job.tasks[0].why.find("put back to its baseline: t2's milestone"), std::string::npos)
      << job.tasks[0].why;
  EXPECT_NE(job.tasks[0].why.find("'proved' is not kept"), std::string::npos) << job.tasks[0].why;
  EXPECT_EQ(job.tasks[1].outcome, MilestoneOutcome::NoChange);
  EXPECT_TRUE(job.tasks[1].restore_baseline);

  // The same when the rollback comes with an accepted move the gate held.
  Milestone accepted_rollback = claim_for("t1", "proved");
  accepted_rollback.rollback_required = true;
  const auto first =
      decide_job(kTwoAligned, {accepted_rollback, claim_for("t2", "proved")}, lifecycle(), {0, 0});
  EXPECT_TRUE(first.restore_baseline);
  EXPECT_EQ(first.tasks[0].outcome, MilestoneOutcome::RejectedByReview);
  EXPECT_EQ(first.tasks[1].outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_EQ(first.tasks[1].to, std::nullopt);
  EXPECT_NE(first.tasks[1].why.find("t1's milestone (rejected-by-review) required it"), std::string::npos)
      << first.tasks[1].why;
}

TEST(CycleWriterJob, AScopeViolationPutsTheFileBackAndAppliesNothing) {
  const auto job = decide_job(kTwoAligned, {claim_for("t1", "proved"), claim_for("t2", "scope-violation")},
                              lifecycle(), {0, std::nullopt});
  EXPECT_TRUE(job.restore_baseline);
  for (const WriterDecision& d : job.tasks) {
    EXPECT_EQ(d.to, std::nullopt);
    EXPECT_TRUE(d.restore_baseline);
  }
  EXPECT_EQ(job.tasks[0].outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_NE(job.tasks[0].why.find("t2's milestone (scope-violation)"), std::string::npos) << job.tasks[0].why;
  EXPECT_EQ(job.tasks[1].outcome, MilestoneOutcome::ScopeViolation);
}

TEST(CycleWriterJob, NothingAppliedAndOneRefusedPutsTheFileBack) {
  const auto job =
      decide_job(kTwoAligned, {claim_for("t1", "no-change"), claim_for("t2", "proved")}, lifecycle(), {0, 2});
  EXPECT_TRUE(job.restore_baseline);
  EXPECT_EQ(job.tasks[0].outcome, MilestoneOutcome::NoChange);
  EXPECT_TRUE(job.tasks[0].restore_baseline);
  EXPECT_EQ(job.tasks[1].outcome, MilestoneOutcome::RejectedByScheduler);
  EXPECT_NE(job.tasks[1].why.find("exit 2"), std::string::npos) << job.tasks[1].why;
}

TEST(CycleWriterJob, NothingMovedAndNothingRefusedKeepsTheFile) {
  const auto job = decide_job(kTwoAligned, {claim_for("t1", "no-change"), claim_for("t2", "no-change")},
                              lifecycle(), {std::nullopt, std::nullopt});
  EXPECT_FALSE(job.restore_baseline);
  for (const WriterDecision& d : job.tasks) {
    EXPECT_EQ(d.outcome, MilestoneOutcome::NoChange);
    EXPECT_FALSE(d.restore_baseline);
    EXPECT_EQ(d.to, std::nullopt);
  }
  // A stuck word beside a no-change does not put it back either.
  const auto stuck = decide_job(kTwoAligned, {claim_for("t1", "no-change"), claim_for("t2", "stuck")},
                                lifecycle(), {std::nullopt, std::nullopt});
  EXPECT_FALSE(stuck.restore_baseline);
  EXPECT_EQ(stuck.tasks[1].outcome, MilestoneOutcome::Stuck);
}

AuditEntry entry(const std::string& id, const std::string& from, const std::string& to, int cycle) {
  return AuditEntry{"run-1", cycle, "a-lean", id,           from, to, "lake build A.lean",
                    0,       "h0",  "h1",     1000 + cycle, 0};
}

TEST(CycleWriter, ReplayingTheAuditOverTheFirstStatusGivesTheCurrentOne) {
  const std::vector<CycleItem> first = {{"t1", "A.lean", "nl_reviewed"}, {"t2", "B.lean", "aligned"}};
  const std::vector<AuditEntry> audit = {entry("t1", "nl_reviewed", "aligned", 1),
                                         entry("t2", "aligned", "proved", 1),
                                         entry("t1", "aligned", "proved", 2)};
  auto now = replay_audit(first, audit);
  ASSERT_TRUE(now) << now.error().message;
  EXPECT_EQ((*now)[0].state, "proved");
  EXPECT_EQ((*now)[1].state, "proved");
  auto broken = replay_audit(first, {entry("t1", "aligned", "proved", 1)});
  ASSERT_FALSE(broken);
  EXPECT_NE(
      broken.error().message.find("audit entry 1: item 't1' moves from 'aligned', but it is 'nl_reviewed'"),
      std::string::npos)
      << broken.error().message;
  EXPECT_FALSE(replay_audit(first, {entry("t9", "aligned", "proved", 1)}));
}

TEST(CycleWriter, AnAuditEntryRoundTripsThroughItsJsonLine) {
  const AuditEntry e = entry("t1", "aligned", "proved", 3);
  auto back = audit_entry_from_json(json::parse(audit_entry_json(e).dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(audit_entry_json(*back), audit_entry_json(e));
  json missing = audit_entry_json(e);
  missing.erase("gate_exit");
  EXPECT_FALSE(audit_entry_from_json(missing));
}

}  // namespace
}  // namespace orch::flows
