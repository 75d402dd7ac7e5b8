// Every command that has --json, run on small real inputs in one workspace, its
// output checked against its published schema (schemas/*.schema.json): a
// document that drifts from its schema fails here. Then the binary is asked which
// commands take --json, so that a new one without a check here fails too.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/testing.h"
#include "util/json_schema.h"

// A namespace of its own: the CLI tests are compiled as unity builds, several files in one.
namespace orch::json_schema_test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using orch::testing::CommandResult;
using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;

// The commands run with --json so far ("task plan", "review --list", ...), for
// the coverage check at the end.
std::set<std::string>& covered() {
  static std::set<std::string> names;
  return names;
}

const JsonSchema* schema_named(const std::string& name) {
  static std::map<std::string, JsonSchema> loaded;
  if (auto it = loaded.find(name); it != loaded.end()) return &it->second;
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / name).string());
  EXPECT_TRUE(schema) << name << ": " << schema.error().message;
  if (!schema) return nullptr;
  return &loaded.emplace(name, std::move(*schema)).first->second;
}

void expect_matches(const json& doc, const std::string& schema, const std::string& what) {
  const JsonSchema* s = schema_named(schema);
  if (s == nullptr) return;
  const auto problems = s->validate(doc);
  std::string all;
  for (const auto& p : problems) all += "  " + p + "\n";
  EXPECT_TRUE(problems.empty()) << what << " does not follow schemas/" << schema << ":\n"
                                << all << doc.dump(2);
}

// Runs `orch ARGS` in `cwd`, expects exit `code` and a JSON document on stdout
// that follows `schema`; returns the document. `command` names it for coverage.
json checked(const std::string& command, const std::vector<std::string>& args, const fs::path& cwd, int code,
             const std::string& schema, const std::map<std::string, std::string>& env = {}) {
  covered().insert(command);
  const CommandResult r = run_orch(args, cwd, env);
  std::string line = "orch";
  for (const auto& a : args) line += " " + a;
  EXPECT_EQ(r.exit_code, code) << line << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err;
  json doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << line << ": stdout is not one JSON document:\n" << r.out << r.err;
  if (doc.is_discarded()) return json();
  expect_matches(doc, schema, line);
  return doc;
}

// A JSON array whose every element follows `schema` (orch task list).
json checked_each(const std::string& command, const std::vector<std::string>& args, const fs::path& cwd,
                  const std::string& schema) {
  covered().insert(command);
  const CommandResult r = run_orch(args, cwd);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  json doc = json::parse(r.out, nullptr, false);
  EXPECT_TRUE(doc.is_array()) << r.out << r.err;
  if (!doc.is_array()) return json();
  for (const auto& item : doc) expect_matches(item, schema, command + " (an element)");
  return doc;
}

// The plan: greet writes to both streams, bytes prints bytes that are not UTF-8,
// note is a builtin (no streams), deploy is high risk and waits for an approval.
const char* const kPlan = R"(name: json-check
steps:
  - id: greet
    sh: 'echo hello; echo oops >&2'
  - id: bytes
    sh: 'printf "caf\351\n"'
  - id: note
    executor: builtin:echo
    inputs: {text: noted}
  - id: deploy
    deps: [greet]
    risk: high
    run: [echo, deployed]
)";

