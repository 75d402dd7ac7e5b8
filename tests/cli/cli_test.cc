// Black-box tests of the real orch binary on real plans.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "orch/report.h"
#include "testing/ledger_view.h"
#include "testing/sqlite_ledger.h"
#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch {
namespace {

using orch::testing::all_attempts;
using orch::testing::attempts_of;
using orch::testing::attempts_where;
using orch::testing::CommandResult;
using orch::testing::epoch_ms;
using orch::testing::orch_binary;
using orch::testing::read_file;
using orch::testing::run_command;
using orch::testing::run_events;
using orch::testing::run_id_in;
using orch::testing::run_list;
using orch::testing::run_orch;
using orch::testing::run_report;
using orch::testing::runs_where;
using orch::testing::source_dir;
using orch::testing::sqlite_ledger_exec;
using orch::testing::step_of;
using orch::testing::steps_in;
using orch::testing::TempDir;
using orch::testing::write_file;
namespace fs = std::filesystem;

// Validates `text` against schemas/<name> and returns the violations.
std::vector<std::string> schema_violations(const std::string& text, const std::string& name) {
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / name).string());
  if (!schema) return {"cannot load schema: " + schema.error().message};
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return {"not JSON: " + text.substr(0, 200)};
  return schema->validate(doc);
}

// The README's quick tour runs from the repository: its `orch run` lines must
// leave nothing behind but the ledger (before, hello.yaml's hello-note.txt was
// written into the checkout). Each line is run as the README gives it, in a
// copy of the repository's examples/, with build/orch being the binary here.
TEST(Cli, TheReadmeTourLeavesNothingInTheCheckout) {
  TempDir repo;
  fs::create_directories(repo / "examples");
  fs::copy_file(source_dir() / "examples" / "hello.yaml", repo / "examples" / "hello.yaml");
  const std::string readme = read_file(source_dir() / "README.md");
  std::istringstream lines(readme.substr(readme.find("## A quick tour")));
  std::string script = "set -e\norch() { \"$ORCH\" \"$@\"; }\n";
  int runs = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("ws=")) script += line.substr(0, line.find('#')) + "\n";
    if (!line.starts_with("build/orch run ")) continue;
    std::string command = line.substr(0, line.find("   #"));
    script += "orch" + command.substr(std::string("build/orch").size()) + " >/dev/null\n";
    ++runs;
  }
  ASSERT_GE(runs, 2) << readme;
  auto r = run_command({"/bin/sh", "-c", script}, repo.path(), {{"ORCH", orch_binary()}});
  EXPECT_EQ(r.exit_code, 0) << script << r.out << r.err;
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(repo.path())) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{".orch", "examples"})) << script;
}

// Issue 31, item 18: --color, --quiet and --verbose, before or after the command.
TEST(Cli, ColourQuietAndVerboseAreGlobalFlags) {
  TempDir d;
  write_file(d / "bad.yaml", "steps:\n  - {id: t, attempts: 1, sh: 'echo nope; exit 1'}\n");
  write_file(d / "good.yaml", "steps:\n  - {id: a, run: ['true']}\n  - {id: b, deps: [a], run: ['true']}\n");
  auto always = run_orch({"run", "bad.yaml", "--color=always"}, d.path());
  EXPECT_EQ(always.exit_code, 1) << always.err;
  EXPECT_HAS(always.out, "\033[31mfailed\033[0m    t  (attempt 1, ");
  EXPECT_HAS(always.out, " \033[31mfailed\033[0m: 0 done, 1 failed");
  auto runs = run_orch({"--color", "always", "runs"}, d.path());
  EXPECT_HAS(runs.out, "\033[31mfailed\033[0m");
  // auto: not on a pipe; never: not even asked; NO_COLOR does not beat "always".
  for (const auto& args : {std::vector<std::string>{"run", "bad.yaml"},
                           std::vector<std::string>{"run", "bad.yaml", "--color=never"}}) {
    auto plain = run_orch(args, d.path());
    EXPECT_EQ(plain.out.find('\033'), std::string::npos) << plain.out;
  }
  auto no_color = run_orch({"run", "bad.yaml", "--color=always"}, d.path(), {{"NO_COLOR", "1"}});
  EXPECT_HAS(no_color.out, "\033[31m");

  auto quiet = run_orch({"-q", "run", "good.yaml"}, d.path());
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.out, "");
  EXPECT_EQ(quiet.err, "");
  auto quiet_failed = run_orch({"run", "bad.yaml", "--quiet"}, d.path());
  EXPECT_EQ(quiet_failed.exit_code, 1) << "the exit code says how it ended";
  EXPECT_EQ(quiet_failed.out, "");
  auto quiet_json = run_orch({"run", "good.yaml", "--quiet", "--json"}, d.path());
  EXPECT_HAS(quiet_json.out, "\"schema\": \"orch.run-report/1\"");

  auto verbose = run_orch({"run", "good.yaml", "-v"}, d.path());
  EXPECT_HAS(verbose.out, "started   a  (attempt 1)\ndone      a  (attempt 1, ");
  EXPECT_HAS(verbose.out, "started   b  (attempt 1)\n");
  auto normal = run_orch({"run", "good.yaml"}, d.path());
  EXPECT_EQ(normal.out.find("started"), std::string::npos) << normal.out;
  auto debug = run_orch({"-vv", "runs"}, d.path());
  EXPECT_HAS(debug.err, "orch: ledger .orch/orch.db");
  auto split = run_orch({"-v", "runs", "-v"}, d.path());
  EXPECT_HAS(split.err, "orch: ledger .orch/orch.db") << "one -v on each side is -vv";
  auto one = run_orch({"runs", "-v"}, d.path());
  EXPECT_EQ(one.err.find("orch: ledger"), std::string::npos) << one.err;

  auto both = run_orch({"run", "good.yaml", "-q", "-v"}, d.path());
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_HAS(both.err, "--quiet and --verbose cannot be given together");
  auto bad = run_orch({"run", "good.yaml", "--color=sometimes"}, d.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_HAS(bad.err, "--color");
}

