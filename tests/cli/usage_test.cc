// Black-box tests of how the real binary refuses bad input before doing anything:
// numeric options out of range, repeatable options next to positionals, plan
// paths that are not plan files, and workspaces that are not folders.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "testing/testing.h"

namespace orch {
namespace {

using orch::testing::run_id_in;
using orch::testing::run_orch;
using orch::testing::TempDir;
using orch::testing::write_file;
namespace fs = std::filesystem;

// The run id from "orch: run ID (store DIR)" on stderr.
std::string started_run_id(const std::string& err) {
  std::smatch m;
  return std::regex_search(err, m, std::regex("orch: run (\\S+) \\(store")) ? m[1].str() : "";
}

TEST(CliUsage, NumericOptionsSayWhatIsWrongWithTheValue) {
  TempDir d;
  write_file(d / "p.yaml", "steps: [{id: a, sh: \"true\"}]\n");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const Case cases[] = {
      {{"logs", "RUN", "a", "--attempt", "0"}, "--attempt: must be a whole number of at least 1, not '0'"},
      {{"logs", "RUN", "a", "--attempt", "abc"},
       "--attempt: must be a whole number of at least 1; 'abc' is not a number"},
      {{"run", "p.yaml", "-j", "0"}, "--jobs: must be a whole number of at least 1, not '0'"},
      {{"run", "p.yaml", "-j", "1.5"}, "--jobs: must be a whole number of at least 1, not '1.5'"},
      {{"run", "p.yaml", "-j", "99999999999"},
       "--jobs: must be a whole number of at most 2147483647, not '99999999999'"},
      {{"resume", "RUN", "-j", "-2"}, "--jobs: must be a whole number of at least 1, not '-2'"},
      {{"status", "--watch", "--interval", "0"},
       "--interval: must be a finite number greater than 0, not '0'"},
      {{"status", "--watch", "--interval", "inf"},
       "--interval: must be a finite number greater than 0, not 'inf'"},
      {{"cancel", "RUN", "--wait", "-1"}, "--wait: must be a finite number of at least 0, not '-1'"},
      {{"chain", "--steps", "[]", "--max-steps", "0"},
       "--max-steps: must be a whole number of at least 1, not '0'"},
      {{"chain", "--steps", "[]", "--budget-tokens", "-5"},
       "--budget-tokens: must be a whole number of at least 0, not '-5'"},
      {{"chain", "--steps", "[]", "--budget-cost", "cheap"},
       "--budget-cost: must be a finite number of at least 0; 'cheap' is not a number"},
      {{"review", "--resume", "R", "--spend-cap", "0"},
       "--spend-cap: must be a whole number of at least 1, not '0'"},
      {{"similarity", "x", "--limit", "0"}, "--limit: must be a whole number of at least 1, not '0'"},
      {{"memory", "search", "x", "--limit", "1e3"},
       "--limit: must be a whole number of at least 1, not '1e3'"},
  };
  for (const Case& c : cases) {
    auto r = run_orch(c.args, d.path());
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << "\n" << r.err;
    EXPECT_HAS(r.err, "orch: " + c.message + "\n");
    for (const char* noise : {"not in range", "Could not convert", "1797693134862315"})
      EXPECT_EQ(r.err.find(noise), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(d / ".orch")) << "a refused option records nothing";

  // Values in range still pass, as written ("010" is ten, not octal eight).
  auto ok = run_orch({"run", "p.yaml", "-j", "010", "--json"}, d.path());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["run"]["concurrency"], 10) << ok.out;
  auto watched = run_orch({"status", "--watch", "--interval", "0.05"}, d.path());
  EXPECT_EQ(watched.exit_code, 0) << watched.err;
}

TEST(CliUsage, EachRepeatableFlagTakesOneValueAndLeavesThePositionalsAlone) {
  TempDir d;
  write_file(d / "m.yaml", R"(steps:
  - {id: c, sh: "true"}
  - {id: d, risk: high, deps: [c], sh: "touch deployed"}
  - {id: m, risk: medium, deps: [d], sh: "touch migrated"}
)");
  auto run = run_orch({"run", "--approve-medium", "--approve", "d", "m.yaml"}, d.path());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_TRUE(fs::exists(d / "deployed"));
  EXPECT_TRUE(fs::exists(d / "migrated"));

  // resume: the RUN_ID after --approve is the run, not a second step to approve.
  write_file(d / "f.yaml", "steps:\n  - {id: a, sh: \"test -f ready\", attempts: 1}\n");
  auto failed = run_orch({"run", "f.yaml"}, d.path());
  ASSERT_EQ(failed.exit_code, 1) << failed.err;
  std::string id = started_run_id(failed.err);
  ASSERT_FALSE(id.empty()) << failed.err;
  write_file(d / "ready", "");
  auto resumed = run_orch({"resume", "--approve", "a", id}, d.path());
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;

  // One value per flag: a second one is an unexpected argument, not an approval.
  auto two = run_orch({"chain", "--steps", "[]", "--approve", "a", "b"}, d.path());
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_HAS(two.err, "orch: unexpected argument: b\nRun `orch chain --help` for usage.\n");

  // task log: the TRACE after --attest is the trace (here an unknown one).
  auto log = run_orch({"task", "log", "--attest", "1", "no-such-trace", "--state", "VERIFY"}, d.path());
  EXPECT_EQ(log.exit_code, 2);
  EXPECT_HAS(log.err, "no trace 'no-such-trace'");
}

// Usage errors are said in orch's words (not CLI11's "A subcommand is required"
// or "--store: 1 required TEXT missing") and point at the command's own help.
TEST(CliUsage, UsageErrorsSayWhatIsWrongAndWhichHelpToRead) {
  TempDir d;
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{},
       "orch: a command is required: validate, run, resume, status, runs, logs, events, cancel, plan, "
       "approve, chain, task, route, budget-check, similarity, memory, review, cycle, worker, workers, "
       "serve, mcp, export-otlp, tools, completion\nRun `orch "
       "--help` "
       "for usage.\n"},
      {{"task"},
       "orch: a subcommand is required: plan, log, close, show, list, gc, run\n"
       "Run `orch task --help` for usage.\n"},
      {{"run", "--store"}, "orch: --store needs a value\nRun `orch run --help` for usage.\n"},
      {{"run", "p.yaml", "--request", "x"},
       "orch: PLAN and --request cannot be given together\nRun `orch run --help` for usage.\n"},
      {{"run", "a.yaml", "b.yaml"}, "orch: unexpected argument: b.yaml\nRun `orch run --help` for usage.\n"},
      {{"runs", "x", "y"}, "orch: unexpected arguments: x y\nRun `orch runs --help` for usage.\n"},
      // The `--` that ends the options is not one of them; a second one is a value.
      {{"run", "--", "a.yaml", "extra"},
       "orch: unexpected argument: extra\nRun `orch run --help` for usage.\n"},
      {{"runs", "--", "x", "y"}, "orch: unexpected arguments: x y\nRun `orch runs --help` for usage.\n"},
      {{"status", "--", "a", "b"}, "orch: unexpected argument: b\nRun `orch status --help` for usage.\n"},
      {{"logs"}, "orch: RUN_ID is required\nRun `orch logs --help` for usage.\n"},
      {{"stauts"},
       "orch: unknown command 'stauts' (did you mean 'status'?); commands: validate, run, resume, status, "
       "runs, "
       "logs, events, cancel, plan, approve, chain, task, route, budget-check, similarity, memory, review, "
       "cycle, worker, workers, serve, mcp, export-otlp, tools, completion\nRun `orch --help` for usage.\n"},
      {{"task", "rnu"},
       "orch: unknown subcommand 'rnu' (did you mean 'run'?); subcommands: plan, log, close, show, list, gc, "
       "run\nRun `orch task --help` for usage.\n"},
      {{"--bogus"},
       "orch: unknown option '--bogus' before the command (options go after it: orch COMMAND --help); "
       "commands: validate, run, resume, status, runs, logs, events, cancel, plan, approve, chain, task, "
       "route, budget-check, similarity, memory, review, cycle, worker, workers, serve, mcp, export-otlp, "
       "tools, completion\nRun "
       "`orch "
       "--help` for usage.\n"},
      {{"--store", "x", "runs"},
       "orch: unexpected arguments before the command (options go after it): --store x\n"
       "Run `orch runs --help` for usage.\n"},
      // An empty value (an unset variable) is refused, never read as "not given".
      {{"status", ""},
       "orch: RUN_ID: is empty: give a run id (`orch runs` lists them), or none for the newest run\n"
       "Run `orch status --help` for usage.\n"},
      {{"logs", "RUN", ""}, "orch: STEP: is empty: give a step id\nRun `orch logs --help` for usage.\n"},
      {{"resume", "RUN", "--replan", ""},
       "orch: --replan: is empty: give the edited plan's file, or - to read it from standard input\n"
       "Run `orch resume --help` for usage.\n"},
      {{"validate", "p.yaml", "--models", ""},
       "orch: --models: is empty: give the models file\nRun `orch validate --help` for usage.\n"},
      {{"run", "p.yaml", "--registry", ""},
       "orch: --registry: is empty: give the tool registry file\nRun `orch run --help` for usage.\n"},
      {{"run", "p.yaml", "--workers", ""},
       "orch: --workers: is empty: give the workers file\nRun `orch run --help` for usage.\n"},
      {{"run", "p.yaml", "--store", ""},
       "orch: --store: is empty: give the ledger's file (e.g. .orch/orch.db) or a postgresql:// URL\nRun "
       "`orch run --help` for "
       "usage.\n"},
      // The task, route and plan commands too: each used to fall back to its default.
      {{"task", "list", "--store", ""},
       "orch: --store: is empty: give the ledger's file (e.g. .orch/orch.db) or a postgresql:// URL\nRun "
       "`orch task list --help` "
       "for "
       "usage.\n"},
      {{"task", "run", "fix it", "--worker", ""},
       "orch: --worker: is empty: give a worker's name (workers file)\nRun `orch task run --help` for "
       "usage.\n"},
      {{"task", "run", "fix it", "--model", ""},
       "orch: --model: is empty: give a model's name (models file)\nRun `orch task run --help` for usage.\n"},
      {{"task", "run", "fix it", "--models", ""},
       "orch: --models: is empty: give the models file\nRun `orch task run --help` for usage.\n"},
      {{"task", "plan", "hello", "--assume", ""},
       "orch: --assume: is empty: give an intent (quick_fix, bug_fix, ...)\nRun `orch task plan --help` for "
       "usage.\n"},
      {{"task", "gc", "--older-than", ""},
       "orch: --older-than: is empty: give a duration such as 30m or 24h\nRun `orch task gc --help` for "
       "usage.\n"},
      {{"task", "show", ""},
       "orch: TRACE: is empty: give a trace id (`orch task list` lists them)\nRun `orch task show --help` "
       "for "
       "usage.\n"},
      {{"route", "fix it", "--registry", ""},
       "orch: --registry: is empty: give the tool registry file\nRun `orch route --help` for usage.\n"},
      {{"plan", "fix it", "--model", ""},
       "orch: --model: is empty: give a model's name (models file)\nRun `orch plan --help` for usage.\n"},
  };
  for (const Case& c : cases) {
    auto r = run_orch(c.args, d.path());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, c.message);
  }
  EXPECT_FALSE(fs::exists(d / ".orch")) << "a usage error records nothing";

  // Thousands of them (a glob gone wrong), or one huge one: said briefly, no crash.
  std::vector<std::string> many = {"runs"};
  for (int i = 1; i <= 8000; ++i) many.push_back(std::to_string(i));
  auto r = run_orch(many, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.err.substr(0, 300);
  EXPECT_EQ(r.err,
            "orch: unexpected arguments: 1 2 3 4 5 ... (8000 in all)\nRun `orch runs --help` for usage.\n");
  auto huge = run_orch({"runs", std::string(50000, 'x')}, d.path());
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_NE(huge.err.find("orch: unexpected argument: xxx"), std::string::npos) << huge.err.substr(0, 300);
}