void check_runs_and_the_ledger() {
  TempDir d;
  write_file(d / "plan.yaml", kPlan);
  write_file(d / "bad.yaml", "steps:\n  - id: a\n    run: [true]\n    deps: [nope]\n");
  write_file(d / "slow.yaml", "steps:\n  - id: wait\n    run: [sleep, '30']\n");

  json v = checked("validate", {"validate", "plan.yaml", "--json"}, d.path(), 0, "validate.schema.json");
  EXPECT_EQ(v["valid"], true);
  v = checked("validate", {"validate", "bad.yaml", "--json"}, d.path(), 2, "validate.schema.json");
  EXPECT_EQ(v["valid"], false);
  EXPECT_FALSE(v["errors"].empty());
  checked("validate", {"validate", "missing.yaml", "--json"}, d.path(), 2, "validate.schema.json");

  // The high-risk step pauses the run (no terminal, no --approve): exit 3.
  const json paused = checked("run", {"run", "plan.yaml", "--json"}, d.path(), 3, "run-report.schema.json");
  const std::string id = paused["run"]["id"];
  EXPECT_EQ(paused["run"]["status"], "awaiting_approval");
  checked("status", {"status", id, "--json"}, d.path(), 0, "run-report.schema.json");
  const json approved =
      checked("approve", {"approve", id, "deploy", "--json"}, d.path(), 0, "approve.schema.json");
  EXPECT_EQ(approved["risk"], "high");
  EXPECT_EQ(approved["resume"], "orch resume " + id);
  const json resumed = checked("resume", {"resume", id, "--json"}, d.path(), 0, "run-report.schema.json");
  EXPECT_EQ(resumed["run"]["status"], "succeeded");
  // With each step's result (only when asked: results can be large).
  const json results =
      checked("status", {"status", id, "--json", "--results"}, d.path(), 0, "run-report.schema.json");
  for (const auto& s : results["steps"]) EXPECT_TRUE(s.contains("result")) << s.dump();
  for (const auto& s : resumed["steps"]) EXPECT_FALSE(s.contains("result")) << s.dump();

  const json events = checked("events", {"events", id, "--json"}, d.path(), 0, "events.schema.json");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front()["kind"], "run_started");
  EXPECT_EQ(events.back()["kind"], "run_finished");
  const json greeted = checked("events", {"events", id, "--kind", "step_done", "--step", "greet", "--json"},
                               d.path(), 0, "events.schema.json");
  ASSERT_EQ(greeted.size(), 1u) << greeted.dump();
  EXPECT_EQ(greeted[0]["step"], "greet");
  EXPECT_EQ(greeted[0]["attempt"], 1);
  const json none = checked("events", {"events", id, "--after", events.back()["seq"].dump(), "--json"},
                            d.path(), 0, "events.schema.json");
  EXPECT_TRUE(none.empty()) << none.dump();
  // Watched, a run that has ended: one report, on one line.
  checked("status", {"status", id, "--watch", "--json"}, d.path(), 0, "run-report.schema.json");

  json out = checked("logs", {"logs", id, "greet", "--json"}, d.path(), 0, "logs.schema.json");
  EXPECT_EQ(out["text"], "hello\n");
  EXPECT_EQ(out["source"], "file");
  EXPECT_EQ(out["lossy"], false);
  out = checked("logs", {"logs", id, "greet", "--stderr", "--attempt", "1", "--json"}, d.path(), 0,
                "logs.schema.json");
  EXPECT_EQ(out["text"], "oops\n");
  EXPECT_EQ(out["stream"], "stderr");
  out = checked("logs", {"logs", id, "bytes", "--json"}, d.path(), 0, "logs.schema.json");
  EXPECT_EQ(out["text_bytes"], 5);
  EXPECT_EQ(out["lossy"], true);
  out = checked("logs", {"logs", id, "note", "--json"}, d.path(), 0, "logs.schema.json");
  EXPECT_EQ(out["source"], "none");
  EXPECT_EQ(out["text"], "");

  // A run planned from a request with no model: one builtin step.
  checked("run", {"run", "--request", "say hello", "--executor", "builtin:echo", "--json"}, d.path(), 0,
          "run-report.schema.json");

  // A live run, cancelled from here.
  const fs::path log = d / "slow.log";
  const pid_t driver = orch::testing::spawn_orch({"run", "slow.yaml"}, d.path(), log);
  std::string slow;
  ASSERT_TRUE(orch::testing::wait_for(
      [&] {
        slow = orch::testing::run_id_in(orch::testing::read_file(log));
        if (slow.empty()) return false;
        auto s = run_orch({"status", slow, "--json"}, d.path());
        auto doc = json::parse(s.out, nullptr, false);
        return !doc.is_discarded() && !doc["steps"].empty() && doc["steps"][0]["status"] == "running";
      },
      10000));
  const json cancelled = checked("cancel", {"cancel", slow, "--json"}, d.path(), 0, "cancel.schema.json");
  EXPECT_EQ(cancelled["status"], "cancelled");
  EXPECT_EQ(cancelled["stopped"], true);
  EXPECT_EQ(orch::testing::wait_exit(driver), 130);

  const json runs = checked("runs", {"runs", "--json"}, d.path(), 0, "runs.schema.json");
  EXPECT_EQ(runs.size(), 3u);
}