TEST(Cli, HelpDocumentsEveryCommandAndTheExitCodes) {
  TempDir d;
  auto r = run_orch({"--help"}, d.path());
  EXPECT_EQ(r.exit_code, 0);
  const char* const commands[] = {"validate", "run",          "resume",     "status",  "runs",  "logs",
                                  "events",   "cancel",       "plan",       "approve", "chain", "task",
                                  "route",    "budget-check", "similarity", "memory",  "review"};
  for (const char* word : {"130", "budget exhausted", "awaiting approval"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
  for (const char* cmd : commands) {
    EXPECT_NE(r.out.find(std::string("\n  ") + cmd + " "), std::string::npos) << cmd << "\n" << r.out;
    // `orch CMD ...` builds only CMD's options: its help is still whole.
    auto sub = run_orch({cmd, "--help"}, d.path());
    EXPECT_EQ(sub.exit_code, 0) << cmd;
    EXPECT_NE(sub.out.find(std::string("orch ") + cmd), std::string::npos) << cmd << "\n" << sub.out;
    EXPECT_NE(sub.out.find("Exit codes"), std::string::npos) << cmd;
  }
  // A command's own table says what its codes mean for it.
  const std::map<std::string, std::string> own = {
      {"validate", "0    the plan is valid"},
      {"status", "0    the run was shown, whatever its status"},
      {"runs", "0    the runs were listed"},
      {"logs", "1    the log the ledger recorded is gone or unreadable"},
      {"events", "0    the events were printed (none is not an error)"},
      {"cancel", "1    its driver had not stopped after --wait seconds"},
      {"approve", "2    an unknown run or step, a step not awaiting approval"},
      {"resume", "one that\n       succeeded"}};
  for (const auto& [cmd, line] : own) {
    auto sub = run_orch({cmd, "--help"}, d.path());
    EXPECT_NE(sub.out.find(line), std::string::npos) << cmd << "\n" << sub.out;
    EXPECT_EQ(sub.out.find("REVISE"), std::string::npos) << cmd << ": the general table\n" << sub.out;
  }
  auto bad = run_orch({"frobnicate"}, d.path());
  EXPECT_EQ(bad.exit_code, 2);
  auto missing = run_orch({"run"}, d.path());
  EXPECT_EQ(missing.exit_code, 2);
}

TEST(Cli, ValidateReportsEveryProblemWithFileAndLine) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - id: find
    run: [echo, hi]
  - id: fix
    deps: [fnd]
    run: [echo, "${steps.later.result}"]
  - id: later
    run: [echo]
    timeout: 5parsecs
)");
  auto r = run_orch({"validate", "p.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("p.yaml:5: step 'fix': "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'find'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("5parsecs"), std::string::npos) << r.err;
  auto ok = run_orch({"validate", (source_dir() / "examples" / "hello.yaml").string()}, d.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto gone = run_orch({"validate", "nope.yaml"}, d.path());
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_NE(gone.err.find("nope.yaml"), std::string::npos);
}

TEST(Cli, BadPlanCorpusIsRejectedByTheBinary) {
  fs::path corpus = source_dir() / "tests" / "bad-plans";
  std::ifstream expectations(corpus / "EXPECTATIONS");
  ASSERT_TRUE(expectations) << "missing " << (corpus / "EXPECTATIONS");
  TempDir ws;
  std::string line;
  int checked = 0;
  while (std::getline(expectations, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto t1 = line.find('\t');
    auto t2 = line.find('\t', t1 + 1);
    ASSERT_NE(t2, std::string::npos) << line;
    std::string file = line.substr(0, t1);
    std::string want_line = line.substr(t1 + 1, t2 - t1 - 1);
    std::string fragment = line.substr(t2 + 1);
    std::string path = (corpus / file).string();
    auto r = run_orch({"validate", path, "--workspace", ws.path().string()}, ws.path());
    EXPECT_EQ(r.exit_code, 2) << file << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << file << ": wanted '" << fragment << "' in\n"
                                                       << r.err;
    EXPECT_NE(r.err.find(path + ":" + want_line + ":"), std::string::npos) << file << "\n" << r.err;
    // And `orch run` refuses to start it, recording nothing.
    auto run = run_orch({"run", path, "--workspace", ws.path().string()}, ws.path());
    EXPECT_EQ(run.exit_code, 2) << file;
    ++checked;
  }
  EXPECT_GE(checked, 40);
  EXPECT_FALSE(fs::exists(ws / ".orch" / "orch.db")) << "a bad plan must not create a run";
}

TEST(Cli, RunPrintsOneLinePerStepAndAReportThatMatchesTheSchema) {
  TempDir d;
  write_file(d / "p.yaml", R"(name: demo
steps:
  - {id: a, run: [echo, hi]}
  - {id: b, deps: [a], executor: builtin:echo, inputs: {text: "${steps.a.result} there"}}
)");
  auto r = run_orch({"run", "p.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("done      a"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done      b"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(d / ".orch" / "orch.db"));

  auto j = run_orch({"run", "p.yaml", "--json"}, d.path());
  EXPECT_EQ(j.exit_code, 0) << j.err;
  auto v = schema_violations(j.out, "run-report.schema.json");
  EXPECT_TRUE(v.empty()) << v.front() << "\n" << j.out;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["run"]["status"], "succeeded");
  EXPECT_EQ(doc["counts"]["done"], 2);

  std::string id = doc["run"]["id"];
  auto status = run_orch({"status", id, "--json"}, d.path());
  EXPECT_EQ(status.exit_code, 0);
  EXPECT_TRUE(schema_violations(status.out, "run-report.schema.json").empty());
  auto human = run_orch({"status"}, d.path());
  EXPECT_NE(human.out.find(id), std::string::npos) << human.out;
  auto runs = run_orch({"runs", "--json"}, d.path());
  auto list = nlohmann::json::parse(runs.out);
  EXPECT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["id"], id);  // newest first
  auto logs = run_orch({"logs", id, "a"}, d.path());
  EXPECT_EQ(logs.exit_code, 0);
  EXPECT_EQ(logs.out, "hi\n");
  auto nolog = run_orch({"logs", id, "zzz"}, d.path());
  EXPECT_EQ(nolog.exit_code, 2);
}

TEST(Cli, FailedRunExitsOneAndReportsWhy) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - {id: t, run: [sh, -c, "echo nope; exit 1"], post: [exit_zero]}
  - {id: u, deps: [t], run: ["true"]}
)");
  auto r = run_orch({"run", "p.yaml", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["run"]["status"], "failed");
  EXPECT_EQ(doc["steps"][0]["status"], "failed");
  EXPECT_NE(doc["steps"][0]["reason"].get<std::string>().find("exited with code 1; output: nope"),
            std::string::npos)
      << doc["steps"][0]["reason"];
  EXPECT_EQ(doc["steps"][1]["status"], "skipped");
}

// As ninja does, the last lines a failed step printed are shown under its
// failure (at most ten, stderr's after stdout's), not only its exit code.
TEST(Cli, AFailedStepsLastLinesAreShownUnderItsFailure) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - {id: t, attempts: 1, sh: 'echo started; for i in $(seq 1 12); do echo "line $i" >&2; done; echo "Mock error" >&2; exit 1'}
)");
  auto r = run_orch({"run", "p.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_HAS(r.out, "failed    t  (attempt 1, ");
  EXPECT_HAS(r.out, "exited with code 1; output: ");
  EXPECT_HAS(r.out, "\n  | line 4\n  | line 5\n");
  EXPECT_HAS(r.out, "  | line 12\n  | Mock error\n");
  EXPECT_EQ(r.out.find("  | line 3\n"), std::string::npos) << "ten lines at most:\n" << r.out;
}

// A resume that ends a step without starting it (its attempts budget was spent
// before) says so, not "(attempt 2, ...)" as if it had run it again.
TEST(Cli, AStepAResumeEndsWithoutRunningItIsNotShownAsANewAttempt) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - {id: s, run: [sh, -c, "exit 1"], attempts: 2, budget: {attempts: 2}}
)");
  auto first = run_orch({"run", "p.yaml"}, d.path());
  ASSERT_EQ(first.exit_code, 1) << first.err;
  EXPECT_NE(first.out.find("failed    s  (attempt 2, "), std::string::npos) << first.out;
  auto again = run_orch({"resume", run_id_in(first.err)}, d.path());
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_NE(again.out.find("failed    s  (not run again; 2 attempts before, "), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("step budget exhausted: attempts 2 made of 2"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("(attempt 2"), std::string::npos) << again.out;
}

// The run records its plan's path resolved: `sub/../p.yaml` is the plan in this
// folder, absolute, whatever directory a later command runs in.
TEST(Cli, ThePlanPathIsRecordedResolved) {
  TempDir d;
  fs::create_directories(d / "sub");
  write_file(d / "p.yaml", "steps:\n  - {id: a, run: [\"true\"]}\n");
  auto r = run_orch({"run", "sub/../p.yaml"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_report(d.path(), run_id_in(r.err))["run"]["plan"], fs::canonical(d / "p.yaml").string());
  // A plan named through a symlink keeps the link's name: its folder, where its
  // relative paths are found, is the one the run used.
  fs::create_symlink(d / "p.yaml", d / "sub" / "link.yaml");
  auto linked = run_orch({"run", "sub/link.yaml"}, d.path());
  ASSERT_EQ(linked.exit_code, 0) << linked.err;
  EXPECT_EQ(run_report(d.path(), run_id_in(linked.err))["run"]["plan"],
            (fs::canonical(d / "sub") / "link.yaml").string());
}

// PLAN "-" is standard input (`orch plan ... | orch run -`): named <stdin> in
// diagnostics, its relative paths taken from the workspace (it has no folder of
// its own), stored without a path; `resume --replan -` reads the edit likewise.
TEST(Cli, APlanFromStandardInputRunsWithTheWorkspaceAsItsFolder) {
  TempDir d;
  fs::create_directories(d / "ws");
  write_file(d / "ws" / "s.json", R"({"type": "object", "required": ["ok"]})");
  write_file(d / "p.yaml", R"(steps:
  - {id: a, run: [echo, '{"ok": 1}'], post: [{result_json: {schema_path: s.json}}]}
  - {id: b, deps: [a], sh: 'exit 1', attempts: 1}
)");
  write_file(d / "fixed.yaml", R"(steps:
  - {id: a, run: [echo, '{"ok": 1}'], post: [{result_json: {schema_path: s.json}}]}
  - {id: b, deps: [a], sh: 'test -f s.json', attempts: 1}
)");
  write_file(d / "bad.yaml", "steps:\n  - {id: a, run: [echo], deps: [nope]}\n");
  const std::map<std::string, std::string> env{{"ORCH", orch_binary()}};
  const auto sh = [&](const std::string& script) {
    return run_command({"/bin/sh", "-c", script}, d.path(), env);
  };

  auto bad = sh(R"("$ORCH" validate - < bad.yaml)");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("<stdin>:2: step 'a': "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("<stdin>: 1 problem"), std::string::npos) << bad.err;
  auto ok = sh(R"(cat p.yaml | "$ORCH" validate - --workspace ws)");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("<stdin>: ok (2 steps)"), std::string::npos) << ok.out;
  // From d, where there is no s.json: the schema is found in the workspace.
  auto run = sh(R"(cat p.yaml | "$ORCH" run - --workspace ws)");
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  const std::string id = run_id_in(run.err);
  EXPECT_EQ(step_of(run_report(d.path(), id), "a")["status"], "done");
  EXPECT_EQ(runs_where(d.path(), "plan", ""), 1);
  // Shown as no file, not as a blank.
  auto status = sh("\"$ORCH\" status " + id);
  EXPECT_EQ(status.out.rfind("run " + id + "  plan - (not from a file)\n", 0), 0u) << status.out;
  auto runs = sh(R"("$ORCH" runs)");
  EXPECT_NE(runs.out.find(id + "   failed                -   "), std::string::npos) << runs.out;
  EXPECT_EQ(runs.out.back(), '\n');
  EXPECT_EQ(runs.out.substr(runs.out.size() - 4), "  -\n") << runs.out;
  // Stopped while the edited plan is still coming (typed, or piped by a writer
  // that has not finished): orch ends at once and resumes nothing on the part
  // that came, which here would drop step b from the plan.
  ASSERT_EQ(mkfifo((d / "edit.fifo").c_str(), 0600), 0);
  const int writer = open((d / "edit.fifo").c_str(), O_RDWR | O_CLOEXEC);  // never a reader's EOF
  ASSERT_GE(writer, 0);
  const std::string part = "steps:\n  - {id: a, run: [echo, '{\"ok\": 1}']}\n";
  ASSERT_EQ(write(writer, part.data(), part.size()), static_cast<ssize_t>(part.size()));
  pid_t reading = spawn_orch({"resume", id, "--replan", "edit.fifo"}, d.path(), d / "reading.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(reading, SIGTERM);
  EXPECT_TRUE(wait_for([&] { return !testing::process_alive(reading); }, 5000))
      << "still reading the plan after SIGTERM";
  close(writer);
  EXPECT_EQ(wait_exit(reading), 128 + SIGTERM) << read_file(d / "reading.txt");
  auto untouched = run_report(d.path(), id);
  EXPECT_EQ(untouched["run"]["plan_version"], 1) << "no plan version was stored";
  EXPECT_EQ(step_of(untouched, "b")["status"], "failed");
  auto resumed = sh("\"$ORCH\" resume " + id + " --replan - < fixed.yaml");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  auto replanned = run_report(d.path(), id);
  EXPECT_EQ(steps_in(replanned, "done"), 2);
  EXPECT_EQ(replanned["run"]["plan_version"], 2);
  EXPECT_EQ(replanned["run"]["plan"], "") << "version 2 is stored without a path";
  auto empty = sh(R"("$ORCH" run - < /dev/null)");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("<stdin>:1: plan has no steps"), std::string::npos) << empty.err;
}

TEST(Cli, BudgetExhaustionExitsFour) {
  TempDir d;
  write_file(d / "p.yaml", R"(budget: {attempts: 1}
concurrency: 1
steps:
  - {id: a, run: ["true"]}
  - {id: b, run: ["true"]}
)");
  auto r = run_orch({"run", "p.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
}

TEST(Cli, RuntimeFaultsAreReportedNotFatal) {
  TempDir d;
  write_file(d / "p.yaml", R"(on_failure: continue
defaults: {kill_grace: 300ms}
steps:
  - {id: missing, run: [no-such-program-xyz]}
  - {id: slow, timeout: 500ms, run: [sleep, "60"]}
  - id: orphan
    sh: '(sleep 3; echo late > late.txt) & echo $! > grandchild.pid; exit 0'
  - id: huge
    max_output: 1MiB
    run: [head, -c, "20000000", /dev/zero]
  - id: binary
    run: [printf, '\377\376\000abc']
  - id: binary_check_fails
    run: [printf, '\377\376']
    post: [{shell_zero: "printf '\\377\\376 bad bytes'; exit 1"}]
)");
  auto start = std::chrono::steady_clock::now();
  auto r = run_orch({"run", "p.yaml", "--json"}, d.path());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["run"]["keep_going"], true) << "the plan's on_failure: continue keeps it going";
  std::map<std::string, nlohmann::json> steps;
  for (auto& s : doc["steps"]) steps[s["id"]] = s;
  EXPECT_EQ(steps["missing"]["status"], "failed");
  EXPECT_NE(steps["missing"]["reason"].get<std::string>().find("no-such-program-xyz"), std::string::npos)
      << steps["missing"]["reason"];
  EXPECT_EQ(steps["slow"]["attempts"][0]["status"], "timed_out");
  EXPECT_EQ(steps["orphan"]["status"], "done");
  EXPECT_EQ(steps["huge"]["status"], "done");
  EXPECT_TRUE(steps["huge"]["attempts"][0]["stdout"]["truncated"].get<bool>());
  EXPECT_EQ(steps["huge"]["attempts"][0]["stdout"]["bytes"], 20000000);
  EXPECT_LT(fs::file_size(steps["huge"]["attempts"][0]["stdout"]["path"].get<std::string>()),
            1024 * 1024 + 200);
  EXPECT_EQ(steps["binary"]["status"], "done");
  EXPECT_EQ(steps["binary_check_fails"]["status"], "failed");
  EXPECT_NE(steps["binary_check_fails"]["reason"].get<std::string>().find("bad bytes"), std::string::npos);
  std::string id = doc["run"]["id"];
  auto logs = run_orch({"logs", id, "binary"}, d.path());
  EXPECT_EQ(logs.out, std::string("\377\376\000abc", 6));
  // The grandchild was killed with its step's process group: it never writes.
  pid_t gc = std::stoi(read_file(d / "grandchild.pid"));
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  EXPECT_FALSE(fs::exists(d / "late.txt"));
  EXPECT_TRUE(kill(gc, 0) != 0 && errno == ESRCH);
}

TEST(Cli, WritesAreRestoredAfterAFailedCheck) {
  TempDir d;
  write_file(d / "notes.md", "keep me\n");
  write_file(d / "p.yaml", R"(steps:
  - id: edit
    writes: [notes.md]
    sh: 'echo clobbered > notes.md'
    post: [{file_contains: {path: notes.md, text: "DONE"}}]
)");
  auto r = run_orch({"run", "p.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(read_file(d / "notes.md"), "keep me\n");
}

using orch::testing::spawn_orch;
using orch::testing::wait_exit;
using orch::testing::wait_for;
bool alive(pid_t pid) {
  return orch::testing::process_alive(pid);
}

// The time a run was driven, as its report gives it (budget.spent.wall_ms): for a
// live run, to now; for one no process drives, what its row holds. -1 without a report.
std::int64_t driven_ms(const nlohmann::json& report) {
  if (!report.is_object()) return -1;
  return report["budget"]["spent"]["wall_ms"].get<std::int64_t>();
}

TEST(Cli, SigintInterruptsResumablyAndKill9IsResumed) {
  TempDir d;
  write_file(d / "p.yaml", R"(concurrency: 2
steps:
  - {id: quick, sh: 'echo q >> quick.log'}
  - {id: slow1, deps: [quick], sh: 'echo $$ > slow1.pid; echo s >> slow1.log; sleep 30'}
  - {id: slow2, deps: [quick], sh: 'echo s >> slow2.log; sleep 30'}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out1.txt");
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "slow1.log") && fs::exists(d / "slow2.log"); }, 10000));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130) << read_file(d / "out1.txt");
  auto stopped = run_report(d.path(), run_id_in(read_file(d / "out1.txt")));
  EXPECT_EQ(attempts_where(stopped, "status", "interrupted"), 2);
  EXPECT_EQ(attempts_where(stopped, "ending", "interrupted"), 2) << "stopped for a signal, not cancelled";
  EXPECT_EQ(runs_where(d.path(), "status", "interrupted"), 1);

  // Now make the slow steps quick and resume; then kill -9 a second run mid-way.
  std::string out = read_file(d / "out1.txt");
  std::string id = run_id_in(out);
  write_file(d / "p2.yaml", R"(concurrency: 2
steps:
  - {id: quick, sh: 'echo q >> quick.log'}
  - {id: slow1, deps: [quick], sh: 'echo s >> slow1.log'}
  - {id: slow2, deps: [quick], sh: 'echo s >> slow2.log'}
)");
  auto r = run_orch({"resume", id, "--replan", "p2.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_file(d / "quick.log"), "q\n");  // done before the interrupt: never re-run

  pid_t pid2 = spawn_orch({"run", "p.yaml"}, d.path(), d / "out2.txt");
  ASSERT_TRUE(wait_for(
      [&] { return read_file(d / "slow1.log").size() >= 6 && read_file(d / "slow2.log").size() >= 6; },
      10000));
  // Long enough for the driver's once-a-second heartbeat to come after the starts.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid2, SIGKILL);
  wait_exit(pid2);
  std::string out2 = read_file(d / "out2.txt");
  std::string id2 = run_id_in(out2);
  auto st = run_orch({"status", id2, "--json"}, d.path());
  auto doc = nlohmann::json::parse(st.out);
  EXPECT_EQ(doc["run"]["status"], "running");
  EXPECT_FALSE(doc["run"]["active"].get<bool>());
  // What it spent comes from its attempts (quick, and the two slow ones it left
  // running), not from the run row the killed process wrote last; its time runs
  // to the latest attempt the ledger recorded.
  EXPECT_EQ(doc["budget"]["spent"]["attempts"], 3) << st.out;
  // The steps it left running ran until its last sign of life, not for 0 ms.
  for (const auto& s : doc["steps"]) {
    if (s["status"] != "running") continue;
    EXPECT_GE(s["duration_ms"].get<std::int64_t>(), 400) << s.dump();
    EXPECT_LE(s["duration_ms"].get<std::int64_t>(), doc["run"]["elapsed_ms"].get<std::int64_t>()) << s.dump();
  }
  std::int64_t last_start = 0;
  for (const auto& a : all_attempts(doc))
    last_start = std::max(last_start, epoch_ms(a["started_at"].get<std::string>()));
  EXPECT_GE(doc["run"]["elapsed_ms"].get<std::int64_t>(),
            last_start - epoch_ms(doc["run"]["created_at"].get<std::string>()));
  auto listed = run_orch({"runs"}, d.path());
  EXPECT_NE(listed.out.find(id2 + "   running (no process)"), std::string::npos) << listed.out;
  auto listed_json = nlohmann::json::parse(run_orch({"runs", "--json"}, d.path()).out);
  for (const auto& listed_run : listed_json) {
    if (listed_run["id"] == id2) {
      EXPECT_EQ(listed_run["spent_attempts"], 3) << listed_json.dump();
    }
  }
  // The step process the killed orch left behind is still running, until resume kills it.
  pid_t orphan = std::stoi(read_file(d / "slow1.pid"));
  EXPECT_TRUE(alive(orphan));
  auto r2 = run_orch({"resume", id2, "--replan", "p2.yaml", "--json"}, d.path());
  EXPECT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_TRUE(wait_for([&] { return !alive(orphan); }, 2000))
      << "orphaned step process " << orphan << " survived resume";
  auto rep = nlohmann::json::parse(r2.out);
  for (auto& s : rep["steps"]) {
    if (s["id"] == "slow1") {
      ASSERT_EQ(s["attempts"].size(), 2u);
      EXPECT_EQ(s["attempts"][0]["status"], "interrupted");
      EXPECT_FALSE(s["attempts"][0]["counted"].get<bool>());
      EXPECT_EQ(s["attempts"][1]["status"], "succeeded");
    }
  }
}

// Resumes the run whose id is in d/out.txt with d/p2.yaml, and expects the one
// process `orphan` its killed driver left behind to be killed by the resume.
void expect_resume_kills(const TempDir& d, pid_t orphan, const std::string& what) {
  const std::string id = run_id_in(read_file(d / "out.txt"));
  auto r = run_orch({"resume", id, "--replan", "p2.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(wait_for([&] { return !alive(orphan); }, 2000)) << what << " " << orphan << " survived resume";
  auto resumed = run_events(d.path(), id, "run_resumed");
  ASSERT_FALSE(resumed.empty());
  EXPECT_EQ(resumed[0]["data"]["orphans_killed"], 1) << resumed.dump();
  if (alive(orphan)) kill(orphan, SIGKILL);
}

// A step that clears its environment (env -i, for a hermetic build) carries no
// ORCH_RUN_ID; its process is found through the process group the ledger recorded
// for its attempt, and killed before the resume re-runs the step.
TEST(Cli, AResumeKillsTheLeftoversOfAStepThatClearedItsEnvironment) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - {id: hermetic, run: [env, -i, /bin/sh, -c, 'echo $$ > hermetic.pid; exec sleep 30']}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return read_file(d / "hermetic.pid").size() > 1; }, 10000));
  // Recorded with the next turn's writes: within a quarter of a second.
  ASSERT_TRUE(wait_for([&] { return run_events(d.path(), "", "attempt_spawned").size() == 1; }, 5000));
  kill(pid, SIGKILL);
  wait_exit(pid);
  pid_t orphan = std::stoi(read_file(d / "hermetic.pid"));
  ASSERT_TRUE(alive(orphan));
  write_file(d / "p2.yaml", R"(steps:
  - {id: hermetic, run: [env, -i, /bin/sh, -c, 'echo again']}
)");
  expect_resume_kills(d, orphan, "the step process");
}

// The same step killing orch itself as it starts (20 ms in, for orch to have
// written the journal line it writes right after the spawn): orch dies before the
// commit that records the group (attempt_spawned, within 250 ms), and the resume
// finds the group in the spawn journal.
TEST(Cli, AResumeKillsTheLeftoversOfAStepThatClearedItsEnvironmentBeforeItsGroupWasCommitted) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - {id: hermetic, run: [env, -i, /bin/sh, -c, 'echo $$ > hermetic.pid; sleep 0.02; kill -9 $PPID; exec sleep 30']}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  wait_exit(pid);
  ASSERT_TRUE(wait_for([&] { return read_file(d / "hermetic.pid").size() > 1; }, 10000));
  pid_t orphan = std::stoi(read_file(d / "hermetic.pid"));
  ASSERT_TRUE(alive(orphan));
  EXPECT_EQ(run_events(d.path(), run_id_in(read_file(d / "out.txt")), "attempt_spawned").size(), 0u)
      << "orch lived to commit the group: this test no longer tests the journal";
  const fs::path journal = d / ".orch" / "runs" / run_id_in(read_file(d / "out.txt")) / "spawned";
  // (env execs the shell: the process that wrote its pid leads the group.)
  EXPECT_NE(read_file(journal).find("\"pgid\":" + std::to_string(orphan) + ","), std::string::npos)
      << read_file(journal);
  write_file(d / "p2.yaml", R"(steps:
  - {id: hermetic, run: [env, -i, /bin/sh, -c, 'echo again']}
)");
  expect_resume_kills(d, orphan, "the step process");
  // The dead driver's lines went with its attempts; the resume's own may stay.
  EXPECT_EQ(read_file(journal).find("\"pgid\":" + std::to_string(orphan) + ","), std::string::npos)
      << read_file(journal);
}

