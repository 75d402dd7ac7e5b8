// The trace state machine and the verifier's verdict: pure rules, no ledger.
#include "flows/task_trace.h"

#include <gtest/gtest.h>

#include "flows/task_verifier.h"

namespace orch::flows {
namespace {

using S = TaskState;

Trace trace_with(std::vector<S> pipeline) {
  Trace t;
  t.id = "t1";
  t.pipeline = std::move(pipeline);
  enter_state(t, S::Classify, "", "t0");
  return t;
}

const std::vector<S> kDirect = {S::Recall, S::Execute, S::Verify, S::Summarize};
const std::vector<S> kStandard = {S::Recall, S::Plan, S::Execute, S::Verify, S::Summarize};
const std::vector<S> kDeep = {S::Recall, S::Similarity, S::Plan,     S::Execute,
                              S::Verify, S::Review,     S::Summarize};
const std::vector<S> kToolDirect = {S::Route, S::Execute, S::Verify, S::Summarize};

void go(Trace& t, S s) {
  auto ok = check_enter(t, s);
  ASSERT_TRUE(ok) << ok.error().message;
  enter_state(t, s, "", "t");
}

void verdict(Trace& t, Verdict v) {
  VerifyRecord r;
  r.verdict = v;
  t.verifications.push_back(r);
}

std::string refusal(const Trace& t, S s) {
  auto ok = check_enter(t, s);
  return ok ? std::string("(allowed)") : ok.error().message;
}

// Each of the seed's four pipelines is walked start to end, and at every point
// the only legal next state is the next stage.
TEST(TaskStateMachine, EachPipelineIsWalkedInOrderAndOnlyInOrder) {
  for (const auto& pipeline : {kDirect, kStandard, kDeep, kToolDirect}) {
    Trace t = trace_with(pipeline);
    for (std::size_t i = 0; i < pipeline.size(); ++i) {
      const auto legal = legal_next_states(t);
      ASSERT_FALSE(legal.empty());
      EXPECT_EQ(legal[0], pipeline[i]);
      // Skipping ahead is refused, naming the legal next state.
      if (i + 1 < pipeline.size()) {
        const std::string why = refusal(t, pipeline[i + 1]);
        EXPECT_NE(why.find("illegal transition"), std::string::npos) << why;
        EXPECT_NE(why.find(task_state_name(pipeline[i])), std::string::npos) << why;
      }
      if (pipeline[i] == S::Verify) verdict(t, Verdict::Pass);
      go(t, pipeline[i]);
      // The same state twice in a row is refused.
      EXPECT_FALSE(check_enter(t, pipeline[i])) << task_state_name(pipeline[i]);
    }
    EXPECT_EQ(t.state(), S::Summarize);
    EXPECT_TRUE(check_close(t, "pass"));
  }
}

TEST(TaskStateMachine, AStageOutsideThePipelineAndTheFinalStatesAreRefused) {
  Trace t = trace_with(kDirect);
  go(t, S::Recall);
  EXPECT_NE(refusal(t, S::Plan).find("the legal next state is EXECUTE"), std::string::npos)
      << refusal(t, S::Plan);
  EXPECT_NE(refusal(t, S::Done).find("closing the trace"), std::string::npos);
  EXPECT_FALSE(check_enter(t, S::Classify));
}

// VERIFY may send the trace back to EXECUTE twice; then only close fail is left.
TEST(TaskStateMachine, VerifyRetriesExecuteAtMostTwiceThenOnlyCloseFail) {
  Trace t = trace_with(kDirect);
  go(t, S::Recall);
  go(t, S::Execute);
  for (int round = 1; round <= 3; ++round) {
    verdict(t, Verdict::Fail);
    enter_state(t, S::Verify, "", "t");
    // A FAIL blocks SUMMARIZE and close pass.
    EXPECT_NE(refusal(t, S::Summarize).find("VERIFY failed"), std::string::npos) << refusal(t, S::Summarize);
    EXPECT_FALSE(check_close(t, "pass"));
    if (round <= 2) {
      go(t, S::Execute);
      EXPECT_EQ(t.retries, round);
    }
  }
  EXPECT_TRUE(legal_next_states(t).empty());
  const std::string why = refusal(t, S::Execute);
  EXPECT_NE(why.find("retries are used up"), std::string::npos) << why;
  EXPECT_NE(why.find("--result fail"), std::string::npos) << why;
  EXPECT_TRUE(check_close(t, "fail"));
}

// A later passing VERIFY lifts the block.
TEST(TaskStateMachine, APassingVerifyAfterARetryUnblocksSummarize) {
  Trace t = trace_with(kDirect);
  go(t, S::Recall);
  go(t, S::Execute);
  verdict(t, Verdict::Fail);
  enter_state(t, S::Verify, "", "t");
  go(t, S::Execute);
  verdict(t, Verdict::PassWithWarnings);
  enter_state(t, S::Verify, "", "t");
  const auto legal = legal_next_states(t);
  ASSERT_EQ(legal.size(), 2u);
  EXPECT_EQ(legal[0], S::Summarize);
  EXPECT_EQ(legal[1], S::Execute) << "one retry is left";
  go(t, S::Summarize);
  EXPECT_TRUE(check_close(t, "pass"));
}

TEST(TaskStateMachine, ClosePassOnlyAfterSummarizeCloseFailFromAnyOpenState) {
  for (std::size_t stop = 0; stop < kDeep.size(); ++stop) {
    Trace t = trace_with(kDeep);
    for (std::size_t i = 0; i < stop; ++i) {
      if (kDeep[i] == S::Verify) verdict(t, Verdict::Pass);
      go(t, kDeep[i]);
    }
    if (t.state() != S::Summarize) {
      auto pass = check_close(t, "pass");
      ASSERT_FALSE(pass);
      EXPECT_NE(pass.error().message.find("only after SUMMARIZE"), std::string::npos);
    }
    EXPECT_TRUE(check_close(t, "fail")) << "close fail is legal at " << task_state_name(t.state());
  }
  Trace closed = trace_with(kDirect);
  enter_state(closed, S::Escalated, "", "t");
  EXPECT_FALSE(check_close(closed, "fail"));
  EXPECT_NE(refusal(closed, S::Recall).find("is closed"), std::string::npos);
  EXPECT_FALSE(check_close(trace_with(kDirect), "maybe"));
}

TEST(TaskTrace, RoundTripsThroughJson) {
  Trace t = trace_with(kStandard);
  t.request = "fix the stale date crash";
  t.intent = "bug_fix";
  t.complexity = "standard";
  t.strategy = "recall-execute-verify";
  t.verify = {{{"check", "tests pass"}, {"command", "true"}},
              {{"check", "root cause named"}, {"attest", true}}};
  go(t, S::Recall);
  t.retries = 1;
  t.result = "pass";
  VerifyRecord r;
  r.verdict = Verdict::PassWithWarnings;
  r.confidence = 0.5;
  r.items.push_back({"tests pass", "command", "true", CheckStatus::Passed, "exit 0", 12});
  t.verifications.push_back(r);
  t.engine_results["recall"] = {{"status", "FAILED"}, {"error", "boom"}};
  auto back = trace_from_json(to_json(t));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(to_json(*back), to_json(t));
  EXPECT_EQ(back->state(), S::Recall);
  EXPECT_EQ(to_json(t)["intent"], "bug_fix");

  auto broken = to_json(t);
  broken["pipeline"] = {"RECALL", "DANCE"};
  auto bad = trace_from_json(broken);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("DANCE"), std::string::npos);
  broken.erase("request");
  EXPECT_FALSE(trace_from_json(broken));
}

// A trace whose verification item has a status orch never writes is refused,
// naming it, not read as some other status.
TEST(TaskTrace, AVerificationItemWithAnUnknownStatusIsRefused) {
  Trace t = trace_with(kStandard);
  t.request = "fix the stale date crash";
  VerifyRecord r;
  r.items.push_back({"tests pass", "command", "true", CheckStatus::NotRun, "", 0});
  t.verifications.push_back(r);
  nlohmann::json doc = to_json(t);
  ASSERT_TRUE(trace_from_json(doc)) << "not_run is one";
  doc["verifications"][0]["items"][0]["status"] = "sort_of";
  auto bad = trace_from_json(doc);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'sort_of'"), std::string::npos) << bad.error().message;
}

CheckOutcome item(CheckStatus status) {
  CheckOutcome o;
  o.status = status;
  return o;
}

// The verdict rule and the confidence formula of task_verifier.h.
TEST(TaskVerifier, VerdictAndConfidence) {
  VerifyRecord all;
  all.items = {item(CheckStatus::Passed), item(CheckStatus::Attested)};
  decide_verdict(all);
  EXPECT_EQ(all.verdict, Verdict::Pass);
  EXPECT_DOUBLE_EQ(all.confidence, 0.75);

  VerifyRecord warn;
  warn.items = {item(CheckStatus::Passed), item(CheckStatus::Unattested), item(CheckStatus::Unattested)};
  decide_verdict(warn);
  EXPECT_EQ(warn.verdict, Verdict::PassWithWarnings);
  EXPECT_DOUBLE_EQ(warn.confidence, 0.33);

  VerifyRecord failed;
  failed.items = {item(CheckStatus::Passed), item(CheckStatus::Failed)};
  decide_verdict(failed);
  EXPECT_EQ(failed.verdict, Verdict::Fail);
  EXPECT_DOUBLE_EQ(failed.confidence, 0.5);

  VerifyRecord refuted;
  refuted.items = {item(CheckStatus::Attested), item(CheckStatus::Refuted)};
  decide_verdict(refuted);
  EXPECT_EQ(refuted.verdict, Verdict::Fail);

  VerifyRecord nothing;
  nothing.items = {item(CheckStatus::Unattested)};
  decide_verdict(nothing);
  EXPECT_EQ(nothing.verdict, Verdict::Fail) << "no evidence at all is not a pass";
  EXPECT_DOUBLE_EQ(nothing.confidence, 0);
}

TEST(TaskVerifier, AttestationFlagsAreParsedAndCheckedAgainstTheChecklist) {
  VerifyOptions o;
  EXPECT_TRUE(add_attestation(o, "2=looked at the stack", false, 3));
  EXPECT_EQ(o.attest.at(2), "looked at the stack");
  EXPECT_TRUE(add_attestation(o, "1", false, 3));
  EXPECT_TRUE(add_attestation(o, "all=checked", false, 3));
  EXPECT_TRUE(o.attest_all);
  EXPECT_TRUE(add_attestation(o, "3=wrong file", true, 3));
  EXPECT_EQ(o.refute.at(3), "wrong file");
  EXPECT_FALSE(add_attestation(o, "4", false, 3));
  EXPECT_FALSE(add_attestation(o, "0", false, 3));
  EXPECT_FALSE(add_attestation(o, "x=1", false, 3));
  EXPECT_FALSE(add_attestation(o, "2", true, 3)) << "a refutation says why";
}

}  // namespace
}  // namespace orch::flows