void check_plan_chain_route_and_budget() {
  TempDir d;
  // The models file makes the template's llm steps valid; no call is made.
  write_file(d / "models.yaml",
             "providers:\n  fake: {api: openai, base_url: \"http://127.0.0.1:9/v1\", api_key_env: "
             "ORCH_JSON_TEST_KEY, timeout: 10s}\nmodels:\n  planner: {provider: fake, model: plan-test}\n"
             "default_model: planner\n");
  json p = checked("plan", {"plan", "say hello", "--executor", "builtin:echo", "--json"}, d.path(), 0,
                   "plan-result.schema.json");
  EXPECT_EQ(p["path"], "single_step");
  p = checked(
      "plan",
      {"plan", "Fix the failing tests, then run the linter and commit", "--models", "models.yaml", "--json"},
      d.path(), 0, "plan-result.schema.json");
  EXPECT_EQ(p["path"], "template");
  p = checked("plan",
              {"plan", "research these five HTTP libraries and write me a comparison", "--explain", "--json"},
              d.path(), 0, "plan-explain.schema.json");
  EXPECT_EQ(p["way"], "template");
  checked("plan", {"plan", "explain this step by step", "--explain", "--json"}, d.path(), 0,
          "plan-explain.schema.json");

  fs::copy(source_dir() / "tests" / "data" / "chain-tools", d / "tools", fs::copy_options::recursive);
  const std::string steps = R"([{"executor": "tool:say", "inputs": {"command": "run", "text": "hi"}}])";
  const json chain =
      checked("chain", {"chain", "--steps", steps, "--registry", "tools/registry.yml", "--json"}, d.path(), 0,
              "skill-output.schema.json");
  EXPECT_EQ(chain["status"], "success");
  checked("chain", {"chain", "--report", chain["run_id"], "--registry", "tools/registry.yml", "--json"},
          d.path(), 0, "skill-output.schema.json");
  checked("chain", {"chain", "--steps", steps, "--registry", "tools/registry.yml", "--dry-run", "--json"},
          d.path(), 0, "skill-output.schema.json");

  checked("route", {"route", "list the open pull requests", "--json"}, d.path(), 0,
          "skill-output.schema.json");
  checked("route", {"route", "the thing", "--json"}, d.path(), 3, "skill-output.schema.json");

  // orch tools list: a CLI tool, and an MCP server (the SDK-built fixture of tests/mcp,
  // whose tools/list comes in pages) started to list its tools.
  write_file(d / "mcp-registry.yml",
             fmt::format(
                 "tools:\n  fx:\n    kind: mcp\n    command: [node, {}]\n    env: {{FIXTURE_STATE_DIR: {}}}\n"
                 "    status: prod_ready\n    safe_for_agents: true\n    risk: low\n"
                 "  say:\n    command: [/bin/echo]\n    status: prod_ready\n    risk: low\n"
                 "    commands:\n      run: {{output_schema: {{}}, capabilities: [say]}}\n",
                 (source_dir() / "tests" / "mcp" / "tool_fixture.mjs").string(), d.path().string()));
  const json listed = checked("tools list", {"tools", "list", "--registry", "mcp-registry.yml", "--json"},
                              d.path(), 0, "tools-list.schema.json");
  ASSERT_EQ(listed["tools"].size(), 2u) << listed.dump(2);
  EXPECT_EQ(listed["tools"][0]["kind"], "mcp");
  EXPECT_EQ(listed["tools"][0]["tools"].size(), 7u) << "every page of the fixture's tools/list";
  EXPECT_EQ(listed["tools"][1]["commands"][0]["name"], "run");

  json b = checked("budget-check",
                   {"budget-check", "--intent", "query", "--input", "how many runs failed?", "--json"},
                   d.path(), 0, "budget-check.schema.json");
  EXPECT_EQ(b["input_exceeds_budget"], false);
  b = checked("budget-check",
              {"budget-check", "--intent", "query", "--input", std::string(4000, 'x'), "--json"}, d.path(), 4,
              "budget-check.schema.json");
  EXPECT_EQ(b["input_exceeds_budget"], true);
}