// A shell_zero check is a process too: its group is recorded like the attempt's,
// so a check that cleared its environment is killed by the resume as well.
TEST(Cli, AResumeKillsACheckLeftRunningThatClearedItsEnvironment) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - id: checked
    run: ["true"]
    post:
      - {shell_zero: "exec env -i /bin/sh -c 'echo $$ > check.pid; exec sleep 30'"}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return read_file(d / "check.pid").size() > 1; }, 10000));
  ASSERT_TRUE(wait_for(
      [&] {
        const auto spawned = run_events(d.path(), "", "attempt_spawned");
        return std::count_if(spawned.begin(), spawned.end(), [](const nlohmann::json& e) {
                 return e["data"].value("process", "") == "check";
               }) == 1;
      },
      5000));
  kill(pid, SIGKILL);
  wait_exit(pid);
  pid_t orphan = std::stoi(read_file(d / "check.pid"));
  ASSERT_TRUE(alive(orphan));
  write_file(d / "p2.yaml", R"(steps:
  - id: checked
    run: ["true"]
    post:
      - {shell_zero: "true"}
)");
  expect_resume_kills(d, orphan, "the check process");
}

// What a killed driver's attempt left is dealt with before the stored plan is
// checked: here the attempt made its `writes:` folder a symlink out of the
// workspace, which the plan's check refuses. The resume kills the attempt's
// process, puts the folder back, and then the plan is valid and the run goes on.
TEST(Cli, AResumePutsBackWhatAKilledAttemptLeftBeforeItChecksThePlan) {
  TempDir d;
  TempDir outside;
  fs::create_directory(d / "d");
  write_file(d / "d" / "keep.txt", "kept\n");
  write_file(d / "p.yaml",
             "steps:\n  - id: w\n    writes: [d]\n    sh: 'if [ -f again ]; then exit 0; fi; "
             "rm -rf d; ln -s " +
                 outside.path().string() + " d; echo $$ > w.pid; exec sleep 30'\n");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return read_file(d / "w.pid").size() > 1; }, 10000));
  ASSERT_TRUE(wait_for([&] { return run_events(d.path(), "", "attempt_spawned").size() == 1; }, 5000));
  kill(pid, SIGKILL);
  wait_exit(pid);
  const pid_t left = std::stoi(read_file(d / "w.pid"));
  ASSERT_TRUE(alive(left));
  ASSERT_TRUE(fs::is_symlink(d / "d"));
  write_file(d / "again", "");
  const std::string id = run_id_in(read_file(d / "out.txt"));
  auto r = run_orch({"resume", id}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::is_symlink(d / "d"));
  EXPECT_EQ(read_file(d / "d" / "keep.txt"), "kept\n");
  EXPECT_TRUE(wait_for([&] { return !alive(left); }, 3000)) << "the killed driver's step process lives on";
  auto interrupted = run_events(d.path(), id, "attempt_interrupted");
  ASSERT_FALSE(interrupted.empty());
  EXPECT_EQ(interrupted[0]["data"]["writes"], "restored") << interrupted.dump();
  if (alive(left)) kill(left, SIGKILL);
}

