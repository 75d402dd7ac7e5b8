// Black-box tests of `orch chain` through the real binary: registry tools that are
// shell scripts, every --json output checked against schemas/skill-output.schema.json.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using orch::testing::CommandResult;
using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;


// tools/: tests/data/chain-tools (see its registry.yml) and the example filestats.
void write_tools(const TempDir& d) {
  fs::copy(source_dir() / "tests" / "data" / "chain-tools", d / "tools", fs::copy_options::recursive);
  fs::copy_file(source_dir() / "examples" / "tools" / "filestats.sh", d / "tools" / "filestats.sh");
}

// The --json output, parsed, after checking it against the published contract.
json report_of(const CommandResult& r) {
  auto doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << "not JSON:\n" << r.out << r.err;
  if (doc.is_discarded()) return json();
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / "skill-output.schema.json").string());
  EXPECT_TRUE(schema) << schema.error().message;
  if (schema) {
    auto violations = schema->validate(doc);
    EXPECT_TRUE(violations.empty()) << violations.front() << "\n" << r.out;
  }
  return doc;
}

const std::string kRegistry = "tools/registry.yml";

TEST(CliChain, AThreeStepToolChainPassesItsOutputAlong) {
  TempDir d;
  write_tools(d);
  write_file(d / "notes.txt", "one\ntwo\nthree\n");
  write_file(d / "chain.json", R"([
    {"id": "stats", "executor": "tool:filestats", "inputs": {"command": "count", "files": ["notes.txt"]}},
    {"id": "wrap", "executor": "tool:wrap", "inputs": {"command": "run"}},
    {"id": "say", "executor": "tool:say", "inputs": {"command": "run", "text": "lines=${previous.json.got.lines}"}}
  ])");
  auto r = run_orch({"chain", "--steps", "chain.json", "--registry", kRegistry, "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json doc = report_of(r);
  EXPECT_EQ(doc["status"], "success");
  EXPECT_EQ(doc["execution_chain"][1]["result"]["got"]["lines"], 3);
  EXPECT_EQ(doc["execution_chain"][2]["result"]["said"], "lines=3");
  EXPECT_EQ(doc["output"]["data"]["said"], "lines=3");
  EXPECT_TRUE(doc["error"].is_null());

  // A chain run is an ordinary run of the ledger.
  auto status = run_orch({"status", doc["run_id"], "--json"}, d.path());
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(json::parse(status.out)["run"]["status"], "succeeded");

  // The same from a YAML file, for people.
  write_file(d / "chain.yaml",
             "- {executor: 'tool:filestats', inputs: {command: count, files: [notes.txt]}}\n"
             "- {executor: 'tool:wrap', inputs: {command: run}}\n");
  auto human = run_orch({"chain", "--steps", "chain.yaml", "--registry", kRegistry}, d.path());
  EXPECT_EQ(human.exit_code, 0) << human.out << human.err;
  EXPECT_HAS(human.out, "success: chain of 2 steps succeeded");
  EXPECT_HAS(human.out, "tool:filestats");
  EXPECT_HAS(human.err, "orch: chain run ");
}

TEST(CliChain, AFailureAtStepTwoAbortsAndSkipsStepThree) {
  TempDir d;
  write_tools(d);
  const std::string steps = R"([
    {"executor": "tool:say", "inputs": {"command": "run", "text": "hi"}},
    {"executor": "tool:fail", "inputs": {"command": "run"}},
    {"executor": "tool:mark", "inputs": {"command": "run"}, "risk": "medium"}
  ])";
  auto r = run_orch({"chain", "--steps", steps, "--registry", kRegistry, "--json", "--approve-medium"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json doc = report_of(r);
  EXPECT_EQ(doc["status"], "partial");
  EXPECT_EQ(doc["error"]["code"], "CHAIN_ABORTED_STEP_2");
  EXPECT_EQ(doc["error"]["recoverable"], false);
  EXPECT_HAS(doc["error"]["message"].get<std::string>(), "step 2/3");
  // Seed 004: never mask the error: the step's own words, not only its exit code.
  EXPECT_HAS(doc["error"]["message"].get<std::string>(), "; output: fail.sh: the target file is locked");
  EXPECT_HAS(doc["execution_chain"][1]["reason"].get<std::string>(), "fail.sh: the target file is locked");
  EXPECT_EQ(doc["execution_chain"][0]["status"], "success");
  EXPECT_EQ(doc["execution_chain"][1]["status"], "error");
  EXPECT_EQ(doc["execution_chain"][2]["status"], "skipped");
  EXPECT_EQ(doc["execution_chain"][2]["attempts"], 0);
  EXPECT_FALSE(fs::exists(d / "marked.txt")) << "step 3 must not have run";

  auto human = run_orch({"chain", "--steps", steps, "--registry", kRegistry, "--approve-medium"}, d.path());
  EXPECT_EQ(human.exit_code, 1);
  EXPECT_HAS(human.out, "partial: chain aborted at step 2/3");
  EXPECT_HAS(human.out, "error CHAIN_ABORTED_STEP_2 (not recoverable)");
  EXPECT_HAS(human.out, "fail.sh: the target file is locked");
  EXPECT_FALSE(fs::exists(d / "marked.txt"));
}

TEST(CliChain, SixStepsAreRefusedWithChainLimitExceededAndNothingRuns) {
  TempDir d;
  write_tools(d);
  std::string six = "[";
  for (int i = 0; i < 6; ++i)
    six += std::string(i ? "," : "") + R"({"executor": "tool:mark", "inputs": {"command": "run"}})";
  six += "]";
  auto r = run_orch({"chain", "--steps", six, "--registry", kRegistry, "--json", "--approve-medium"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  json doc = report_of(r);
  EXPECT_EQ(doc["status"], "error");
  EXPECT_EQ(doc["error"]["code"], "chain_limit_exceeded");
  EXPECT_EQ(doc["chain_limit"], 5);
  EXPECT_TRUE(doc["run_id"].is_null());
  EXPECT_TRUE(doc["execution_chain"].empty());
  EXPECT_HAS(r.err, "the chain has 6 steps, more than the limit of 5");
  EXPECT_FALSE(fs::exists(d / "marked.txt"));
  EXPECT_FALSE(fs::exists(d / ".orch")) << "nothing may reach the ledger";

  // The limit is configurable: --max-steps, or ORCH_CHAIN_MAX_STEPS.
  auto env = run_orch({"chain", "--steps", six, "--registry", kRegistry, "--approve-medium"}, d.path(),
                      {{"ORCH_CHAIN_MAX_STEPS", "6"}});
  EXPECT_EQ(env.exit_code, 0) << env.out << env.err;
  auto flag = run_orch({"chain", "--steps", six, "--registry", kRegistry, "--approve-medium", "--max-steps", "6", "--json"},
                       d.path(), {{"ORCH_CHAIN_MAX_STEPS", "3"}});
  EXPECT_EQ(flag.exit_code, 0) << flag.out << flag.err;
  EXPECT_EQ(report_of(flag)["chain_limit"], 6);
  auto bad = run_orch({"chain", "--steps", six, "--registry", kRegistry, "--json"}, d.path(),
                      {{"ORCH_CHAIN_MAX_STEPS", "many"}});
  EXPECT_EQ(bad.exit_code, 2);
  report_of(bad);
  EXPECT_HAS(bad.err, "ORCH_CHAIN_MAX_STEPS='many'");
  // Set but empty counts as not set (docs/chains.md): the default limit of 5.
  auto empty = run_orch({"chain", "--steps", six, "--registry", kRegistry, "--json"}, d.path(),
                        {{"ORCH_CHAIN_MAX_STEPS", ""}});
  EXPECT_EQ(empty.exit_code, 2) << empty.out << empty.err;
  EXPECT_EQ(report_of(empty)["chain_limit"], 5);
}

TEST(CliChain, DryRunListsRisksAndCommandsAndRunsNothing) {
  TempDir d;
  write_tools(d);
  const std::string steps = R"([
    {"executor": "tool:mark", "inputs": {"command": "run"}},
    {"id": "push", "executor": "tool:pusher", "inputs": {"command": "run", "text": "${previous.result}"}},
    {"executor": "tool:say", "inputs": {"command": "run", "text": "it's done"}}
  ])";
  auto r = run_orch({"chain", "--steps", steps, "--registry", kRegistry, "--dry-run", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json doc = report_of(r);
  EXPECT_EQ(doc["status"], "dry_run");
  const auto& c = doc["execution_chain"];
  EXPECT_EQ(c[0]["risk"], "medium");  // an in_progress tool
  EXPECT_EQ(c[0]["guard"], "needs_approval");
  EXPECT_EQ(c[1]["risk"], "high");
  EXPECT_EQ(c[2]["risk"], "low");
  EXPECT_HAS(c[0]["command"].get<std::string>(), "tools/mark.sh");
  EXPECT_HAS(c[2]["command"].get<std::string>(), "tools/say.sh 'it'\\''s done'");
  EXPECT_HAS(c[2]["command"].get<std::string>(), "env ORCH_CHAIN_PREVIOUS: the result of step 2");
  EXPECT_FALSE(fs::exists(d / "marked.txt"));
  EXPECT_FALSE(fs::exists(d / ".orch")) << "a dry run writes nothing";

  auto human = run_orch({"chain", "--steps", steps, "--registry", kRegistry, "--dry-run", "--approve-medium"}, d.path());
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_HAS(human.out, "chain dry_run: 3 steps (limit 5), nothing was run; 1 would wait for approval");
  EXPECT_HAS(human.out, "medium    approved");
  EXPECT_HAS(human.out, "high      needs_approval");
  EXPECT_HAS(human.out, "tools/say.sh 'it'\\''s done'");
  EXPECT_FALSE(fs::exists(d / "marked.txt"));
  EXPECT_FALSE(fs::exists(d / ".orch"));

  // The environment a shell step gets is shown, a secret's value never.
  auto secret =
      run_orch({"chain", "--dry-run", "--steps",
                R"([{"executor": "shell", "sh": "echo hi", "env": {"API_TOKEN": "s3cr3t-value-xyz"}}])"},
               d.path());
  EXPECT_EQ(secret.exit_code, 0) << secret.err;
  EXPECT_HAS(secret.out, "env: API_TOKEN=***");
  EXPECT_EQ(secret.out.find("s3cr3t-value-xyz"), std::string::npos) << secret.out;
}

TEST(CliChain, InvalidStepsExitTwoNamingTheStep) {
  TempDir d;
  write_tools(d);
  auto r = run_orch({"chain", "--steps", R"([{"executor": "tool:say", "inputs": {"command": "run", "text": "x"}},
                                              {"inputs": {}}, {"executor": "tool:sya"}])",
                     "--registry", kRegistry, "--json"},
                    d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  json doc = report_of(r);
  EXPECT_EQ(doc["error"]["code"], "invalid_chain");
  EXPECT_HAS(r.err, "step 2: 'executor' is required");
  EXPECT_FALSE(fs::exists(d / ".orch"));

  auto unknown = run_orch({"chain", "--steps", R"([{"executor": "tool:sya", "inputs": {"command": "run"}}])",
                           "--registry", kRegistry},
                          d.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_HAS(unknown.err, "step 1 ('step1'): ");
  EXPECT_HAS(unknown.err, "did you mean 'say'?");

  auto missing = run_orch({"chain", "--steps", "nope.json", "--json"}, d.path());
  EXPECT_EQ(missing.exit_code, 2);
  report_of(missing);
  auto none = run_orch({"chain"}, d.path());
  EXPECT_EQ(none.exit_code, 2);
}

// A key written twice in one mapping of --steps (inline JSON, a JSON file, a YAML
// file) is refused with its line and the first one's, before any ledger is made:
// parsed, the later value would silently have won.
TEST(CliChain, AKeyWrittenTwiceInTheStepsIsRefusedWithBothLines) {
  TempDir d;
  auto inline_json = run_orch({"chain", "--dry-run", "--steps",
                               "[{\"executor\": \"builtin:echo\", \"inputs\": {\"text\": \"a\",\n"
                               "  \"text\": \"b\"}}]"},
                              d.path());
  EXPECT_EQ(inline_json.exit_code, 2) << inline_json.out << inline_json.err;
  EXPECT_HAS(inline_json.err, "--steps: a key is written twice");
  EXPECT_HAS(inline_json.err, "--steps:2: [0].inputs.text: duplicate key (first at line 1)");
  write_file(d / "steps.json", "[\n {\"executor\": \"builtin:echo\",\n  \"executor\": \"shell\",\n"
                               "  \"sh\": \"echo hi\"}\n]\n");
  auto file_json = run_orch({"chain", "--steps", "steps.json", "--json"}, d.path());
  EXPECT_EQ(file_json.exit_code, 2) << file_json.out << file_json.err;
  EXPECT_EQ(report_of(file_json)["error"]["code"], "invalid_chain");
  EXPECT_HAS(file_json.err, "steps.json:3: [0].executor: duplicate key (first at line 2)");
  write_file(d / "steps.yaml", "- executor: builtin:echo\n  inputs:\n    text: a\n    text: b\n");
  auto file_yaml = run_orch({"chain", "--steps", "steps.yaml"}, d.path());
  EXPECT_EQ(file_yaml.exit_code, 2) << file_yaml.out << file_yaml.err;
  EXPECT_HAS(file_yaml.err, "steps.yaml:4: [0].inputs.text: duplicate key (first at line 3)");
  EXPECT_FALSE(fs::exists(d / ".orch"));
  // The same keys once each are a chain.
  write_file(d / "once.yaml", "- executor: builtin:echo\n  inputs:\n    text: a\n");
  auto once = run_orch({"chain", "--steps", "once.yaml"}, d.path());
  EXPECT_EQ(once.exit_code, 0) << once.out << once.err;
}

// A folder given as --steps is named as one (not parsed as empty JSON); a missing file
// says the system's reason; an empty value is refused as empty.
TEST(CliChain, AStepsFolderMissingFileOrEmptyValueIsNamedAsSuch) {
  TempDir d;
  fs::create_directories(d / "steps-folder");
  auto folder = run_orch({"chain", "--steps", "steps-folder", "--json"}, d.path());
  EXPECT_EQ(folder.exit_code, 2) << folder.out << folder.err;
  EXPECT_HAS(folder.err, "--steps 'steps-folder': is a folder, not a file");
  EXPECT_EQ(folder.err.find("not valid JSON"), std::string::npos) << folder.err;
  EXPECT_EQ(report_of(folder)["error"]["code"], "invalid_chain");
  auto missing = run_orch({"chain", "--steps", "nope.json"}, d.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_HAS(missing.err, "--steps 'nope.json': cannot read the file: No such file or directory");
  auto empty = run_orch({"chain", "--steps", ""}, d.path());
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_HAS(empty.err, "--steps: is empty");
  EXPECT_EQ(empty.err.find("chain needs --steps"), std::string::npos) << empty.err;
}

// An --approve that names no step is refused by the dry run as by a run (invalid_chain,
// exit 2), and the run refuses it before the ledger is made.
TEST(CliChain, AnUnknownApproveIsRefusedByTheDryRunAndBeforeTheLedger) {
  TempDir d;
  const std::string steps = R"([{"executor": "builtin:echo", "inputs": {"text": "a"}},
                                {"executor": "builtin:echo", "inputs": {"text": "b"}}])";
  const std::string said = "--approve stpe1: the plan has no step 'stpe1' (did you mean 'step1'?)";
  auto dry = run_orch({"chain", "--dry-run", "--approve", "stpe1", "--steps", steps}, d.path());
  EXPECT_EQ(dry.exit_code, 2) << dry.out << dry.err;
  EXPECT_HAS(dry.err, said);
  auto dry_json =
      run_orch({"chain", "--dry-run", "--json", "--approve", "stpe1", "--steps", steps}, d.path());
  EXPECT_EQ(dry_json.exit_code, 2);
  EXPECT_EQ(report_of(dry_json)["error"]["code"], "invalid_chain");
  auto run = run_orch({"chain", "--json", "--approve", "stpe1", "--steps", steps}, d.path());
  EXPECT_EQ(run.exit_code, 2) << run.out << run.err;
  EXPECT_HAS(run.err, said);
  json doc = report_of(run);
  EXPECT_EQ(doc["error"]["code"], "invalid_chain");
  EXPECT_FALSE(fs::exists(d / ".orch" / "orch.db"));
  auto approved = run_orch({"chain", "--dry-run", "--approve", "step1", "--steps", steps}, d.path());
  EXPECT_EQ(approved.exit_code, 0) << approved.err;
}

// A default id ("step2") skips an id the user gave another step; two steps given the same
// id are named by their positions in the chain, not by a line of the generated plan.
TEST(CliChain, DefaultIdsSkipTheIdsTheUserGave) {
  TempDir d;
  auto r = run_orch({"chain", "--json", "--steps",
                     R"([{"id": "step2", "executor": "builtin:echo", "inputs": {"text": "a"}},
                         {"executor": "builtin:echo", "inputs": {"text": "b"}}])"},
                    d.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json doc = report_of(r);
  ASSERT_EQ(doc["execution_chain"].size(), 2u) << r.out;
  EXPECT_EQ(doc["execution_chain"][0]["id"], "step2");
  EXPECT_NE(doc["execution_chain"][1]["id"], "step2");
  EXPECT_EQ(doc["execution_chain"][1]["status"], "success");

  auto dup = run_orch({"chain", "--steps",
                       R"([{"id": "x", "executor": "builtin:echo", "inputs": {"text": "a"}},
                           {"executor": "builtin:echo", "inputs": {"text": "b"}},
                           {"id": "x", "executor": "builtin:echo", "inputs": {"text": "c"}}])"},
                      d.path());
  EXPECT_EQ(dup.exit_code, 2) << dup.out << dup.err;
  EXPECT_HAS(dup.err, "step 3: id 'x' is already the id of step 1");
  EXPECT_EQ(dup.err.find("line"), std::string::npos) << dup.err;
  EXPECT_EQ(dup.err.find("depends on itself"), std::string::npos) << dup.err;
}

TEST(CliChain, AHighRiskStepPausesTheChainWithExitThreeUntilApproved) {
  TempDir d;
  write_tools(d);
  const std::string steps = R"([
    {"executor": "tool:say", "inputs": {"command": "run", "text": "hello"}},
    {"id": "push", "executor": "tool:pusher", "inputs": {"command": "run", "text": "${previous.json.said}"}},
    {"executor": "tool:wrap", "inputs": {"command": "run"}}
  ])";
  auto r = run_orch({"chain", "--steps", steps, "--registry", kRegistry, "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  json doc = report_of(r);
  EXPECT_EQ(doc["status"], "awaiting_approval");
  EXPECT_EQ(doc["error"]["code"], "CHAIN_PAUSED_STEP_2");
  EXPECT_EQ(doc["error"]["recoverable"], true);
  const std::string run_id = doc["run_id"];

  auto approve = run_orch({"approve", run_id, "push"}, d.path());
  EXPECT_EQ(approve.exit_code, 0) << approve.out << approve.err;
  auto resume = run_orch({"resume", run_id, "--registry", kRegistry}, d.path());
  EXPECT_EQ(resume.exit_code, 0) << resume.out << resume.err;
  // The report comes from the ledger alone: no registry needed for the risks.
  auto after = run_orch({"chain", "--report", run_id, "--json"}, d.path());
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;
  json done = report_of(after);
  EXPECT_EQ(done["status"], "success");
  EXPECT_EQ(done["execution_chain"][1]["risk"], "high");
  EXPECT_EQ(done["output"]["data"]["got"]["said"], "hello");

  // Approved up front, it runs through.
  auto approved = run_orch({"chain", "--steps", steps, "--registry", kRegistry, "--approve", "push", "--json"}, d.path());
  EXPECT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  EXPECT_EQ(report_of(approved)["status"], "success");
}

TEST(CliChain, AnInterruptedChainIsReportedRecoverable) {
  TempDir d;
  write_tools(d);
  const std::string steps = R"([
    {"executor": "tool:say", "inputs": {"command": "run", "text": "hi"}},
    {"executor": "shell", "sh": "touch started; sleep 30"},
    {"executor": "tool:wrap", "inputs": {"command": "run"}}
  ])";
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(d.path().c_str()) != 0) _exit(127);
    FILE* out = std::fopen("out.json", "w");
    FILE* err = std::fopen("err.txt", "w");
    if (out == nullptr || err == nullptr) _exit(127);
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    std::vector<std::string> all{orch::testing::orch_binary(), "chain", "--steps", steps, "--registry", kRegistry, "--json"};
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 500 && !fs::exists(d / "started"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(d / "started"));
  kill(pid, SIGINT);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 130) << read_file(d / "err.txt");
  CommandResult r;
  r.out = read_file(d / "out.json");
  json doc = report_of(r);
  EXPECT_EQ(doc["status"], "interrupted");
  EXPECT_EQ(doc["error"]["code"], "CHAIN_INTERRUPTED_STEP_2");
  EXPECT_EQ(doc["error"]["recoverable"], true);
  EXPECT_EQ(doc["execution_chain"][0]["status"], "success");
}

}  // namespace
}  // namespace orch
