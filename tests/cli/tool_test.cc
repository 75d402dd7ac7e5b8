// Black-box tests of `tool:NAME` steps through the real orch binary, with --registry.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;


// A registry in d/tools/ with the example filestats tool and a tool whose output
// breaks its contract.
void write_registry(const TempDir& d) {
  fs::create_directories(d / "tools");
  fs::copy_file(source_dir() / "examples" / "tools" / "filestats.sh", d / "tools" / "filestats.sh");
  write_file(d / "tools" / "liar.sh", "#!/bin/sh\necho '{\"lines\": \"many\"}'\n");
  fs::permissions(d / "tools" / "liar.sh", fs::perms::owner_all);
  write_file(d / "tools" / "registry.yml", R"(tools:
  filestats:
    command: [./filestats.sh]
    status: prod_ready
    safe_for_agents: true
    risk: low
    commands:
      count:
        args: [{word: "--"}, {input: files}]
        input_schema: {type: object, required: [files], properties: {files: {type: array, items: {type: string}}}}
        output_schema: {type: object, required: [lines], properties: {lines: {type: integer}}}
  liar:
    command: [./liar.sh]
    status: prod_ready
    safe_for_agents: true
    risk: low
    commands:
      count: {output_schema: {type: object, properties: {lines: {type: integer}}}}
)");
}