// Runs p.yaml, whose step `w` (with `writes:`) writes its pid to w.pid and
// sleeps, and kills orch with -9 once the attempt's snapshot is in the ledger.
// Returns the snapshot folder ("" when that did not happen).
std::string kill_driver_while_w_runs(const TempDir& d) {
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  const auto snapshots = [&] {
    const auto attempts = all_attempts(run_report(d.path()));
    return std::count_if(attempts.begin(), attempts.end(),
                         [](const nlohmann::json& a) { return a["snapshot"] != ""; });
  };
  const bool started = wait_for([&] { return read_file(d / "w.pid").size() > 1; }, 10000) &&
                       wait_for([&] { return snapshots() == 1; }, 5000);
  kill(pid, SIGKILL);
  wait_exit(pid);
  if (!started) return "";
  const auto attempts = attempts_of(run_report(d.path()), "w");
  return attempts.empty() ? "" : attempts[0]["snapshot"].get<std::string>();
}

// A killed driver's attempt whose `writes:` cannot be put back (its snapshot is
// gone) is not run again on its leftovers by the resume: its step fails, saying
// why, its dependents do not run, and the run ends failed. Asked again (another
// resume), it runs.
TEST(Cli, AKilledAttemptWhoseWritesCannotBePutBackFailsItsStepOnResume) {
  TempDir d;
  write_file(d / "f.txt", "original\n");
  write_file(d / "p.yaml", R"(steps:
  - id: w
    writes: [f.txt]
    sh: 'if [ -f again ]; then echo redone > f.txt; exit 0; fi; echo changed > f.txt; echo $$ > w.pid; exec sleep 30'
  - {id: after, deps: [w], sh: 'echo ran > after.txt'}
)");
  const std::string snapshot = kill_driver_while_w_runs(d);
  ASSERT_FALSE(snapshot.empty());
  ASSERT_TRUE(fs::exists(fs::path(snapshot) / "manifest.json")) << snapshot;
  fs::remove_all(snapshot);
  const std::string id = run_id_in(read_file(d / "out.txt"));
  auto r = run_orch({"resume", id}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto report = run_report(d.path(), id);
  auto w = step_of(report, "w");
  ASSERT_TRUE(w.is_object()) << report.dump();
  EXPECT_HAS(w["reason"].get<std::string>(),
             "(not retried: its writes could not be put back: their snapshot, " + snapshot + ", is gone)");
  EXPECT_EQ(w["status"], "failed");
  EXPECT_EQ(w["attempts"].size(), 1u) << "re-run on its leftovers";
  EXPECT_EQ(step_of(report, "after")["status"], "skipped");
  EXPECT_FALSE(fs::exists(d / "after.txt"));
  EXPECT_EQ(read_file(d / "f.txt"), "changed\n");
  EXPECT_EQ(run_events(d.path(), id, "restore_failed").size(), 1u);
  auto interrupted = run_events(d.path(), id, "attempt_interrupted");
  ASSERT_FALSE(interrupted.empty());
  EXPECT_EQ(interrupted[0]["data"]["writes"], "not restored") << interrupted.dump();
  EXPECT_HAS(r.out + r.err, "its writes could not be put back");
  write_file(d / "again", "");
  auto again = run_orch({"resume", id}, d.path());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_file(d / "f.txt"), "redone\n");
  EXPECT_TRUE(fs::exists(d / "after.txt"));
}

