// Black-box: worker:NAME steps through the real binary with --workers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/testing.h"

namespace orch {
namespace {

using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;

TEST(CliWorkers, AWorkerStepRunsTheAgentFromTheWorkersFile) {
  TempDir d;
  std::string agent = (source_dir() / "tests" / "agents" / "fake_agent.py").string();
  write_file(
      d / "workers.yaml",
      fmt::format("workers:\n  coder:\n    argv: [python3, '{}', json, '{{prompt}}', '{{workspace}}']\n"
                  "    output: json\n    result: result\n"
                  "    usage: {{tokens_in: usage.input_tokens, tokens_out: usage.output_tokens}}\n"
                  "    stall_after: 30s\n",
                  agent));
  write_file(d / "plan.yaml",
             "name: w\nsteps:\n  - {id: code, executor: 'worker:coder', goal: add a flag}\n");
  auto r = run_orch({"run", "plan.yaml", "--workers", "workers.yaml", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["budget"]["spent"]["tokens"], 150);
  EXPECT_EQ(read_file(d / "prompt-1.txt"), "add a flag");

  write_file(d / "typo.yaml", "name: w\nsteps:\n  - {id: code, executor: 'worker:codr', goal: add a flag}\n");
  auto bad = run_orch({"validate", "typo.yaml", "--workers", "workers.yaml"}, d.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(
      bad.err.find("typo.yaml:3: step 'code': no worker 'codr' in the workers file (workers: coder) (did you "
                   "mean 'coder'?)"),
      std::string::npos)
      << bad.err;
  write_file(d / "broken.yaml", "workers:\n  x:\n    argv: [agent]\n");
  auto broken = run_orch({"validate", "plan.yaml", "--workers", "broken.yaml"}, d.path());
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("broken.yaml: workers.x.argv: has no {prompt} slot"), std::string::npos)
      << broken.err;
}

}  // namespace
}  // namespace orch