TEST(CliTool, APlanRunsARegistryToolAndUsesItsJson) {
  TempDir d;
  write_registry(d);
  write_file(d / "notes.txt", "one\ntwo\nthree\n");
  write_file(d / "p.yaml", R"(steps:
  - id: stats
    executor: tool:filestats
    inputs: {command: count, files: [notes.txt]}
  - id: report
    deps: [stats]
    sh: 'echo "lines=${steps.stats.json.lines}" > report.txt'
)");
  auto valid = run_orch({"validate", "p.yaml", "--registry", "tools/registry.yml"}, d.path());
  EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;

  auto r = run_orch({"run", "p.yaml", "--registry", "tools/registry.yml", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["run"]["status"], "succeeded");
  EXPECT_EQ(orch::testing::read_file(d / "report.txt"), "lines=3\n");
}

// A tool the registry has as pending is refused by the risk guard whatever is
// approved; the plan is still valid (its other steps may run), and `orch
// validate` warns, naming the step and why, instead of a bare "ok".
TEST(CliTool, ValidateWarnsOfAStepTheRiskGuardWillRefuse) {
  TempDir d;
  write_file(d / "registry.yml", R"(tools:
  later:
    command: [/bin/true]
    status: pending
    safe_for_agents: true
    risk: low
    commands: {go: {output_schema: {}}}
)");
  write_file(d / "p.yaml", R"(steps:
  - {id: fine, sh: echo hi}
  - id: waits
    executor: tool:later
    inputs: {command: go}
)");
  auto r = run_orch({"validate", "p.yaml", "--registry", "registry.yml"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("p.yaml: ok (2 steps), 1 warning"), std::string::npos) << r.out;
  EXPECT_NE(
      r.err.find(
          "p.yaml:3: step 'waits': warning: the risk guard will refuse this step (executor 'tool:later' "
          "rates it critical: tool 'later' has status pending: it is not ready to run)"),
      std::string::npos)
      << r.err;
  auto validated = nlohmann::json::parse(
      run_orch({"validate", "p.yaml", "--registry", "registry.yml", "--json"}, d.path()).out);
  EXPECT_TRUE(validated["valid"].get<bool>());
  ASSERT_EQ(validated["warnings"].size(), 1u);
  EXPECT_EQ(validated["warnings"][0]["step"], "waits");
}

TEST(CliTool, TheDefaultRegistryIsDotOrchRegistryYml) {
  TempDir d;
  write_registry(d);
  fs::create_directories(d / ".orch");
  // Relative program paths follow the registry file: copy the scripts beside it.
  fs::copy_file(d / "tools" / "filestats.sh", d / ".orch" / "filestats.sh");
  fs::copy_file(d / "tools" / "registry.yml", d / ".orch" / "registry.yml");
  write_file(d / "p.yaml",
             "steps:\n  - {id: s, executor: tool:filestats, inputs: {command: count, files: [p.yaml]}}\n");
  auto r = run_orch({"run", "p.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(CliTool, AContractViolationFailsTheRunWithTheReason) {
  TempDir d;
  write_registry(d);
  write_file(d / "p.yaml", "steps:\n  - {id: lie, executor: tool:liar, inputs: {command: count}}\n");
  auto r = run_orch({"run", "p.yaml", "--registry", "tools/registry.yml", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["run"]["status"], "failed");
  std::string reason = doc["steps"][0]["reason"];
  EXPECT_HAS(reason, "tool 'liar' count: its output violates the contract: /lines:");
}

TEST(CliTool, ValidationNamesUnknownToolsAndBadRegistries) {
  TempDir d;
  write_registry(d);
  write_file(d / "p.yaml", R"(steps:
  - id: a
    executor: tool:filestat
    inputs: {command: count, files: [x]}
  - id: b
    executor: tool:filestats
    inputs:
      command: cuont
)");
  auto r = run_orch({"validate", "p.yaml", "--registry", "tools/registry.yml"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_HAS(r.err,
             "p.yaml:3: step 'a': no tool 'filestat' in the registry tools/registry.yml (did you mean "
             "'filestats'?)");
  EXPECT_HAS(r.err,
             "p.yaml:8: step 'b': tool 'filestats' has no sub-command 'cuont' (did you mean 'count'?)");

  // No registry at all: the step cannot validate, and says how to give one.
  auto none = run_orch({"validate", "p.yaml"}, d.path());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_HAS(none.err, "no tool registry is loaded (pass --registry FILE");

  write_file(d / "bad.yml",
             "tools:\n  t:\n    command: [x]\n    status: ready\n    risk: low\n    commands: {go: "
             "{output_schema: {}}}\n");
  auto bad = run_orch({"run", "p.yaml", "--registry", "bad.yml"}, d.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_HAS(bad.err, "bad.yml:4: tools.t.status: 'ready' is not a status");
  auto missing = run_orch({"validate", "p.yaml", "--registry", "nope.yml"}, d.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_HAS(missing.err, "nope.yml: cannot read the tool registry");
}

// A registry tool whose program is a bare name not in PATH is the registry's set-up,
// not the work: one attempt, ended setup_failed, not retried however many attempts
// the step has, and the reason says it was not found in PATH.
TEST(CliTool, AToolWhoseProgramIsNotInPathIsASetUpFailure) {
  TempDir d;
  write_file(d / "registry.yml", R"(tools:
  ghost:
    command: [no-such-orch-tool-program]
    status: prod_ready
    safe_for_agents: true
    risk: low
    commands:
      run: {output_schema: {type: object}}
)");
  write_file(d / "p.yaml",
             "steps:\n  - {id: g, executor: tool:ghost, attempts: 3, inputs: {command: run}}\n");
  auto r = run_orch({"run", "p.yaml", "--registry", "registry.yml", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  const auto& step = doc["steps"][0];
  ASSERT_EQ(step["attempts"].size(), 1u) << step.dump();
  EXPECT_EQ(step["attempts"][0]["ending"], "setup_failed") << step.dump();
  EXPECT_HAS(
      step["reason"].get<std::string>(),
      "tool 'ghost': cannot run 'no-such-orch-tool-program': No such file or directory (not found in PATH)");
}

// A folder given as the registry is named as one, as for --workers and --models, not
// read as a registry with no `tools`.
TEST(CliTool, ARegistryThatIsAFolderIsNamedAsOne) {
  TempDir d;
  write_registry(d);
  write_file(d / "p.yaml", "steps:\n  - id: a\n    executor: builtin:echo\n    inputs: {text: hi}\n");
  auto r = run_orch({"validate", "p.yaml", "--registry", "tools"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "tools: cannot read the tool registry: is a folder, not a file");
  EXPECT_EQ(r.err.find("must be a mapping"), std::string::npos) << r.err;
}

// A sub-command's output_schema that is there but broken is one problem: it is not
// reported missing as well.
TEST(CliTool, ABrokenOutputSchemaIsOneProblemNotAlsoAMissingOne) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - id: a\n    executor: builtin:echo\n    inputs: {text: hi}\n");
  write_file(d / "registry.yml",
             "tools:\n  t:\n    command: [x]\n    status: prod_ready\n    risk: low\n    commands:\n"
             "      go: {output_schema: {type: objekt}}\n");
  auto r = run_orch({"validate", "p.yaml", "--registry", "registry.yml"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "registry.yml:7: tools.t.commands.go.output_schema: ");
  EXPECT_EQ(r.err.find("no output_schema"), std::string::npos) << r.err;
}

// validate --json prints its document on every refusal, the executors' files and the
// workspace included; stderr says it as before.
TEST(CliTool, ValidateJsonAnswersInJsonWhenAFileOrTheWorkspaceIsBad) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - id: a\n    executor: builtin:echo\n    inputs: {text: hi}\n");
  fs::create_directories(d / "folder");
  write_file(d / "bad.yml",
             "tools:\n  t:\n    command: [x]\n    status: ready\n    risk: low\n"
             "    commands: {go: {output_schema: {}}}\n");
  struct Case {
    std::vector<std::string> flags;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"--registry", "folder"}, "is a folder, not a file"},
      {{"--registry", "nope.yml"}, "cannot read the tool registry"},
      {{"--workers", "folder"}, "is a folder, not a file"},
      {{"--models", "nope.yaml"}, "nope.yaml"},
      {{"--workspace", "no-such-dir"}, "no-such-dir"},
      {{"--registry", "bad.yml"}, "tools.t.status: 'ready' is not a status"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {"validate", "p.yaml", "--json"};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    auto r = run_orch(argv, d.path());
    EXPECT_EQ(r.exit_code, 2) << c.flags[0] << " " << c.flags[1] << "\n" << r.out << r.err;
    EXPECT_HAS(r.err, c.error);
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << c.flags[0] << " " << c.flags[1] << ": not JSON:\n" << r.out;
    EXPECT_EQ(doc["valid"], false);
    EXPECT_EQ(doc["plan"], "p.yaml");
    EXPECT_TRUE(doc.contains("steps"));
    EXPECT_TRUE(doc["warnings"].is_array());
    ASSERT_TRUE(doc["errors"].is_array() && !doc["errors"].empty()) << r.out;
    EXPECT_HAS(doc["errors"].dump(), c.error);
  }
  // A problem with a line keeps its file and line.
  auto bad = run_orch({"validate", "p.yaml", "--json", "--registry", "bad.yml"}, d.path());
  auto doc = nlohmann::json::parse(bad.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << bad.out;
  EXPECT_EQ(doc["errors"][0]["file"], "bad.yml");
  EXPECT_EQ(doc["errors"][0]["line"], 4);
}

// A run started with --registry and resumed without it: the plan is fine, the flag is
// missing, and the advice says to pass it again (not to edit the plan).
TEST(CliTool, AResumeWithoutTheRunsRegistrySaysToPassItAgain) {
  TempDir d;
  write_registry(d);
  write_file(d / "notes.txt", "one\n");
  write_file(d / "p.yaml", R"(steps:
  - id: stats
    executor: tool:filestats
    inputs: {command: count, files: [notes.txt]}
  - id: fails
    deps: [stats]
    sh: 'exit 1'
)");
  auto run = run_orch({"run", "p.yaml", "--registry", "tools/registry.yml"}, d.path());
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  auto runs = run_orch({"runs", "--json"}, d.path());
  auto list = nlohmann::json::parse(runs.out, nullptr, false);
  ASSERT_TRUE(list.is_array() && !list.empty()) << runs.out;
  const std::string id = list[0]["id"];
  auto resumed = run_orch({"resume", id}, d.path());
  EXPECT_EQ(resumed.exit_code, 2) << resumed.out << resumed.err;
  EXPECT_HAS(resumed.err, "no tool registry is loaded");
  EXPECT_HAS(resumed.err, "orch resume " + id + " --registry FILE");
  EXPECT_EQ(resumed.err.find("--replan"), std::string::npos) << resumed.err;
  EXPECT_EQ(resumed.err.find("does not validate any more"), std::string::npos) << resumed.err;
  // With the flag again it goes on.
  auto again = run_orch({"resume", id, "--registry", "tools/registry.yml"}, d.path());
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
}

}  // namespace
}  // namespace orch