// The same found by `orch cancel` of the dead run: the step's reason says its
// writes were not put back and where the snapshot is.
TEST(Cli, CancellingADeadRunSaysWhichWritesCouldNotBePutBack) {
  TempDir d;
  write_file(d / "f.txt", "original\n");
  write_file(d / "p.yaml", R"(steps:
  - {id: w, writes: [f.txt], sh: 'echo changed > f.txt; echo $$ > w.pid; exec sleep 30'}
)");
  const std::string snapshot = kill_driver_while_w_runs(d);
  ASSERT_FALSE(snapshot.empty());
  write_file(fs::path(snapshot) / "manifest.json", "{not json");
  const std::string id = run_id_in(read_file(d / "out.txt"));
  auto r = run_orch({"cancel", id}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto w = step_of(run_report(d.path(), id), "w");
  ASSERT_TRUE(w.is_object()) << "the run has no step w";
  const std::string reason = w["reason"];
  EXPECT_HAS(reason,
             "cancelled: its attempt was interrupted (the orch driving it had died; its writes could not "
             "be put back: ");
  EXPECT_HAS(reason, "the snapshot is kept in " + snapshot);
  EXPECT_EQ(read_file(d / "f.txt"), "changed\n");
}

// A burst of SIGTERMs (a `timeout` that signals orch and then its group, an
// impatient Ctrl-C) stops the run once: exit 130 and the report, never killed by
// a later signal while the report is printed.
TEST(Cli, ABurstOfSignalsEndsTheRunOnceWithItsReport) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: long, sh: 'echo started > started; exec sleep 30'}\n");
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    fs::remove(d / "started");
    pid_t pid = spawn_orch({"run", "p.yaml", "--json"}, d.path(), d / "out.txt");
    ASSERT_TRUE(wait_for([&] { return fs::exists(d / "started"); }, 10000));
    for (int i = 0; i < 300 && testing::process_alive(pid); ++i) {
      kill(pid, SIGTERM);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(wait_exit(pid), 130);
    const std::string out = read_file(d / "out.txt");
    EXPECT_NE(out.find("\"status\": \"interrupted\""), std::string::npos) << out;
  }
}

// A stop signal ignored when orch started stays ignored, as by convention
// (`nohup orch run ...`: the terminal closing must not stop the run; a script's
// `orch run ... &` ignores SIGINT). Others still stop it.
TEST(Cli, ASignalIgnoredWhenOrchStartedStaysIgnored) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: nap, sh: 'echo started > started; sleep 1; echo rested'}\n");
  const std::string orch = orch_binary();
  const std::string out = (d / "out.txt").string();
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGHUP, SIG_IGN);
    if (chdir(d.path().c_str()) != 0) _exit(127);
    int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(orch.c_str(), "orch", "run", "p.yaml", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "started"); }, 10000)) << read_file(d / "out.txt");
  for (int i = 0; i < 3; ++i) {
    kill(pid, SIGHUP);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(wait_exit(pid), 0) << read_file(d / "out.txt");
  EXPECT_EQ(runs_where(d.path(), "status", "succeeded"), 1);
  EXPECT_EQ(attempts_where(run_report(d.path()), "status", "succeeded"), 1);
}

// `orch logs` finds the logs of a project moved with its store, and says so,
// naming the file, when a log the ledger recorded bytes for is gone.
TEST(Cli, LogsFollowAMovedProjectAndSayWhenALogIsGone) {
  TempDir d;
  fs::create_directories(d / "before");
  write_file(d / "before" / "p.yaml",
             "steps:\n  - {id: a, sh: 'echo out; echo err >&2; exit 1', attempts: 1}\n");
  auto r = run_orch({"run", "p.yaml"}, d / "before");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const std::string id = run_id_in(r.err);
  fs::rename(d / "before", d / "after");
  auto out = run_orch({"logs", id, "a"}, d / "after");
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, "out\n");
  EXPECT_EQ(run_orch({"logs", id, "a", "--stderr"}, d / "after").out, "err\n");
  fs::remove(d / "after" / ".orch" / "runs" / id / "a.1.stdout");
  auto gone = run_orch({"logs", id, "a"}, d / "after");
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find("cannot read the stdout of attempt 1 of step 'a' (4 bytes recorded): "),
            std::string::npos)
      << gone.err;
  EXPECT_NE(gone.err.find("a.1.stdout: No such file or directory"), std::string::npos) << gone.err;
}

// Ctrl-C stops what the steps started outside their process groups (setsid, a
// daemon) as well: they carry the run's ORCH_RUN_ID.
TEST(Cli, AnInterruptAlsoStopsWhatAStepStartedInASessionOfItsOwn) {
  TempDir d;
  write_file(d / "p.yaml",
             "steps:\n  - {id: a, sh: 'setsid sleep 300 & echo $! > daemon.pid; exec sleep 300'}\n");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return read_file(d / "daemon.pid").size() > 1; }, 10000));
  const pid_t daemon = std::stoi(read_file(d / "daemon.pid"));
  ASSERT_TRUE(wait_for([&] { return getsid(daemon) == daemon; }, 5000)) << "setsid did not take effect";
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  EXPECT_TRUE(wait_for([&] { return !testing::process_alive(daemon); }, 3000))
      << "the step's setsid process " << daemon << " outlived the interrupt";
  if (testing::process_alive(daemon)) kill(daemon, SIGKILL);
}

// Small things a user meets: --interval needs --watch; a folder or nothing given
// as --store is exit 2 saying what to give; a watched --json is JSON Lines; a
// running step's TIME counts its running attempt.
TEST(Cli, StatusAndStoreFlagsSayWhatIsWrongAndWatchJsonIsJsonLines) {
  TempDir d;
  // The step runs until the test says so ("go"), however slow the machine: the
  // watch must start while it runs.
  write_file(
      d / "p.yaml",
      "steps:\n  - {id: long, sh: 'echo twelve bytes; touch started; while [ ! -e go ]; do sleep 0.05; "
      "done'}\n");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "started"); }, 10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  auto live = nlohmann::json::parse(run_orch({"status", "--json"}, d.path()).out);
  EXPECT_GE(live["steps"][0]["duration_ms"].get<std::int64_t>(), 500) << live["steps"][0].dump();
  // Its running attempt too: time so far, and what its output file holds so far.
  const auto& attempt = live["steps"][0]["attempts"][0];
  EXPECT_EQ(attempt["status"], "running");
  EXPECT_GE(attempt["duration_ms"].get<std::int64_t>(), 500) << attempt.dump();
  EXPECT_EQ(attempt["stdout"]["bytes"], 13) << attempt.dump();
  std::thread finish([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    write_file(d / "go", "");
  });
  auto watched = run_orch({"status", "--watch", "--json", "--interval", "0.2"}, d.path());
  finish.join();
  EXPECT_EQ(watched.exit_code, 0) << watched.err;
  EXPECT_EQ(wait_exit(pid), 0);
  std::istringstream lines(watched.out);
  int documents = 0;
  for (std::string line; std::getline(lines, line); ++documents)
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_GE(documents, 2) << watched.out;
  auto interval = run_orch({"status", "--interval", "1"}, d.path());
  EXPECT_EQ(interval.exit_code, 2);
  EXPECT_NE(interval.err.find("--interval requires --watch"), std::string::npos) << interval.err;
  auto folder = run_orch({"runs", "--store", d.path().string()}, d.path());
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_NE(folder.err.find("is a folder: give the ledger's file in it"), std::string::npos) << folder.err;
  EXPECT_EQ(run_orch({"runs", "--store", ""}, d.path()).exit_code, 2);
}

// `status --watch` ends when the run does, not up to an --interval later.
TEST(Cli, WatchEndsWhenTheRunEndsNotAtTheNextRedraw) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: t, sh: 'sleep 1'}\n");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_GT(pid, 0);
  // Watch once the run is in the ledger (its folder under .orch/runs is made
  // before the run's row is committed).
  ASSERT_TRUE(wait_for([&] { return run_list(d.path()).size() == 1; }, 5000));
  const auto start = std::chrono::steady_clock::now();
  auto watch = run_orch({"status", "--watch", "--interval", "30"}, d.path());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(watch.exit_code, 0) << watch.out << watch.err;
  EXPECT_NE(watch.out.find("succeeded"), std::string::npos) << watch.out;
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(wait_exit(pid), 0);
}