// A checklist of one command for every intent (.orch/route/verify.yaml), which
// the scripted worker below satisfies.
void write_checklists(const TempDir& d) {
  std::string text = "version: 1\nchecklists:\n";
  for (const char* intent : {"security", "deployment", "architecture", "bug_fix", "performance", "feature",
                             "quick_fix", "documentation", "research"})
    text += fmt::format("  {}:\n    - {{check: \"the fix is in place\", command: \"test -f fixed.txt\"}}\n",
                        intent);
  write_file(d / ".orch" / "route" / "verify.yaml", text);
}

void check_task_and_memory() {
  TempDir d;
  write_checklists(d);
  const std::string request = "fix the crash in the date parser";
  json t = checked("task plan", {"task", "plan", request, "--json"}, d.path(), 0, "trace.schema.json");
  const std::string id = t["id"];
  checked("task plan", {"task", "plan", "the thing with the widget", "--json"}, d.path(), 3,
          "task-question.schema.json");
  write_file(d / "fixed.txt", "yes\n");
  checked("task log", {"task", "log", id, "--state", "EXECUTE", "--note", "patched", "--json"}, d.path(), 0,
          "trace.schema.json");
  checked("task log", {"task", "log", id, "--state", "VERIFY", "--json"}, d.path(), 0, "trace.schema.json");
  checked("task log", {"task", "log", id, "--state", "SUMMARIZE", "--json"}, d.path(), 0,
          "trace.schema.json");
  t = checked("task close",
              {"task", "close", id, "--result", "pass", "--summary", "parse_day counted from 0", "--json"},
              d.path(), 0, "trace.schema.json");
  EXPECT_EQ(t["state"], "DONE");
  checked("task show", {"task", "show", id, "--json"}, d.path(), 0, "trace.schema.json");

  // task run, with a worker that answers at once.
  write_file(d / "agent.sh", "#!/bin/sh\necho \"did: $(printf '%s' \"$1\" | head -n 1)\"\n");
  fs::permissions(d / "agent.sh", fs::perms::owner_all);
  write_file(
      d / ".orch" / "workers.yaml",
      "workers:\n  scripted:\n    argv: [./agent.sh, '{prompt}']\n    output: text\n    timeout: 30s\n");
  t = checked("task run",
              {"task", "run", "fix the overflow in the name copier", "--worker", "scripted", "--json"},
              d.path(), 0, "trace.schema.json");
  EXPECT_EQ(t["state"], "DONE");
  checked("task run", {"task", "run", "the thing with the widget", "--worker", "scripted", "--json"},
          d.path(), 3, "task-question.schema.json");

  // One open trace, idle for longer than --older-than: abandoned.
  const std::string open = checked("task plan", {"task", "plan", "document the date parser", "--json"},
                                   d.path(), 0, "trace.schema.json")["id"];
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const json gc = checked("task gc", {"task", "gc", "--older-than", "10ms", "--json"}, d.path(), 0,
                          "task-gc.schema.json");
  EXPECT_EQ(gc["abandoned"], json::array({open}));
  EXPECT_EQ(checked_each("task list", {"task", "list", "--json"}, d.path(), "trace.schema.json").size(), 3u);
  checked_each("task list", {"task", "list", "--open", "--json"}, d.path(), "trace.schema.json");

  const json similar = checked("similarity", {"similarity", "date parser crash", "--json"}, d.path(), 0,
                               "similarity.schema.json");
  EXPECT_FALSE(similar["matches"].empty());
  const json hits = checked("memory search", {"memory", "search", "parser", "--json"}, d.path(), 0,
                            "memory-search.schema.json");
  EXPECT_FALSE(hits["hits"].empty());
  checked("memory harvest", {"memory", "harvest", "--json"}, d.path(), 0, "memory-harvest.schema.json");
  checked("memory reindex", {"memory", "reindex", "--json"}, d.path(), 0, "memory-reindex.schema.json");
  // A workspace with no memory yet: no matches, and the same documents.
  TempDir empty;
  checked("similarity", {"similarity", "anything", "--json"}, empty.path(), 0, "similarity.schema.json");
  checked("memory search", {"memory", "search", "anything", "--json"}, empty.path(), 0,
          "memory-search.schema.json");
}