TEST(CliUsage, AFolderOrAMissingFileIsNotAPlan) {
  TempDir d;
  fs::create_directories(d / "plans");
  for (const char* command : {"validate", "run"}) {
    auto r = run_orch({command, "plans"}, d.path());
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_HAS(r.err, "orch: plans: is a folder, not a plan file\n");
    EXPECT_EQ(r.err.find("plan has no steps"), std::string::npos) << r.err;
    auto missing = run_orch({command, "nope.yaml"}, d.path());
    EXPECT_EQ(missing.exit_code, 2) << command;
    EXPECT_HAS(missing.err, "orch: nope.yaml: cannot read the plan file: No such file or directory\n");
  }
  EXPECT_FALSE(fs::exists(d / ".orch")) << "nothing was recorded";
}

TEST(CliUsage, AFolderGivenToReplanIsNotAPlan) {
  TempDir d;
  fs::create_directories(d / "plans");
  write_file(d / "p.yaml", "steps:\n  - {id: a, run: [\"false\"], attempts: 1}\n");
  auto first = run_orch({"run", "p.yaml"}, d.path());
  ASSERT_EQ(first.exit_code, 1) << first.err;
  std::string id = run_id_in(first.err);
  auto r = run_orch({"resume", id, "--replan", "plans"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "plans: is a folder, not a plan file");
  auto missing = run_orch({"resume", id, "--replan", "nope.yaml"}, d.path());
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_HAS(missing.err, "nope.yaml: cannot read the plan file: No such file or directory");

  // A bad edited plan gets every problem listed, as `orch run` lists them: the
  // checks of what could be read run even when some fields could not be read.
  write_file(
      d / "bad.yaml",
      "steps:\n  - {id: a, sh: echo, timeout: 5x, attempts: 0}\n  - {id: b, sh: echo, deps: [nope]}\n");
  auto bad = run_orch({"resume", id, "--replan", "bad.yaml"}, d.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_HAS(bad.err, "bad duration '5x'");
  EXPECT_HAS(bad.err, "'attempts' must be at least 1");
  EXPECT_HAS(bad.err, "depends on unknown step 'nope'");
  // Said as `orch run` says it: the verdict after "orch: ", then one problem a line.
  EXPECT_TRUE(bad.err.starts_with("orch: ")) << bad.err;
  EXPECT_HAS(bad.err, "bad.yaml is not valid (3 problems); nothing was resumed:\n");
  EXPECT_EQ(bad.err.find("orch: ", 1), std::string::npos) << "one verdict, then the problems:\n" << bad.err;
  auto as_run = run_orch({"validate", "bad.yaml"}, d.path());
  EXPECT_HAS(as_run.err, "bad.yaml: 3 problems\n");
}

TEST(CliUsage, LogsOfAStepTheRunDoesNotHaveSaySo) {
  TempDir d;
  write_file(d / "p.yaml",
             "steps:\n  - {id: build, run: [\"true\"]}\n  - {id: after, deps: [build], run: [\"false\"], "
             "attempts: 1}\n");
  auto first = run_orch({"run", "p.yaml", "--json"}, d.path());
  ASSERT_EQ(first.exit_code, 1) << first.err;
  // --json keeps the run's id line on stderr: the report only comes at the end.
  EXPECT_HAS(first.err, "orch: run ");
  const std::string id = nlohmann::json::parse(first.out)["run"]["id"];
  auto unknown = run_orch({"logs", id, "biuld"}, d.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_HAS(unknown.err, "has no step 'biuld' (did you mean 'build'?)");
  auto ran = run_orch({"logs", id, "build"}, d.path());
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
}

// A --store path that goes through a file (or a .orch that is a file) is a usage
// error, as a mistyped path is: exit 2, naming the file, nothing made.
TEST(CliUsage, AStorePathThroughAFileIsRefused) {
  TempDir d;
  write_file(d / "p.yaml", "steps: [{id: a, sh: \"true\"}]\n");
  write_file(d / "afile", "x");
  auto under = run_orch({"run", "p.yaml", "--store", "afile/orch.db"}, d.path());
  EXPECT_EQ(under.exit_code, 2) << under.err;
  EXPECT_HAS(under.err, "orch: --store afile/orch.db: afile is a file, not a folder\n");
  auto deeper = run_orch({"run", "p.yaml", "--store", "afile/sub/orch.db"}, d.path());
  EXPECT_EQ(deeper.exit_code, 2) << deeper.err;
  EXPECT_HAS(deeper.err, "afile is a file, not a folder");
  write_file(d / ".orch", "not a folder");
  auto dot = run_orch({"run", "p.yaml"}, d.path());
  EXPECT_EQ(dot.exit_code, 2) << dot.err;
  EXPECT_HAS(dot.err, ".orch is a file, not a folder");
  EXPECT_EQ(testing::read_file(d / "afile"), "x");
  EXPECT_FALSE(fs::exists(d / "a")) << "the step ran";
}

// A ledger named through a symlink is the same store as through its real path:
// a run driven through one is seen driven, and refused a second driver, through
// the other. A symlink that leads nowhere usable is a usage error naming it.
TEST(CliUsage, AStoreNamedThroughASymlinkIsTheSameStore) {
  TempDir d;
  fs::create_directories(d / "real");
  write_file(d / "p.yaml", "steps:\n  - {id: a, sh: 'echo $$ > a.pid; sleep 30'}\n");
  fs::create_symlink("real/orch.db", d / "link.db");
  pid_t driver = testing::spawn_orch({"run", "p.yaml", "--store", "real/orch.db"}, d.path(), d / "out.txt");
  ASSERT_TRUE(testing::wait_for([&] { return fs::exists(d / "a.pid"); }, 10000));
  const std::string id = run_id_in(testing::read_file(d / "out.txt"));
  ASSERT_FALSE(id.empty());
  auto status = run_orch({"status", id, "--store", "link.db"}, d.path());
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_HAS(status.out, "status running (active)");
  auto resumed = run_orch({"resume", id, "--store", "link.db"}, d.path());
  EXPECT_EQ(resumed.exit_code, 2) << resumed.err;
  EXPECT_HAS(resumed.err, "is already being driven by another orch process");
  auto cancelled = run_orch({"cancel", id, "--store", "link.db"}, d.path());
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.err;
  EXPECT_EQ(testing::wait_exit(driver), 130) << testing::read_file(d / "out.txt");

  write_file(d / "p2.yaml", "steps:\n  - {id: b, run: ['true']}\n");
  fs::create_symlink("nowhere/orch.db", d / "dangling.db");
  auto dangling = run_orch({"run", "p.yaml", "--store", "dangling.db"}, d.path());
  EXPECT_EQ(dangling.exit_code, 2) << dangling.err;
  EXPECT_HAS(dangling.err, "--store dangling.db: it leads to ");
  EXPECT_HAS(dangling.err, "nowhere/orch.db, whose folder does not exist");
  fs::create_symlink("l2", d / "l1");
  fs::create_symlink("l1", d / "l2");
  auto loop = run_orch({"runs", "--store", "l1"}, d.path());
  EXPECT_EQ(loop.exit_code, 2) << loop.err;
  EXPECT_HAS(loop.err, "too many levels of symbolic links");
  EXPECT_FALSE(fs::exists(d / "nowhere"));
  // A new ledger under a folder reached through a symlink: its own folder is made,
  // as anywhere else.
  fs::create_symlink(d / "real", d / "via");
  auto fresh = run_orch({"run", "p2.yaml", "--store", (d / "via" / "new" / "orch.db").string()}, d.path());
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_TRUE(fs::exists(d / "real" / "new" / "orch.db"));
}

// Files that never end or never come are refused, never waited on or read
// without end: a plan, a schema file and the configuration files.
TEST(CliUsage, APipeWithNoWriterOrAnEndlessFileIsRefusedAtOnce) {
  TempDir d;
  ASSERT_EQ(::mkfifo((d / "pipe").c_str(), 0600), 0);
  write_file(d / "ok.yaml", "steps:\n  - {id: a, run: [echo, hi]}\n");
  write_file(
      d / "zero.yaml",
      "steps:\n  - id: a\n    run: [echo, '{}']\n    post:\n      - result_json: {schema_path: /dev/zero}\n");
  write_file(
      d / "piped.yaml",
      "steps:\n  - id: a\n    run: [echo, '{}']\n    post:\n      - result_json: {schema_path: pipe}\n");
  const auto began = std::chrono::steady_clock::now();
  auto plan = run_orch({"validate", "pipe"}, d.path());
  EXPECT_EQ(plan.exit_code, 2) << plan.err;
  EXPECT_HAS(plan.err, "orch: pipe: is a named pipe that gave nothing");
  auto zero = run_orch({"validate", "zero.yaml"}, d.path());
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
  EXPECT_HAS(zero.err,
             "zero.yaml:5: step 'a': postcondition result_json: cannot use schema_path '/dev/zero'");
  EXPECT_HAS(zero.err, "larger than 67108864 bytes");
  auto piped = run_orch({"validate", "piped.yaml"}, d.path());
  EXPECT_EQ(piped.exit_code, 2) << piped.err;
  EXPECT_HAS(piped.err, "is a named pipe that gave nothing");
  for (const char* flag : {"--registry", "--models", "--workers"}) {
    auto r = run_orch({"validate", "ok.yaml", flag, "pipe"}, d.path());
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_HAS(r.err, "pipe: cannot read the ");
    EXPECT_HAS(r.err, "is a named pipe that gave nothing");
  }
  auto endless = run_orch({"validate", "ok.yaml", "--registry", "/dev/zero"}, d.path());
  EXPECT_EQ(endless.exit_code, 2) << endless.err;
  EXPECT_HAS(endless.err, "/dev/zero: cannot read the tool registry: larger than 67108864 bytes");
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(30));
}

// Something put where a log file was (a FIFO) is refused at once, not waited on.
TEST(CliUsage, LogsRefuseAFifoWhereALogWas) {
  TempDir d;
  write_file(d / "p.yaml", "steps: [{id: a, run: [echo, hello]}]\n");
  auto run = run_orch({"run", "p.yaml", "--json"}, d.path());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto report = nlohmann::json::parse(run.out);
  const std::string id = report["run"]["id"];
  const std::string log = report["steps"][0]["attempts"][0]["stdout"]["path"];
  ASSERT_FALSE(log.empty()) << run.out;
  fs::remove(log);
  ASSERT_EQ(::mkfifo(log.c_str(), 0600), 0) << log;
  auto r = run_orch({"logs", id, "a"}, d.path(), {}, 20);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_HAS(r.err, "is not a regular file");
  EXPECT_HAS(r.err, log);
}

// What cannot be read is said with its reason and the file it is: a models file
// that is a folder or missing, a run asked of a ledger file, a plan --json cannot parse.
TEST(CliUsage, FilesThatCannotBeReadAreNamedWithTheReason) {
  TempDir d;
  write_file(d / "p.yaml", "steps: [{id: a, sh: \"true\"}]\n");
  fs::create_directories(d / "conf");
  auto folder = run_orch({"validate", "p.yaml", "--models", "conf"}, d.path());
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_HAS(folder.err, "orch: conf: cannot read the models file: is a folder, not a file\n");
  auto missing = run_orch({"validate", "p.yaml", "--workers", "nope.yaml"}, d.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_HAS(missing.err,
             "orch: nope.yaml: cannot read the workers file: cannot open: No such file or directory\n");

  ASSERT_EQ(run_orch({"run", "p.yaml", "--store", "e.db"}, d.path()).exit_code, 0);
  auto unknown = run_orch({"status", "x", "--store", "e.db"}, d.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_HAS(unknown.err, "orch: no run 'x' in " + (fs::canonical(d.path()) / "e.db").string() + "\n");

  // A list of orch steps without `steps:` is said to be one, once, and nothing else.
  write_file(d / "list.yaml", "- {id: a, run: [\"true\"]}\n- {id: b, deps: [a], run: [\"true\"]}\n");
  auto list = run_orch({"validate", "list.yaml"}, d.path());
  EXPECT_EQ(list.exit_code, 2);
  EXPECT_HAS(list.err,
             "list.yaml:1: step 's0': this list of steps has ids, so it is an orch plan without 'steps:'");
  EXPECT_HAS(list.err, "list.yaml: 1 problem\n");

  auto as_json = run_orch({"validate", "--json", "conf"}, d.path());
  EXPECT_EQ(as_json.exit_code, 2);
  EXPECT_HAS(as_json.err, "orch: conf: is a folder, not a plan file\n");
  const auto doc = nlohmann::json::parse(as_json.out);
  EXPECT_EQ(doc["valid"], false);
  EXPECT_EQ(doc["errors"][0]["message"], "conf: is a folder, not a plan file");
}

TEST(CliUsage, APlanFileHoldsOneYamlDocument) {
  TempDir d;
  write_file(d / "two.yaml", "steps: [{id: a, sh: \"true\"}]\n---\nsteps: [{id: b, sh: \"false\"}]\n");
  write_file(d / "after-end.yaml", "steps: [{id: a, sh: \"true\"}]\n...\ngarbage: [\n");
  auto two = run_orch({"validate", "two.yaml"}, d.path());
  EXPECT_EQ(two.exit_code, 2) << two.out;
  EXPECT_HAS(two.err, "two.yaml:2: YAML syntax error: a second YAML document starts here");
  auto after_end = run_orch({"validate", "after-end.yaml"}, d.path());
  EXPECT_EQ(after_end.exit_code, 2) << after_end.out;
  EXPECT_HAS(after_end.err,
             "after-end.yaml:3: YAML syntax error: text after the document's end ('...' on line 2)");
  auto run = run_orch({"run", "two.yaml"}, d.path());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_FALSE(fs::exists(d / ".orch"));
}

TEST(CliUsage, AnUnusableWorkspaceIsRefusedBeforeAnythingIsRecorded) {
  TempDir d;
  write_file(d / "p.yaml", "steps: [{id: a, sh: \"true\"}]\n");
  const std::string missing = (d / "nonexistent").string();
  const std::vector<std::vector<std::string>> commands = {
      {"run", "p.yaml", "--workspace", "p.yaml"},
      {"run", "p.yaml", "--workspace", missing},
      {"run", "--request", "say hi", "--executor", "builtin:echo", "--workspace", "p.yaml"},
      {"validate", "p.yaml", "--workspace", "p.yaml"},
      {"validate", "p.yaml", "--workspace", missing},
      {"chain", "--steps", R"([{"executor": "builtin:echo", "inputs": {"text": "x"}}])", "--workspace",
       "p.yaml"},
  };
  for (const auto& args : commands) {
    auto r = run_orch(args, d.path());
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args.back() << "\n" << r.out << r.err;
    const std::string& workspace = args.back();
    EXPECT_HAS(r.err,
               "workspace '" + workspace + "' is not a usable folder: " +
                   (workspace == "p.yaml" ? "it is a file, not a folder" : "No such file or directory"));
  }
  EXPECT_FALSE(fs::exists(d / ".orch")) << "no run was recorded";
}

// Text a plan or a process wrote (a run's name, a check's command in a reason)
// reaches the terminal with its control characters escaped: an ESC in a plan
// cannot clear the screen or recolour what orch prints.
TEST(CliUsage, ControlCharactersInPlanTextAreEscapedInTablesAndLines) {
  TempDir d;
  write_file(
      d / "p.yaml",
      "name: \"evil\\e[2J\\a\"\non_failure: continue\nsteps:\n"
      "  - {id: a, sh: \"true\", attempts: 1, post: [{shell_zero: \"printf '\\e]0;x\\a'; exit 1\"}]}\n");
  auto run = run_orch({"run", "p.yaml"}, d.path());
  ASSERT_EQ(run.exit_code, 1) << run.err;
  auto status = run_orch({"status"}, d.path());
  auto runs = run_orch({"runs"}, d.path());
  for (const auto* r : {&run, &status, &runs}) {
    const std::string all = r->out + r->err;
    EXPECT_EQ(all.find('\x1b'), std::string::npos) << all;
    EXPECT_EQ(all.find('\a'), std::string::npos) << all;
  }
  EXPECT_NE(status.out.find("evil\\x1b[2J\\x07"), std::string::npos) << status.out;
  // Cut to its column whole: an escape, like a UTF-8 character, is kept or left out whole.
  EXPECT_NE(runs.out.find("  evil\\x1b[2J\\x07   "), std::string::npos) << runs.out;
  EXPECT_NE(run.out.find("shell_zero 'printf '\\x1b]0;x\\x07"), std::string::npos) << run.out;
  // The JSON report keeps the text as it is (JSON escapes it itself).
  auto report = run_orch({"status", "--json"}, d.path());
  EXPECT_EQ(nlohmann::json::parse(report.out)["run"]["name"], "evil\x1b[2J\a");
  write_file(d / "long.yaml",
             "name: \"\u00e9t\u00e9 \u00e0 la plage, tout le mois\"\nsteps:\n  - {id: a, sh: \"true\"}\n");
  ASSERT_EQ(run_orch({"run", "long.yaml"}, d.path()).exit_code, 0);
  const std::string listed = run_orch({"runs"}, d.path()).out;
  EXPECT_NE(listed.find("  \xc3\xa9t\xc3\xa9 \xc3\xa0 la plag...  "), std::string::npos) << listed;
}

// Every command that takes a RUN_ID says the same of an empty one (exit 2), and
// of one the store has none of (exit 2), its control characters escaped.
TEST(CliUsage, EveryCommandSaysTheSameOfAnEmptyOrUnknownRunId) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: a, run: [\"true\"]}\n");
  ASSERT_EQ(run_orch({"run", "p.yaml"}, d.path()).exit_code, 0);
  const std::string db = (d / ".orch" / "orch.db").string();
  const std::vector<std::vector<std::string>> commands = {
      {"status"}, {"resume"}, {"cancel"}, {"logs", "", "a"}, {"approve", "", "a"}};
  for (auto args : commands) {
    if (args.size() == 1) args.push_back("");
    auto r = run_orch(args, d.path());
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(r.err.rfind("orch: RUN_ID: is empty: give a run id (`orch runs` lists them)", 0), 0u)
        << args[0] << ": " << r.err;
    args[1] = "x\x1b[31my";
    auto unknown = run_orch(args, d.path());
    EXPECT_EQ(unknown.exit_code, 2) << args[0] << ": " << unknown.err;
    EXPECT_EQ(unknown.err.find('\x1b'), std::string::npos) << args[0] << ": " << unknown.err;
    EXPECT_NE(unknown.err.find("no run 'x\\x1b[31my' in "), std::string::npos)
        << args[0] << ": " << unknown.err;
  }
}

}  // namespace
}  // namespace orch