// A watch ends as soon as its reader has gone (`| head -1`), not when the run
// does, and a SIGTERM ends it with 130 like any interrupted orch.
TEST(Cli, AWatchEndsWhenItsReaderGoesAndOnSigterm) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: t, sh: 'sleep 30'}\n");
  pid_t run = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_GT(run, 0);
  ASSERT_TRUE(wait_for([&] { return run_list(d.path()).size() == 1; }, 5000));
  const auto start = std::chrono::steady_clock::now();
  auto piped = run_command({"/bin/bash", "-c",
                            "\"$0\" status --watch --interval 0.1 | head -c 1 >/dev/null; "
                            "echo \"rc=${PIPESTATUS[0]}\"",
                            orch_binary()},
                           d.path(), {}, 25);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "it watched on";
  EXPECT_HAS(piped.out, "rc=0");
  EXPECT_EQ(piped.err, "");

  pid_t watch = spawn_orch({"status", "--watch", "--interval", "0.1"}, d.path(), d / "watch.txt");
  ASSERT_GT(watch, 0);
  ASSERT_TRUE(
      wait_for([&] { return read_file(d / "watch.txt").find("running") != std::string::npos; }, 5000));
  ::kill(watch, SIGTERM);
  EXPECT_EQ(wait_exit(watch), 130);
  ::kill(run, SIGINT);
  EXPECT_EQ(wait_exit(run), 130);
}

// A store that is not a regular file (/dev/null, a FIFO) is refused before SQLite
// opens it (which would make /dev/null-journal beside it); a new store's own
// folder is made, but not the folders above it (a mistyped path is not built).
TEST(Cli, AStoreMustBeARegularFileInAFolderThatIsThere) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: a, sh: 'true'}\n");
  ASSERT_EQ(mkfifo((d / "fifo").c_str(), 0600), 0);
  for (const std::string& store : {std::string("/dev/null"), (d / "fifo").string()}) {
    auto r = run_orch({"run", "p.yaml", "--store", store}, d.path());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--store " + store + " is not a regular file"), std::string::npos) << r.err;
    EXPECT_EQ(run_orch({"status", "--store", store}, d.path()).exit_code, 2);
  }
  EXPECT_FALSE(fs::exists(d / "fifo-journal"));
  auto deep = run_orch({"run", "p.yaml", "--store", "typo/ledger/orch.db"}, d.path());
  EXPECT_EQ(deep.exit_code, 2) << deep.err;
  EXPECT_NE(deep.err.find("--store typo/ledger/orch.db: the folder typo does not exist"), std::string::npos)
      << deep.err;
  EXPECT_FALSE(fs::exists(d / "typo"));
  auto one = run_orch({"run", "p.yaml", "--store", "ledger/orch.db"}, d.path());
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_TRUE(fs::exists(d / "ledger" / "orch.db"));
}

// Output that cannot be written is an error, not a silent success.
TEST(Cli, OutputThatCannotBeWrittenIsAnError) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: a, sh: 'echo hi'}\n");
  ASSERT_EQ(run_orch({"run", "p.yaml"}, d.path()).exit_code, 0);
  auto r = run_command({"/bin/sh", "-c", "exec \"$0\" runs > /dev/full", orch_binary()}, d.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("orch: cannot write the output: No space left on device"), std::string::npos) << r.err;
  // A reader that stops reading is not an error to report.
  auto piped = run_command(
      {"/bin/sh", "-c", "\"$0\" runs | true; echo \"rc=${PIPESTATUS:-x}\"", orch_binary()}, d.path());
  EXPECT_EQ(piped.err.find("cannot write"), std::string::npos) << piped.err;
}

// A ledger that cannot grow (a file-size limit here, a full disk elsewhere)
// ends the run with exit 1 and the reason: no SIGXFSZ, no hang, and no line
// printed for a step whose outcome the ledger does not hold.
TEST(Cli, ALedgerThatCannotGrowEndsTheRunWithoutAHangOrALine) {
  TempDir d;
  std::string plan = "steps:\n";
  for (int i = 0; i < 100; ++i) {
    plan += "  - {id: s" + std::to_string(i) + ", run: [printf, '" + std::string(3000, 'x') + "']";
    plan += i == 0 ? "}\n" : ", deps: [s" + std::to_string(i - 1) + "]}\n";
  }
  write_file(d / "p.yaml", plan);
  // 400 KiB: the commit that fails comes with attempts about to start (which
  // made the old code wait for them for ever, deaf to signals); 1000 KiB: later.
  for (const char* limit : {"400", "1000"}) {
    SCOPED_TRACE(std::string("ulimit -f ") + limit);
    fs::remove_all(d / ".orch");
    auto r = run_command(
        {"/bin/sh", "-c", std::string("ulimit -f ") + limit + " && exec timeout -s KILL 60 \"$0\" run p.yaml",
         orch_binary()},
        d.path());
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("orch.db: committing: "), std::string::npos) << r.err;
    // The commit that failed may have been the first, the run's own: then the
    // ledger holds no run, and no step done.
    auto listed = run_orch({"runs", "--json"}, d.path());
    ASSERT_EQ(listed.exit_code, 0) << "the ledger the run left cannot be read: " << listed.err;
    const auto runs = nlohmann::json::parse(listed.out);
    ASSERT_LE(runs.size(), 1u) << listed.out;
    const auto report =
        runs.empty() ? nlohmann::json() : run_report(d.path(), runs[0]["id"].get<std::string>());
    ASSERT_TRUE(runs.empty() || report.is_object()) << "orch status cannot read the run";
    const int done = runs.empty() ? 0 : steps_in(report, "done");
    EXPECT_LT(done, 100);
    int printed = 0;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("done")) continue;
      ++printed;
      const std::string id = line.substr(10, line.find(' ', 10) - 10);
      EXPECT_EQ(step_of(report, id)["status"], "done") << "printed as done, not done in the ledger: " << line;
    }
    EXPECT_EQ(printed, done) << r.out;
  }
}

// Each running attempt holds a few files; orch raises its soft limit on open
// files to the hard one, so a high -j under a low soft limit does not fail
// attempts that succeeded ("Too many open files").
TEST(Cli, AHighConcurrencyIsNotFailedByALowSoftLimitOnOpenFiles) {
  TempDir d;
  std::string plan = "steps:\n";
  for (int i = 0; i < 40; ++i)
    plan += "  - {id: s" + std::to_string(i) + ", sh: 'sleep 0.3; echo " + std::to_string(i) + "'}\n";
  write_file(d / "p.yaml", plan);
  auto r = run_command({"/bin/sh", "-c", "ulimit -Sn 48 && exec \"$0\" run p.yaml -j 40", orch_binary()},
                       d.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(steps_in(run_report(d.path()), "done"), 40);
}

// Under a hard limit too low for the -j asked for, the run goes as wide as the
// limit allows and says so (a concurrency_capped event), instead of failing steps
// with "Too many open files".
TEST(Cli, AConcurrencyTheOpenFilesLimitCannotHoldIsCappedNotFailed) {
  TempDir d;
  std::string plan = "steps:\n";
  for (int i = 0; i < 60; ++i) plan += "  - {id: s" + std::to_string(i) + ", sh: 'sleep 0.2'}\n";
  write_file(d / "p.yaml", plan);
  auto r = run_command({"/bin/sh", "-c", "ulimit -n 100 && exec \"$0\" run p.yaml -j 60", orch_binary()},
                       d.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(steps_in(run_report(d.path()), "done"), 60);
  auto capped = run_events(d.path(), "", "concurrency_capped");
  ASSERT_FALSE(capped.empty());
  EXPECT_EQ(capped[0]["data"]["used"], 6) << capped.dump();
}

TEST(Cli, AResumeWhoseWorkspaceIsGoneIsRefusedBeforeAnythingIsRecorded) {
  TempDir d;
  fs::create_directories(d / "ws");
  write_file(d / "p.yaml", "steps:\n  - {id: a, sh: 'exit 1', attempts: 1}\n");
  auto r = run_orch({"run", "p.yaml", "--workspace", "ws"}, d.path());
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const std::string id = run_id_in(r.err);
  const auto events = run_events(d.path(), id);
  ASSERT_FALSE(events.empty());
  fs::remove(d / "ws");
  auto resumed = run_orch({"resume", id}, d.path());
  EXPECT_EQ(resumed.exit_code, 2);
  EXPECT_NE(resumed.err.find("is not a folder any more: restore it, then resume"), std::string::npos)
      << resumed.err;
  EXPECT_EQ(run_events(d.path(), id), events);
}

// The wall time a run was driven is in its row at most a second late, even while
// one long step runs and nothing else is written: a resume after kill -9 goes on
// from it, so a crash does not hand the wall budget back.
// A plan stored by an orch that checked less (here: a plan version written into
// the ledger by hand) is refused on resume with what to do about it.
TEST(Cli, AStoredPlanThatNoLongerValidatesSaysToResumeWithReplan) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: a, sh: 'exit 1', attempts: 1}\n");
  auto r = run_orch({"run", "p.yaml"}, d.path());
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const std::string id = run_id_in(r.err);
  // No orch stores a plan that does not validate: it is written into the SQLite
  // file by hand, as an older orch would have left it (testing/sqlite_ledger.h).
  const std::string insert = "insert into plans values ('" + id +
                             "', 2, 'p.yaml', 'steps:\n  - {id: a, sh: x, env: {ORCH_P0: y}}\n', 0); "
                             "update runs set plan_version = 2";
  EXPECT_EQ(sqlite_ledger_exec(d / ".orch" / "orch.db", insert), "");
  auto resumed = run_orch({"resume", id}, d.path());
  EXPECT_EQ(resumed.exit_code, 2);
  EXPECT_NE(resumed.err.find("the plan stored with run " + id + " does not validate any more"),
            std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.err.find("orch resume " + id + " --replan PLAN"), std::string::npos) << resumed.err;
  write_file(d / "fixed.yaml", "steps:\n  - {id: a, sh: 'exit 0'}\n");
  EXPECT_EQ(run_orch({"resume", id, "--replan", "fixed.yaml"}, d.path()).exit_code, 0);
}