// orch run --detach (no workers): the run recorded, its driver an `orch resume`
// in the background that runs it to its end, its output in the log it names.
void check_detached_run() {
  TempDir d;
  write_file(d / "plan.yaml", "steps:\n  - id: a\n    sh: echo detached\n");
  const json doc =
      checked("run", {"run", "plan.yaml", "--detach", "--json"}, d.path(), 0, "run-submitted.schema.json");
  EXPECT_EQ(doc["dispatch"], "local");
  EXPECT_GT(doc.value("driver_pid", 0), 0);
  const std::string id = doc.value("run_id", "");
  json status;
  EXPECT_TRUE(orch::testing::wait_for(
      [&] {
        status = json::parse(run_orch({"status", id, "--json"}, d.path()).out, nullptr, false);
        return !status.is_discarded() && status["run"]["status"] == "succeeded";
      },
      20000))
      << status.dump(2);
  EXPECT_NE(read_file(doc.value("log", "")).find("succeeded"), std::string::npos);
  EXPECT_EQ(run_orch({"logs", id, "a"}, d.path()).out, "detached\n");
}

void check_review() {
  TempDir d;
  write_file(d / "doc.md", "# Parser\n\nThe function parse_args reads argv[1] without checking argc.\n");
  write_file(d / "lenses" / "correctness.md", "Review for {{lens}} errors.\n");
  write_file(d / "scenario.json",
             R"({"reviewer": {"correctness": {"default": {"findings": [], "scorecard": {}}}}})");
  write_file(d / "workers.yaml",
             fmt::format("workers:\n  fake:\n    argv: [python3, {}, {}, \"{{prompt}}\"]\n    output: text\n",
                         (source_dir() / "tests" / "agents" / "fake_reviewer.py").string(),
                         (d / "scenario.json").string()));
  write_file(d / "RUN.yaml",
             "name: parser doc\nartifacts: [doc.md]\nworkers: workers.yaml\nmax_rounds: 1\ndry_rounds: 1\n"
             "lenses:\n  - {name: correctness, prompt: lenses/correctness.md, worker: fake}\n");
  checked("review --list", {"review", "--list", "--json"}, d.path(), 0,
          "review-list.schema.json");  // no ledger
  const json doc = checked("review", {"review", "--config", "RUN.yaml", "--yes", "--json"}, d.path(), 0,
                           "review-report.schema.json");
  EXPECT_EQ(doc["verdict"], "PASS");
  const json list =
      checked("review --list", {"review", "--list", "--json"}, d.path(), 0, "review-list.schema.json");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["id"], doc["id"]);
  checked("review --show", {"review", "--show", doc["id"], "--json"}, d.path(), 0,
          "review-report.schema.json");
}

