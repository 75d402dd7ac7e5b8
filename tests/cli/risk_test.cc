// Black-box tests of the risk guard through the real binary: the durable pause
// (exit 3), `orch approve` then `orch resume`, --approve, --approve-medium, and
// critical refusals. (The terminal prompt is tested in tty_test.py.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch {
namespace {

using orch::testing::orch_binary;
using orch::testing::run_command;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;
namespace fs = std::filesystem;

constexpr const char* kPlan = R"(name: release
steps:
  - id: build
    run: [touch, built]
  - id: migrate
    risk: medium
    deps: [build]
    run: [touch, migrated]
  - id: deploy
    risk: high
    deps: [migrate]
    run: [touch, deployed]
)";

std::string run_id_of(const std::string& err) {
  std::smatch m;
  std::regex re("orch: run (\\S+) \\(store");
  return std::regex_search(err, m, re) ? m[1].str() : "";
}

// The command `orch approve` shows came from the plan and from results: its
// control characters are escaped, so none can retitle the terminal or move the
// cursor over what the human reads; the environment's values are shown too.
TEST(CliRisk, ApproveShowsTheCommandWithControlCharactersEscaped) {
  TempDir d;
  write_file(d / "plan.yaml",
             "steps:\n  - id: dep\n    risk: high\n    env: {WHERE: \"a\\e[2Kb\"}\n"
             "    sh: \"printf x \\e]0;pwned\\a\\e[1A\\recho harmless\"\n");
  auto first = run_orch({"run", "plan.yaml"}, d.path());
  ASSERT_EQ(first.exit_code, 3) << first.out << first.err;
  auto approve = run_orch({"approve", run_id_of(first.err), "dep"}, d.path());
  ASSERT_EQ(approve.exit_code, 0) << approve.err;
  EXPECT_EQ(approve.out.find('\x1b'), std::string::npos) << approve.out;
  EXPECT_EQ(approve.out.find('\a'), std::string::npos) << approve.out;
  EXPECT_EQ(approve.out.find('\r'), std::string::npos) << approve.out;
  EXPECT_NE(approve.out.find("printf x \\x1b]0;pwned\\x07\\x1b[1A\\x0decho harmless"), std::string::npos)
      << approve.out;
  EXPECT_NE(approve.out.find("\n  env: WHERE='a\\x1b[2Kb'"), std::string::npos) << approve.out;
}

// The command `orch approve` says to run next works as it is: a ledger other
// than the default is named in it, and the resume it names finishes the run.
TEST(CliRisk, TheResumeApproveNamesWorksWithAnotherLedger) {
  TempDir d;
  write_file(d / "plan.yaml", "steps:\n  - {id: dep, risk: high, run: ['true']}\n");
  auto first = run_orch({"run", "plan.yaml", "--store", "other dir/l.db"}, d.path());
  ASSERT_EQ(first.exit_code, 3) << first.out << first.err;
  const std::string id = run_id_of(first.err);
  auto approve = run_orch({"approve", id, "dep", "--store", "other dir/l.db", "--json"}, d.path());
  ASSERT_EQ(approve.exit_code, 0) << approve.err;
  const std::string resume = nlohmann::json::parse(approve.out)["resume"];
  EXPECT_EQ(resume, "orch resume " + id + " --store 'other dir/l.db'");
  auto resumed =
      run_command({"/bin/sh", "-c", "\"$ORCH\"" + resume.substr(4)}, d.path(), {{"ORCH", orch_binary()}});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
}

TEST(CliRisk, PausedRunExits3ThenApproveAndResumeFinishIt) {
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  auto first = run_orch({"run", "plan.yaml", "--approve-medium"}, d.path());
  EXPECT_EQ(first.exit_code, 3) << first.out << first.err;
  std::string id = run_id_of(first.err);
  ASSERT_FALSE(id.empty()) << first.err;
  EXPECT_TRUE(fs::exists(d / "migrated"));
  EXPECT_FALSE(fs::exists(d / "deployed"));
  EXPECT_NE(first.out.find("awaiting approval"), std::string::npos) << first.out;

  auto status = run_orch({"status", id, "--json"}, d.path());
  ASSERT_EQ(status.exit_code, 0) << status.err;
  auto report = nlohmann::json::parse(status.out);
  EXPECT_EQ(report["run"]["status"], "awaiting_approval");
  EXPECT_EQ(report["counts"]["awaiting_approval"], 1);
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / "run-report.schema.json").string());
  ASSERT_TRUE(schema);
  EXPECT_EQ(schema->validate(report), std::vector<std::string>{});

  // Resuming without an approval pauses again; nothing ran.
  auto again = run_orch({"resume", id}, d.path());
  EXPECT_EQ(again.exit_code, 3) << again.out << again.err;
  EXPECT_FALSE(fs::exists(d / "deployed"));

  auto wrong = run_orch({"approve", id, "build"}, d.path());
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("not awaiting approval (it is done)"), std::string::npos) << wrong.err;
  auto approve = run_orch({"approve", id, "deploy"}, d.path());
  ASSERT_EQ(approve.exit_code, 0) << approve.err;
  EXPECT_NE(approve.out.find("approved step 'deploy'"), std::string::npos) << approve.out;
  EXPECT_NE(approve.out.find("touch deployed"), std::string::npos) << approve.out;

  auto done = run_orch({"resume", id}, d.path());
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err;
  EXPECT_TRUE(fs::exists(d / "deployed"));
}

TEST(CliRisk, ApproveFlagsNameRealStepsAndCoverOnlyTheirLevel) {
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  auto typo = run_orch({"run", "plan.yaml", "--approve", "deplyo"}, d.path());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("--approve deplyo: the plan has no step 'deplyo' (did you mean 'deploy'?)"),
            std::string::npos)
      << typo.err;
  EXPECT_FALSE(fs::exists(d / "built")) << "nothing runs when a flag is wrong";

  auto named = run_orch({"run", "plan.yaml", "--approve", "deploy", "--approve", "migrate"}, d.path());
  EXPECT_EQ(named.exit_code, 0) << named.out << named.err;
  EXPECT_TRUE(fs::exists(d / "deployed"));
}

TEST(CliRisk, CriticalStepsAreRefusedWhateverTheFlags) {
  TempDir d;
  write_file(d / "plan.yaml", R"(name: wipe
steps:
  - id: wipe
    risk: critical
    run: [touch, wiped]
)");
  auto r = run_orch({"run", "plan.yaml", "--approve", "wipe", "--approve-medium"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(fs::exists(d / "wiped"));
  EXPECT_NE(r.out.find("refused by the risk guard: critical risk"), std::string::npos) << r.out;
  auto bad = run_orch({"validate", "plan.yaml"}, d.path());
  EXPECT_EQ(bad.exit_code, 0) << "a critical step is a valid plan; it is refused when it would run";
  write_file(d / "typo.yaml", "name: t\nsteps:\n  - {id: a, risk: hgih, run: [true]}\n");
  auto typo = run_orch({"validate", "typo.yaml"}, d.path());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find(
                "typo.yaml:3: step 'a': 'risk' must be low, medium, high or critical, got 'hgih' (did you "
                "mean 'high'?)"),
            std::string::npos)
      << typo.err;
}

}  // namespace
}  // namespace orch