TEST(Cli, TheWallTimeDrivenBeforeAKillIsKeptForTheBudget) {
  TempDir d;
  write_file(d / "p.yaml", R"(budget: {wall: 60s}
steps:
  - {id: long, sh: 'echo $$ > long.pid; sleep 30'}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "long.pid"); }, 10000));
  // Driven for 2.5 s (a live run's time runs to now in `orch status`) ...
  ASSERT_TRUE(wait_for([&] { return driven_ms(run_report(d.path())) >= 2500; }, 10000))
      << run_report(d.path()).dump();
  kill(pid, SIGKILL);
  wait_exit(pid);
  // ... of which the run's row, all that is left of it now, holds at least one
  // second (what `orch status` says of a run no process drives).
  auto left = run_report(d.path());
  EXPECT_EQ(left["run"]["active"], false);
  EXPECT_GE(driven_ms(left), 1000) << left.dump();
  kill(-std::stoi(read_file(d / "long.pid")), SIGKILL);  // the step's process group
}

// An attempt a killed driver left running is closed by the resume with the time
// orch watched it (to the driver's last heartbeat), not 0 and not the downtime
// after; the step's duration and the run's wall time include it.
TEST(Cli, AnAttemptLeftByAKilledDriverKeepsTheTimeItWasWatched) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - id: long
    sh: 'if [ -f again ]; then exit 0; fi; echo out-so-far; echo err-so-far >&2; echo $$ > long.pid; exec sleep 30'
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "long.pid"); }, 10000));
  // Driven for 3 s: the idle driver's heartbeat (the run row, every second) has
  // gone by at least once more than a second after the attempt started.
  ASSERT_TRUE(wait_for([&] { return driven_ms(run_report(d.path())) >= 3000; }, 10000))
      << run_report(d.path()).dump();
  const auto ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const long long killed_at = ms();
  kill(pid, SIGKILL);
  wait_exit(pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // downtime: not the attempt's
  write_file(d / "again", "");
  const std::string id = run_id_in(read_file(d / "out.txt"));
  auto r = run_orch({"resume", id}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto report = run_report(d.path(), id);
  auto attempts = attempts_of(report, "long");
  ASSERT_FALSE(attempts.empty()) << report.dump();
  auto first = attempts[0];
  ASSERT_EQ(first["number"], 1);
  const std::int64_t started = epoch_ms(first["started_at"].get<std::string>());
  const std::int64_t watched = first["duration_ms"];
  EXPECT_EQ(first["status"], "interrupted");
  EXPECT_GE(watched, 1000);
  EXPECT_LE(watched, killed_at - started);
  EXPECT_GE(epoch_ms(first["finished_at"].get<std::string>()), killed_at + 1500);
  EXPECT_GE(step_of(report, "long")["duration_ms"].get<std::int64_t>(), watched);
  EXPECT_GE(driven_ms(report), watched);
  EXPECT_LT(driven_ms(report), watched + 1500);
  // What it had printed is in its row too, not only in its files.
  EXPECT_EQ(first["stdout"]["bytes"], 11);
  EXPECT_EQ(first["stderr"]["bytes"], 11);
  auto logs = nlohmann::json::parse(run_orch({"logs", id, "long", "--attempt", "1", "--json"}, d.path()).out,
                                    nullptr, false);
  EXPECT_EQ(logs["output_tail"], "out-so-far\nerr-so-far\n") << logs.dump();
}

TEST(Cli, TwoRunsShareAStoreAndOneRunCannotBeDrivenTwice) {
  TempDir d;
  write_file(d / "p.yaml", R"(concurrency: 4
steps:
  - {id: a, run: [sleep, "1"]}
  - {id: b, run: [sleep, "1"]}
  - {id: c, deps: [a, b], run: [sleep, "1"]}
)");
  pid_t one = spawn_orch({"run", "p.yaml"}, d.path(), d / "one.txt");
  pid_t two = spawn_orch({"run", "p.yaml"}, d.path(), d / "two.txt");
  // While they run, status reads the store without blocking them.
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / ".orch" / "orch.db"); }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto runs = run_orch({"runs", "--json"}, d.path(), {}, 5);
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_EQ(wait_exit(one), 0) << read_file(d / "one.txt");
  EXPECT_EQ(wait_exit(two), 0) << read_file(d / "two.txt");
  EXPECT_EQ(runs_where(d.path(), "status", "succeeded"), 2);

  write_file(d / "slow.yaml", "steps:\n  - {id: z, run: [sleep, \"3\"]}\n");
  pid_t three = spawn_orch({"run", "slow.yaml"}, d.path(), d / "three.txt");
  ASSERT_TRUE(
      wait_for([&] { return read_file(d / "three.txt").find("orch: run ") != std::string::npos; }, 5000));
  std::string out = read_file(d / "three.txt");
  std::string id = run_id_in(out);
  auto again = run_orch({"resume", id}, d.path());
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already being driven"), std::string::npos) << again.err;
  EXPECT_EQ(wait_exit(three), 0);
}

TEST(Cli, CancelStopsALiveRunFromAnotherProcess) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - {id: long, run: [sleep, "60"]}
  - {id: next, deps: [long], run: ["true"]}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(
      wait_for([&] { return read_file(d / "out.txt").find("orch: run ") != std::string::npos; }, 5000));
  std::string out = read_file(d / "out.txt");
  std::string id = run_id_in(out);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto c = run_orch({"cancel", id}, d.path());
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("cancelled"), std::string::npos) << c.out;
  EXPECT_EQ(wait_exit(pid), 130);
  auto again = run_orch({"cancel", id}, d.path());
  EXPECT_EQ(again.exit_code, 2);
}

// A step waiting out its retry_delay says so in `orch status`, with why.
TEST(Cli, AStepWaitingToRetrySaysWhyInStatus) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - {id: flaky, sh: 'if [ -f second ]; then exit 0; fi; touch second; echo not yet >&2; exit 3', attempts: 2, retry_delay: 30s}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return run_events(d.path(), "", "retry_scheduled").size() == 1; }, 10000));
  auto st = nlohmann::json::parse(run_orch({"status", "--json"}, d.path()).out);
  EXPECT_EQ(st["steps"][0]["status"], "pending");
  EXPECT_EQ(st["steps"][0]["reason"],
            "attempt 1 failed, attempt 2 after 30.0s: exit_zero: exited with code 3; output: not yet")
      << st["steps"][0].dump();
  kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
}

// A run stopped by Ctrl-C, then cancelled: the step that had run is cancelled
// (not "skipped", which would say it never started), the one that never ran skipped.
TEST(Cli, CancellingAnInterruptedRunSaysWhichStepsHadRun) {
  TempDir d;
  write_file(d / "p.yaml", R"(steps:
  - {id: long, sh: 'touch started; exec sleep 30'}
  - {id: later, deps: [long], sh: 'true'}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "started"); }, 10000));
  kill(pid, SIGINT);
  ASSERT_EQ(wait_exit(pid), 130);
  const std::string id = run_id_in(read_file(d / "out.txt"));
  auto c = run_orch({"cancel", id}, d.path());
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  auto report = run_report(d.path(), id);
  const auto status_and_reason = [&](const std::string& step) {
    auto s = step_of(report, step);
    return s.is_object() ? s["status"].get<std::string>() + ": " + s["reason"].get<std::string>()
                         : "(no step)";
  };
  EXPECT_EQ(status_and_reason("long"), "cancelled: cancelled: run cancelled after attempt 1");
  EXPECT_EQ(status_and_reason("later"), "skipped: not started: run cancelled");
}

TEST(Cli, CancelARunWhoseDriverWasKilled) {
  TempDir d;
  write_file(d / "notes.txt", "before\n");
  write_file(d / "p.yaml", R"(steps:
  - {id: long, writes: [notes.txt], sh: 'echo half-written > notes.txt; echo $$ > long.pid; sleep 60'}
  - {id: next, deps: [long], run: ["true"]}
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "long.pid"); }, 5000));
  std::string out = read_file(d / "out.txt");
  std::string id = run_id_in(out);
  kill(pid, SIGKILL);
  wait_exit(pid);
  pid_t orphan = std::stoi(read_file(d / "long.pid"));
  // The run sits dead a while before it is cancelled: that time was not driven.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto c = run_orch({"cancel", id}, d.path());
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_TRUE(wait_for([&] { return !alive(orphan); }, 2000)) << "orphan survived cancel";
  auto st = nlohmann::json::parse(run_orch({"status", id, "--json"}, d.path()).out);
  EXPECT_EQ(st["run"]["status"], "cancelled");
  EXPECT_EQ(st["steps"][0]["status"], "cancelled");
  EXPECT_EQ(st["steps"][0]["attempts"][0]["status"], "interrupted");
  EXPECT_EQ(st["steps"][1]["status"], "skipped");
  EXPECT_GE(st["run"]["elapsed_ms"].get<std::int64_t>(), 1500);
  EXPECT_LT(st["budget"]["spent"]["wall_ms"].get<std::int64_t>(),
            st["run"]["elapsed_ms"].get<std::int64_t>() - 1000);
  const std::string table = run_orch({"status", id}, d.path()).out;
  EXPECT_NE(table.find(fmt::format(" (driven for {})",
                                   human_duration(st["budget"]["spent"]["wall_ms"].get<std::int64_t>()))),
            std::string::npos)
      << table;
  EXPECT_EQ(read_file(d / "notes.txt"), "before\n") << "the interrupted step's writes: were not restored";
  for (const auto& e : fs::recursive_directory_iterator(d / ".orch" / "runs"))
    EXPECT_FALSE(e.path().filename().string().ends_with(".snapshot"))
        << "a restored snapshot was left: " << e.path();
}