// orch cycle on a one-item project: the dry run, the run, status, show (the run
// and one cycle), audit and list.
void check_cycle() {
  TempDir d;
  write_file(d / "status.yaml", "- {id: a, file: a.txt, state: todo}\n");
  write_file(d / "a.txt", "start\n");
  write_file(d / "cycle.yaml", R"(status: {file: status.yaml}
lifecycle:
  states: [todo, done]
  stages:
    finish:
      move: todo -> done
      worker: {command: 'echo a-done >> "$ORCH_CYCLE_FILE"'}
      gate: grep -qx a-done {file}
)");
  checked("cycle list", {"cycle", "list", "--json"}, d.path(), 0, "cycle-list.schema.json");  // no ledger
  checked("cycle run", {"cycle", "run", "cycle.yaml", "--dry-run", "--json"}, d.path(), 0,
          "cycle-dry-run.schema.json");
  const json doc =
      checked("cycle run", {"cycle", "run", "cycle.yaml", "--json"}, d.path(), 0, "cycle-report.schema.json");
  const std::string run = doc.value("id", "");
  checked("cycle status", {"cycle", "status", "--json"}, d.path(), 0, "cycle-status.schema.json");
  checked("cycle show", {"cycle", "show", run, "--json"}, d.path(), 0, "cycle-report.schema.json");
  checked("cycle show", {"cycle", "show", run, "1", "--json"}, d.path(), 0, "cycle-report.schema.json");
  checked("cycle audit", {"cycle", "audit", run, "--json"}, d.path(), 0, "cycle-audit.schema.json");
  checked("cycle list", {"cycle", "list", "--json"}, d.path(), 0, "cycle-list.schema.json");
  // A run its budget stopped (the worker reports 10 tokens, the cap is 5), resumed under a higher one.
  write_file(d / "b" / "status.yaml", "- {id: a, file: a.txt, state: todo}\n");
  write_file(d / "b" / "a.txt", "start\n");
  std::string capped = read_file(d / "cycle.yaml");
  capped.replace(capped.find("'echo a-done"), 1,
                 "'echo \"{\\\"tokens_in\\\": 10}\" > \"$ORCH_USAGE_FILE\"; ");
  write_file(d / "b" / "cycle.yaml", capped + "budget: {tokens: 5}\n");
  const json stopped =
      checked("cycle run", {"cycle", "run", "cycle.yaml", "--json"}, d / "b", 3, "cycle-report.schema.json");
  EXPECT_EQ(stopped.value("status", ""), "budget");
  checked("cycle resume", {"cycle", "resume", stopped.value("id", ""), "--budget-tokens", "100", "--json"},
          d / "b", 0, "cycle-report.schema.json");
}

// The commands and subcommands `orch --help` lists, and for each whether its
// --help offers --json: every one that does must have been checked above.
void check_coverage() {
  TempDir d;
  auto commands_in = [](const std::string& help) {
    // CLI11 lists them under "Subcommands:", each two spaces in (a description's
    // continuation lines further in), until an empty line.
    std::vector<std::string> names;
    std::istringstream in(help);
    bool listing = false;
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("Subcommands:") || line.starts_with("SUBCOMMANDS:")) {
        listing = true;
        continue;
      }
      if (!listing) continue;
      if (line.empty() || line[0] != ' ') break;
      if (!line.starts_with("  ") || line.size() < 3 || line[2] == ' ') continue;
      std::istringstream words(line);
      std::string name;
      if (words >> name) names.push_back(name);
    }
    return names;
  };
  auto offers_json = [&](const std::vector<std::string>& command) {
    auto args = command;
    args.push_back("--help");
    return run_orch(args, d.path()).out.find("--json") != std::string::npos;
  };
  const auto top = commands_in(run_orch({"--help"}, d.path()).out);
  ASSERT_GT(top.size(), 10u) << run_orch({"--help"}, d.path()).out;
  std::set<std::string> with_json;
  for (const auto& name : top) {
    const auto subs = commands_in(run_orch({name, "--help"}, d.path()).out);
    if (subs.empty() && offers_json({name})) with_json.insert(name);
    for (const auto& sub : subs)
      if (offers_json({name, sub})) with_json.insert(name + " " + sub);
  }
  // orch workers needs a PostgreSQL ledger: tests/cli/postgres/workers_test.cc
  // checks its document (and run --detach's) against their schemas.
  covered().insert("workers");
  // orch review is one command whose modes are flags: each mode is checked.
  for (const char* mode : {"review --list", "review --show"}) EXPECT_TRUE(covered().contains(mode)) << mode;
  for (const auto& name : with_json)
    EXPECT_TRUE(covered().contains(name)) << "orch " << name << " has --json but no schema check here";
  EXPECT_TRUE(with_json.contains("logs") && with_json.contains("cancel") && with_json.contains("approve"));
}

// One test, so that the coverage check sees every check (the CLI tests are
// sharded by test).
TEST(CliJsonSchema, EveryCommandsJsonFollowsItsSchema) {
  check_runs_and_the_ledger();
  check_plan_chain_route_and_budget();
  check_task_and_memory();
  check_detached_run();
  check_review();
  check_cycle();
  check_coverage();
}

}  // namespace
}  // namespace orch::json_schema_test
