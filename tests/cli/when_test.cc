// Black-box tests of `when:` through the real binary: `orch validate` names each
// condition's problem with its file and line, and `orch run` shows a branch not
// taken as skipped with its reason — the run succeeds, the report never says done.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/testing.h"

// A namespace of its own: the CLI tests are compiled as unity builds, several files in one.
namespace orch::when_test {
namespace {

using orch::testing::run_orch;
using orch::testing::TempDir;
using orch::testing::write_file;

TEST(CliWhen, ValidateNamesEachProblemWithFileAndLine) {
  TempDir d;
  write_file(d / "plan.yaml", R"(steps:
  - id: review
    sh: echo PASS
  - id: other
    sh: echo x
  - id: deploy
    deps: [review]
    when: steps.reviw.result == "PASS"
    sh: echo deploy
  - id: notify
    deps: [review]
    when: steps.other.status == done
    sh: echo notify
  - id: typed
    deps: [review]
    when: steps.review.status == PASS
    sh: echo typed
)");
  auto r = run_orch({"validate", "plan.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("plan.yaml:8: step 'deploy': 'when' refers to steps.reviw (column 1), an unknown step "
                       "(did you mean 'review'?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(
      r.err.find("plan.yaml:12: step 'notify': 'when' refers to steps.other (column 1), which is not an "
                 "ancestor of 'notify' (add it to deps)"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("plan.yaml:16: step 'typed': 'when': 'PASS' is not a status"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("3 problems"), std::string::npos) << r.err;
}

TEST(CliWhen, ARunShowsTheBranchNotTakenAsSkippedWithItsReason) {
  TempDir d;
  write_file(d / "plan.yaml", R"(steps:
  - id: review
    sh: 'echo "{\"verdict\": \"REVISE\"}"'
  - id: deploy
    deps: [review]
    when: ${steps.review.result.verdict} == "PASS"
    sh: echo deployed
  - id: fix
    deps: [review]
    when: steps.review.result.verdict == "REVISE"
    sh: echo fixed
)");
  auto r = run_orch({"run", "plan.yaml", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << r.out;
  EXPECT_EQ(report["run"]["status"], "succeeded");
  EXPECT_EQ(report["counts"]["done"], 2);
  EXPECT_EQ(report["counts"]["skipped"], 1);
  for (const auto& s : report["steps"]) {
    if (s["id"] != "deploy") continue;
    EXPECT_EQ(s["status"], "skipped");
    EXPECT_EQ(s["reason"], R"(when: ${steps.review.result.verdict} == "PASS" was false)");
    EXPECT_TRUE(s["attempts"].empty()) << s.dump();
  }
  auto events = run_orch({"events", report["run"]["id"].get<std::string>(), "--json"}, d.path());
  EXPECT_NE(events.out.find("condition_evaluated"), std::string::npos) << events.out;
}

}  // namespace
}  // namespace orch::when_test
