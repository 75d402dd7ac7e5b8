// Black-box: worker:NAME steps through the real binary with --workers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "testing/testing.h"

namespace orch {
namespace {

using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;
namespace fs = std::filesystem;

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
  EXPECT_NE(broken.err.find("broken.yaml: workers.x.argv: has no {prompt} or {prompt_file} slot"),
            std::string::npos)
      << broken.err;
}

// A goal of only spaces is no goal: the worker would be handed an empty task.
TEST(CliWorkers, AWorkerStepWithABlankGoalIsRefused) {
  TempDir d;
  write_file(d / "workers.yaml", "workers:\n  coder:\n    argv: [agent, '{prompt}']\n");
  write_file(d / "plan.json",
             "[\n  {\"goal\": \"list\", \"inputs\": {\"cmd\": \"ls\"}},\n"
             "  {\"goal\": \"  \", \"deps\": [0], \"executor\": \"worker:coder\"}\n]\n");
  auto r = run_orch({"validate", "plan.json", "--workers", "workers.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("plan.json:3: step 's1': 'goal' is empty (or only spaces)"), std::string::npos) << r.err;
  write_file(d / "plan.yaml", "steps:\n  - {id: code, executor: 'worker:coder', goal: '   '}\n");
  auto yaml = run_orch({"validate", "plan.yaml", "--workers", "workers.yaml"}, d.path());
  EXPECT_EQ(yaml.exit_code, 2) << yaml.out << yaml.err;
  EXPECT_NE(yaml.err.find("a worker step needs a 'goal' or inputs.prompt"), std::string::npos) << yaml.err;
}

// A worker CLI that is not installed is the set-up, not the work: one attempt,
// ended setup_failed, not retried.
TEST(CliWorkers, AWorkerCliThatIsNotThereIsASetUpFailure) {
  TempDir d;
  write_file(d / "workers.yaml", "workers:\n  ghost:\n    argv: [no-such-orch-agent-cli, '{prompt}']\n");
  write_file(d / "plan.yaml",
             "steps:\n  - {id: code, executor: 'worker:ghost', goal: add a flag, attempts: 3}\n");
  auto r = run_orch({"run", "plan.yaml", "--workers", "workers.yaml", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  const auto& step = report["steps"][0];
  ASSERT_EQ(step["attempts"].size(), 1u) << step.dump();
  EXPECT_EQ(step["attempts"][0]["ending"], "setup_failed") << step.dump();
  EXPECT_NE(step["reason"].get<std::string>().find("worker 'ghost': cannot run 'no-such-orch-agent-cli': No "
                                                   "such file or directory (not found in PATH)"),
            std::string::npos)
      << step.dump();
}

// A structured worker's output cut at max_output is not read as if it were whole:
// its last line (the answer) may be what was dropped. And a worker that goes on
// writing past the cap is not taken for a stalled one.
TEST(CliWorkers, OutputCutAtMaxOutputIsNeitherReadNorTakenForAStall) {
  TempDir d;
  write_file(d / "agent.sh",
             "#!/bin/sh\necho '{\"text\": \"still thinking\"}'\n"
             "i=0; while [ $i -lt 12 ]; do printf '{\"pad\": \"%0200d\"}\\n' 0; sleep 0.1; i=$((i+1)); done\n"
             "echo '{\"text\": \"FINAL ANSWER\"}'\n");
  fs::permissions(d / "agent.sh", fs::perms::owner_all);
  write_file(d / "workers.yaml",
             "workers:\n  chatty:\n    argv: [./agent.sh, '{prompt}']\n    output: jsonl\n    result: text\n"
             "    stall_after: 600ms\n");
  write_file(d / "plan.yaml",
             "on_failure: continue\nsteps:\n"
             "  - {id: capped, executor: 'worker:chatty', goal: think, max_output: 1KiB}\n"
             "  - {id: whole, executor: 'worker:chatty', goal: think}\n");
  auto r = run_orch({"run", "plan.yaml", "--workers", "workers.yaml", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  for (const auto& step : report["steps"]) {
    if (step["id"] == "whole") {
      EXPECT_EQ(step["status"], "done") << step.dump();
    } else {
      EXPECT_EQ(step["status"], "failed") << step.dump();
      const std::string reason = step["reason"];
      EXPECT_NE(reason.find("worker 'chatty': its output ("), std::string::npos) << reason;
      EXPECT_NE(reason.find("was cut at max_output"), std::string::npos) << reason;
      EXPECT_EQ(reason.find("stalled"), std::string::npos) << reason;
    }
  }
}

// A key written twice in the workers or models file would let the later value win
// without a word: refused, naming both lines.
TEST(CliWorkers, AKeyWrittenTwiceInAConfigFileIsRefused) {
  TempDir d;
  write_file(d / "workers.yaml",
             "workers:\n  e:\n    argv: [echo, '{prompt}']\n  e:\n    argv: [echo, 'SECOND {prompt}']\n");
  write_file(d / "plan.yaml", "steps:\n  - {id: a, executor: 'worker:e', goal: g}\n");
  auto w = run_orch({"validate", "plan.yaml", "--workers", "workers.yaml"}, d.path());
  EXPECT_EQ(w.exit_code, 2) << w.out << w.err;
  EXPECT_NE(w.err.find("workers.yaml:4: workers.e: duplicate key (first at line 2)"), std::string::npos)
      << w.err;
  write_file(d / "models.yaml",
             "providers:\n  p: {api: openai, base_url: 'http://127.0.0.1:1/v1'}\n"
             "models:\n  m: {provider: p, model: x, model: y}\n");
  write_file(d / "llm.yaml", "steps:\n  - {id: a, executor: llm, inputs: {prompt: hi}}\n");
  auto m = run_orch({"validate", "llm.yaml", "--models", "models.yaml"}, d.path());
  EXPECT_EQ(m.exit_code, 2) << m.out << m.err;
  EXPECT_NE(m.err.find("models.yaml:4: models.m.model: duplicate key (first at line 4)"), std::string::npos)
      << m.err;
}

}  // namespace
}  // namespace orch