// `orch cancel` of a run whose driver died holds the run's lock for a moment;
// a resume that starts then is refused as cancelled, not told that the cancel
// is "another orch process" driving the run.
TEST(Cli, AResumeThatMeetsACancelInProgressSaysTheRunWasCancelled) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: long, sh: 'echo $$ > long.pid; sleep 60'}\n");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "long.pid"); }, 5000));
  const std::string id = run_id_in(read_file(d / "out.txt"));
  kill(pid, SIGKILL);
  wait_exit(pid);
  // What the cancel does, by hand and slowly: it holds the lock, records the run
  // cancelled, and lets the lock go.
  const fs::path lock = d / ".orch" / "locks" / (id + ".lock");
  int fd = open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  pid_t resume = spawn_orch({"resume", id}, d.path(), d / "resume.txt");
  // The cancel must land after the resume read the run's status (running) and
  // while it waits on the lock: the resume opens the lock file only after that
  // read, and keeps it open while it looks for the holder's pid. (A fixed delay
  // is not enough: an ASan orch on a loaded machine can take longer to start,
  // read the run as already cancelled, and resume it.)
  const std::string proc = "/proc/" + std::to_string(resume);
  const auto resume_opened_the_lock = [&] {
    // Until its exec, the child still has this test's own (close-on-exec) fd of the lock.
    if (read_file(proc + "/cmdline").find(id) == std::string::npos) return false;
    std::error_code ec;
    fs::directory_iterator it(proc + "/fd", ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code ignored;
      if (fs::read_symlink(it->path(), ignored).filename() == lock.filename()) return true;
    }
    return false;
  };
  ASSERT_TRUE(wait_for(resume_opened_the_lock, 10000)) << read_file(d / "resume.txt");
  // The cancel's write, at this exact moment: no command makes it then, so it is
  // made in the SQLite file by hand (testing/sqlite_ledger.h).
  EXPECT_EQ(sqlite_ledger_exec(d / ".orch" / "orch.db", "update runs set status = 'cancelled'"), "");
  close(fd);
  EXPECT_EQ(wait_exit(resume), 2);
  const std::string said = read_file(d / "resume.txt");
  EXPECT_NE(said.find("was cancelled while this resume was starting"), std::string::npos) << said;
  EXPECT_EQ(said.find("driven by another orch process"), std::string::npos) << said;
  kill(-std::stoi(read_file(d / "long.pid")), SIGKILL);
}

// A damaged ledger is refused and left exactly as it was, with its WAL: the
// refusing process's close used to checkpoint the WAL into the damaged file and
// delete it, destroying what a repair could have used.
TEST(Cli, ADamagedLedgerIsRefusedAndLeftUntouched) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: a, run: [\"true\"]}\n");
  ASSERT_EQ(run_orch({"run", "p.yaml"}, d.path()).exit_code, 0);
  const fs::path db = d / ".orch/orch.db";
  const std::string wal = read_file(db.string() + "-wal");
  ASSERT_GT(wal.size(), 4096u) << "the run left no WAL to test with";
  fs::resize_file(db, 100);  // its header and nothing else
  for (const char* command : {"runs", "status"}) {
    auto r = run_orch({command}, d.path());
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(db.string()), std::string::npos) << r.err;
  }
  EXPECT_EQ(fs::file_size(db), 100u);
  ASSERT_TRUE(fs::exists(db.string() + "-wal"));
  EXPECT_EQ(read_file(db.string() + "-wal"), wal);
}

// Resuming a run that already succeeded has nothing to do: refused, and the
// ledger (when it finished, its events) is left as it was.
TEST(Cli, ResumingARunThatSucceededIsRefusedAndChangesNothing) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: a, run: [\"true\"]}\n");
  auto first = run_orch({"run", "p.yaml", "--json"}, d.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string id = nlohmann::json::parse(first.out)["run"]["id"];
  const std::string before = run_orch({"status", id, "--json"}, d.path()).out;
  auto r = run_orch({"resume", id}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("already succeeded: nothing to resume"), std::string::npos) << r.err;
  EXPECT_EQ(run_orch({"status", id, "--json"}, d.path()).out, before);
}

// kill -9 between two attempts of a step: the resumed run keeps the attempts the
// step has used; only the interrupted one is free. (A resume used to give every
// unfinished step a fresh set, so kills between retries granted unlimited retries.)
TEST(Cli, AKillBetweenRetriesDoesNotGiveTheStepMoreAttempts) {
  TempDir d;
  // Attempt 1 fails; attempt 2 waits to be killed; every later attempt fails.
  write_file(d / "p.yaml", R"(defaults: {retry_delay: 10ms}
steps:
  - id: s
    attempts: 2
    sh: 'echo "[$(echo "$ORCH_PREVIOUS_FAILURE" | head -n 1)]" >> told.txt; echo try >> log.txt; n=$(wc -l < log.txt); if [ $n = 2 ]; then echo $$ > waiting.pid; sleep 60; fi; exit 1'
)");
  pid_t pid = spawn_orch({"run", "p.yaml"}, d.path(), d / "out.txt");
  ASSERT_TRUE(wait_for([&] { return fs::exists(d / "waiting.pid"); }, 5000));
  std::string out = read_file(d / "out.txt");
  std::string id = run_id_in(out);
  kill(pid, SIGKILL);
  wait_exit(pid);
  kill(std::stoi(read_file(d / "waiting.pid")), SIGKILL);  // the orphaned attempt 2
  auto r = run_orch({"resume", id, "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto report = nlohmann::json::parse(r.out);
  const auto& attempts = report["steps"][0]["attempts"];
  ASSERT_EQ(attempts.size(), 3u) << attempts.dump();
  EXPECT_EQ(attempts[0]["status"], "failed");
  EXPECT_EQ(attempts[1]["status"], "interrupted");
  EXPECT_EQ(attempts[2]["status"], "failed");
  // Two counted attempts in all, as `attempts: 2` allows; the log has three lines.
  EXPECT_EQ(read_file(d / "log.txt"), "try\ntry\ntry\n");
  // The attempt after the resume is told why attempt 1 failed, as attempt 2 was.
  EXPECT_EQ(read_file(d / "told.txt"),
            "[]\n[exit_zero: exited with code 1]\n[exit_zero: exited with code 1]\n");
}

}  // namespace
}  // namespace orch

namespace orch {
namespace {

using orch::testing::run_orch;
using orch::testing::TempDir;
using orch::testing::write_file;

TEST(CliModels, AnLlmStepWithoutAModelsFileIsInvalid) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: ask, executor: llm, inputs: {prompt: hi}}\n");
  auto r = run_orch({"validate", "p.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("p.yaml:2: step 'ask': no models are configured: pass --models FILE"),
            std::string::npos)
      << r.err;
}

TEST(CliModels, AModelsFileWithProblemsIsRefusedWithEveryProblem) {
  TempDir d;
  write_file(d / "p.yaml", "steps:\n  - {id: ask, executor: llm, inputs: {prompt: hi}}\n");
  write_file(d / "models.yaml", R"(providers:
  local: {api: openai, base_url: "http://127.0.0.1:9/v1", api_key_env: "not a name", max_response: 12parsecs}
  other: {api: openai, base_url: "http://127.0.0.1:9/v1", max_response: 0}
models:
  fast: {provider: loca, model: m, max_tokens: 0}
default_model: fats
)");
  auto r = run_orch({"run", "p.yaml", "--models", "models.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const char* fragment :
       {"models.yaml: providers.local.api_key_env: must be the NAME of an environment variable",
        "models.yaml: models.fast.provider: no provider 'loca' (did you mean 'local'?)",
        "models.yaml: models.fast.max_tokens: must be a number >= 1",
        "models.yaml: providers.local.max_response: ",
        "models.yaml: providers.other.max_response: must be larger than 0",
        "models.yaml: default_model: no model 'fats' (did you mean 'fast'?)"})
    EXPECT_NE(r.err.find(fragment), std::string::npos) << fragment << "\n" << r.err;
  EXPECT_FALSE(std::filesystem::exists(d / ".orch" / "orch.db")) << "nothing may be recorded";
}

TEST(CliModels, TheDefaultModelsFileIsFoundAndChecksTheModelName) {
  TempDir d;
  std::filesystem::create_directories(d / ".orch");
  write_file(d / ".orch" / "models.yaml", R"(providers:
  local: {api: openai, base_url: "http://127.0.0.1:9/v1"}
models:
  fast: {provider: local, model: m}
)");
  write_file(d / "p.yaml", "steps:\n  - {id: ask, executor: llm:fsat, inputs: {prompt: hi}}\n");
  auto r = run_orch({"validate", "p.yaml"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no model 'fsat' in the models file (models: fast)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace orch
