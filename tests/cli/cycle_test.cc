// Black-box tests of `orch cycle` through the real binary: the offline example
// (examples/cycle: a scripted worker, a real compiler and tests as the gate),
// and small projects whose workers and reviewers are shell commands that do
// what a test needs (break a file, claim what the gate refuses, answer a review
// badly once, spend tokens).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/testing.h"

namespace orch::cycle_cli_test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;

json parse(const std::string& text) {
  json doc = json::parse(text, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << text;
  return doc;
}

std::map<std::string, std::string> states_of(const json& status) {
  std::map<std::string, std::string> out;
  for (const json& item : status["items"]) out[item["id"]] = item["state"];
  return out;
}

// The decision of item `id` in cycle `n` of a run's document.
json decision(const json& doc, int n, const std::string& id) {
  for (const json& d : doc["cycles"][n - 1]["decisions"])
    if (d["id"] == id) return d;
  ADD_FAILURE() << "no decision for " << id << " in cycle " << n;
  return json::object();
}

TEST(CycleCli, ExampleAdvancesRollsBackRevertsStrayWritesAndMarksStuck) {
  TempDir d;
  const fs::path ws = d / "example";
  fs::copy(source_dir() / "examples" / "cycle", ws, fs::copy_options::recursive);
  fs::remove_all(ws / ".orch");
  fs::remove_all(ws / "build");
  const std::string primes_before = read_file(ws / "src" / "primes.c");
  const std::string clamp_before = read_file(ws / "src" / "clamp.c");

  auto dry = run_orch({"cycle", "run", "example/cycle.yaml", "--dry-run", "--json"}, d.path());
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  const json plan = parse(dry.out);
  EXPECT_EQ(plan["objectives"].size(), 7u);
  EXPECT_EQ(plan["jobs"].size(), 5u);  // two items share src/arith.c, two src/bits.c
  EXPECT_FALSE(fs::exists(d / ".orch")) << "a dry run records nothing";

  auto ran = run_orch({"cycle", "run", "example/cycle.yaml", "--json"}, d.path(), {}, 300);
  // is_prime ends stuck: the run converges with an item that is not final.
  ASSERT_EQ(ran.exit_code, 1) << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(doc["status"], "converged") << doc["stop_reason"];
  const std::string run = doc["id"];

  // Cycle 1: clamp broken, its file put back byte for byte; count_vowels wrote
  // scratch.txt: reverted, the job blamed; is_prime: no change.
  EXPECT_EQ(decision(doc, 1, "clamp")["outcome"], "rejected-by-scheduler");
  EXPECT_TRUE(decision(doc, 1, "clamp")["restored"].get<bool>());
  EXPECT_EQ(decision(doc, 1, "count_vowels")["outcome"], "scope-violation");
  EXPECT_EQ(doc["cycles"][0]["scope"].size(), 1u);
  EXPECT_EQ(doc["cycles"][0]["scope"][0]["path"], "scratch.txt");
  EXPECT_EQ(doc["cycles"][0]["scope"][0]["jobs"], json::array({"src-text.c"}));
  EXPECT_FALSE(fs::exists(ws / "scratch.txt"));
  EXPECT_EQ(decision(doc, 1, "is_prime")["outcome"], "no-change");
  EXPECT_EQ(decision(doc, 1, "lcm")["to"], "implemented");
  EXPECT_EQ(decision(doc, 1, "gcd")["to"], "documented");  // phase 2 of src/arith.c
  const json& jobs = doc["cycles"][0]["jobs"];
  for (const json& j : jobs) {
    if (j["file"] == "src/clamp.c") {
      EXPECT_EQ(decision(doc, 1, "clamp")["file_hash"], j["hash_before"]);
    }
  }
  EXPECT_NE(read_file(ws / "src" / "clamp.c"), clamp_before);  // advanced later
  EXPECT_EQ(read_file(ws / "src" / "primes.c"), primes_before);

  // The files of a cycle: objectives, milestones, each job's baseline,
  // transcripts and result.
  // The ledger is the current folder's (.orch/orch.db); the cycle's files beside it.
  const fs::path c1 = d / ".orch" / "cycles" / run / "cycle_1";
  EXPECT_TRUE(fs::exists(c1 / "objectives.json"));
  EXPECT_TRUE(fs::exists(c1 / "milestones.jsonl"));
  EXPECT_EQ(read_file(c1 / "jobs" / "src-clamp.c" / "baseline"), clamp_before);
  EXPECT_TRUE(fs::exists(c1 / "jobs" / "src-arith.c" / "phase-1.jsonl"));
  EXPECT_TRUE(fs::exists(c1 / "jobs" / "src-arith.c" / "phase-2.jsonl"));
  const json result = parse(read_file(c1 / "jobs" / "src-text.c" / "result.json"));
  EXPECT_EQ(result["scope_violation"], json::array({"scratch.txt"}));

  auto status = run_orch({"cycle", "status", "--json"}, d.path());
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const json st = parse(status.out);
  EXPECT_EQ(st["stuck"], json::array({"is_prime"}));
  const auto states = states_of(st);
  for (const char* id : {"gcd", "lcm", "popcount", "parity", "clamp", "count_vowels"})
    EXPECT_EQ(states.at(id), "documented") << id;
  EXPECT_EQ(states.at("is_prime"), "stub");

  auto audit = run_orch({"cycle", "audit", run, "--json"}, d.path());
  ASSERT_EQ(audit.exit_code, 0) << audit.out << audit.err;
  const json a = parse(audit.out);
  EXPECT_TRUE(a["replay"]["matches"].get<bool>()) << a["replay"];
  EXPECT_EQ(a["transitions"].size(), 11u);  // two moves for each of five items, one for gcd
  std::map<std::string, int> per_item;
  for (const json& t : a["transitions"]) ++per_item[t["id"].get<std::string>()];
  EXPECT_EQ(per_item["gcd"], 1);
  EXPECT_EQ(per_item["lcm"], 2);
  EXPECT_EQ(per_item["is_prime"], 0);
  // The export holds the same entries, one a line.
  std::istringstream lines(read_file(d / ".orch" / "cycles" / run / "audit" / "transitions.jsonl"));
  int n = 0;
  for (std::string line; std::getline(lines, line);) ++n;
  EXPECT_EQ(n, static_cast<int>(a["transitions"].size()));

  // A run that ended cannot be resumed.
  auto again = run_orch({"cycle", "resume", run}, d.path());
  EXPECT_EQ(again.exit_code, 2) << again.err;
}

// A project of items in text files: lifecycle todo -> done, the gate a grep for
// the line "ID-done" in the item's file.
struct Project {
  TempDir d;
  Project(const std::vector<std::pair<std::string, std::string>>& items, const std::string& worker,
          const std::string& extra = "") {
    std::string status = "items:\n";
    for (const auto& [id, file] : items) {
      status += fmt::format("  - {{id: {}, file: {}, state: todo}}\n", id, file);
      if (!fs::exists(d / file)) write_file(d / file, "start\n");
    }
    write_file(d / "status.yaml", status);
    write_file(d / "cycle.yaml", fmt::format(R"(name: t
status: {{file: status.yaml}}
lifecycle:
  states: [todo, done]
  stages:
    finish:
      move: todo -> done
      worker:
        command: |-
          {}
      gate: grep -qx -e {{id}}-done {{file}}
max_iterations: 3
{}
)",
                                             worker, extra));
  }
  fs::path path() const { return d.path(); }
};

// The worker appends "ID-done" for each of its ids.
const char* const kGoodWorker =
    R"(for id in $ORCH_CYCLE_IDS; do echo "$id-done" >> "$ORCH_CYCLE_FILE"; done)";

TEST(CycleCli, TwoItemsInOneFileAreOneJob) {
  Project p({{"a", "one.txt"}, {"b", "one.txt"}, {"c", "two.txt"}}, kGoodWorker);
  auto ran = run_orch({"cycle", "run", "cycle.yaml", "--json"}, p.path());
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(doc["cycles"][0]["jobs"].size(), 2u);
  EXPECT_EQ(doc["cycles"][0]["jobs"][0]["ids"], json::array({"a", "b"}));
  EXPECT_EQ(doc["status"], "converged");
  EXPECT_EQ(doc["cycles"].size(), 1u);
  auto status = run_orch({"cycle", "status", "--json"}, p.path());
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto states = states_of(parse(status.out));
  EXPECT_EQ(states.at("a"), "done");
  EXPECT_EQ(states.at("b"), "done");
}

TEST(CycleCli, AReviewerClaimingAMoveTheGateRefusesIsOverruledAndTheFileRestored) {
  // The worker writes the wrong line; the reviewer accepts "done" anyway.
  Project p(
      {{"a", "a.txt"}}, R"(echo wrong >> "$ORCH_CYCLE_FILE")",
      R"(review: {command: 'echo "{\"milestones\": [{\"id\": \"a\", \"transition\": \"done\", \"accepted\": true, \"evidence\": \"looks fine\"}]}"'})");
  auto ran = run_orch({"cycle", "run", "cycle.yaml", "--json", "--max-iterations", "1"}, p.path());
  ASSERT_EQ(ran.exit_code, 1) << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(decision(doc, 1, "a")["outcome"], "rejected-by-scheduler") << doc["cycles"][0];
  EXPECT_TRUE(decision(doc, 1, "a")["restored"].get<bool>());
  EXPECT_EQ(read_file(p.path() / "a.txt"), "start\n");
  EXPECT_EQ(doc["status"], "max_iterations");
}

TEST(CycleCli, AMalformedReviewGetsOneRepair) {
  // First attempt: not JSON. Second (the repair): a valid milestone.
  Project p(
      {{"a", "a.txt"}}, kGoodWorker,
      R"(review: {command: 'if [ "$ORCH_ATTEMPT" = 1 ]; then echo "LGTM"; else echo "{\"milestones\": [{\"id\": \"a\", \"transition\": \"done\", \"accepted\": true}]}"; fi', attempts: 2})");
  auto ran = run_orch({"cycle", "run", "cycle.yaml", "--json"}, p.path());
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(decision(doc, 1, "a")["to"], "done");
}

TEST(CycleCli, AReviewThatNeverAnswersRejectsAndRollsBack) {
  Project p({{"a", "a.txt"}}, kGoodWorker, "review: {command: 'echo no', attempts: 2}");
  auto ran = run_orch({"cycle", "run", "cycle.yaml", "--json", "--max-iterations", "1"}, p.path());
  ASSERT_EQ(ran.exit_code, 1) << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(decision(doc, 1, "a")["outcome"], "rejected-by-review");
  EXPECT_NE(decision(doc, 1, "a")["why"].get<std::string>().find("review failed"), std::string::npos);
  EXPECT_EQ(read_file(p.path() / "a.txt"), "start\n");
}

TEST(CycleCli, TwoStrikesMakeAnItemStuckAndPastAttemptsAreCarried) {
  // The worker changes nothing and records what it was told, outside the
  // workspace (a log in it would be a stray write).
  TempDir outside;
  Project p(
      {{"a", "a.txt"}},
      fmt::format(
          R"(cat "$ORCH_CYCLE_TASKS" >> {}; echo '{{"claims": [{{"id": "a", "transition": "no-change"}}]}}')",
          (outside / "tasks.log").string()));
  auto ran = run_orch({"cycle", "run", "cycle.yaml", "--json"}, p.path());
  ASSERT_EQ(ran.exit_code, 1) << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(doc["cycles"].size(), 2u) << "stuck after two strikes, not selected a third time";
  EXPECT_NE(doc["stop_reason"].get<std::string>().find("stuck"), std::string::npos);
  // Cycle 2's worker was told cycle 1's outcome.
  EXPECT_EQ(doc["cycles"][1]["objectives"][0]["past_attempts"][0]["outcome"], "no-change");
  const std::string told = read_file(outside / "tasks.log");
  EXPECT_NE(told.find("\"outcome\": \"no-change\""), std::string::npos) << told;
}

TEST(CycleCli, TheBudgetStopsTheRunAndAResumeWithMoreGoesOn) {
  // Each worker call reports 100 tokens; the cap is 150: the first cycle's
  // work spends 100, the second cannot start (a review-less cycle has no other
  // phase that spends).
  Project p(
      {{"a", "a.txt"}, {"b", "b.txt"}},
      R"(echo '{"tokens_in": 60, "tokens_out": 40}' > "$ORCH_USAGE_FILE"; for id in $ORCH_CYCLE_IDS; do echo "$id-done" >> "$ORCH_CYCLE_FILE"; done)",
      "max_parallel: 1\nbudget: {tokens: 150}");
  auto ran = run_orch({"cycle", "run", "cycle.yaml", "--json"}, p.path());
  ASSERT_EQ(ran.exit_code, 3) << ran.out << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(doc["status"], "budget");
  const std::string run = doc["id"];
  auto refused = run_orch({"cycle", "resume", run}, p.path());
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("--budget-tokens"), std::string::npos) << refused.err;
  auto resumed = run_orch({"cycle", "resume", run, "--budget-tokens", "10000", "--json"}, p.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(parse(resumed.out)["status"], "converged");
  auto audit = run_orch({"cycle", "audit", run, "--json"}, p.path());
  ASSERT_EQ(audit.exit_code, 0) << audit.out;
  EXPECT_EQ(parse(audit.out)["transitions"].size(), 2u);
}

TEST(CycleCli, APlanIsWrittenAndHandedToTheWorkers) {
  TempDir outside;
  Project p({{"a", "a.txt"}},
            fmt::format(R"(cat "$ORCH_CYCLE_PLAN" >> {}; echo a-done >> "$ORCH_CYCLE_FILE")",
                        (outside / "plan.log").string()),
            "plan: {command: 'echo \"a: append the line\"'}");
  auto ran = run_orch({"cycle", "run", "cycle.yaml", "--json"}, p.path());
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(read_file(outside / "plan.log"), "a: append the line\n");
  EXPECT_EQ(
      read_file(p.path() / ".orch" / "cycles" / doc["id"].get<std::string>() / "cycle_1" / "cycle_plan.md"),
      "a: append the line\n");
  EXPECT_TRUE(doc["cycles"][0]["runs"].contains("plan"));
}

TEST(CycleCli, AnAgentOfTheWorkersFileWorksAStage) {
  // The agent: a script outside the workspace (anything it left in it would be
  // a stray write) that keeps its prompt and environment beside it, appends
  // "ID-done" for each of its ids and ends with the claims line.
  TempDir outside;
  const fs::path script = outside / "agent.sh";
  write_file(script, fmt::format(R"(printf '%s' "$1" > {0}
env | grep '^ORCH_CYCLE' > {1}
claims=
for id in $ORCH_CYCLE_IDS; do
  echo "$id-done" >> "$ORCH_CYCLE_FILE"
  claims="$claims${{claims:+, }}{{\"id\": \"$id\", \"transition\": \"done\", \"note\": \"appended $id\"}}"
done
echo "I appended the lines."
echo "{{\"claims\": [$claims]}}"
)",
                                 (outside / "prompt.txt").string(), (outside / "env.txt").string()));
  TempDir d;
  write_file(d / "notes.txt", "start\n");
  write_file(d / "status.yaml",
             "- {id: a, file: notes.txt, state: todo}\n- {id: b, file: notes.txt, state: todo}\n");
  write_file(d / ".orch" / "workers.yaml",
             fmt::format("workers:\n  scripted:\n    argv: [sh, '{}', \"{{prompt}}\"]\n    output: text\n",
                         script.string()));
  write_file(d / "cycle.yaml", R"(name: agent
status: {file: status.yaml}
lifecycle:
  states: [todo, done]
  stages:
    finish:
      move: todo -> done
      worker: {worker: scripted}
      gate: grep -qx -e {id}-done {file}
max_iterations: 2
)");
  auto ran = run_orch({"cycle", "run", "cycle.yaml", "--json"}, d.path());
  ASSERT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  const json doc = parse(ran.out);
  EXPECT_EQ(doc["status"], "converged");
  EXPECT_EQ(decision(doc, 1, "a")["to"], "done");
  EXPECT_EQ(decision(doc, 1, "b")["to"], "done");
  EXPECT_EQ(read_file(d / "notes.txt"), "start\na-done\nb-done\n");
  const auto states = states_of(parse(run_orch({"cycle", "status", "--json"}, d.path()).out));
  EXPECT_EQ(states.at("a"), "done");
  EXPECT_EQ(states.at("b"), "done");

  // The claims were read from the agent's answer.
  const json result = parse(read_file(d / ".orch" / "cycles" / doc["id"].get<std::string>() / "cycle_1" /
                                      "jobs" / "notes.txt" / "result.json"));
  EXPECT_EQ(result["phases"][0]["tasks"][0]["claim"]["note"], "appended a") << result;
  EXPECT_EQ(result["phases"][0]["tasks"][1]["claim"]["note"], "appended b") << result;

  // Its brief names the stage, the file, the gate it must pass and its items.
  const std::string prompt = read_file(outside / "prompt.txt");
  EXPECT_NE(prompt.find("'finish'"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Change only notes.txt"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("`grep -qx -e a-done notes.txt`"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("`grep -qx -e b-done notes.txt`"), std::string::npos) << "every item's gate: " << prompt;
  EXPECT_NE(prompt.find("\"id\": \"b\""), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("{\"claims\": [{\"id\": \"ID\""), std::string::npos) << prompt;
  // And the step's environment reached it.
  const std::string env = read_file(outside / "env.txt");
  EXPECT_NE(env.find("ORCH_CYCLE_FILE=notes.txt\n"), std::string::npos) << env;
  EXPECT_NE(env.find("ORCH_CYCLE_IDS=a b\n"), std::string::npos) << env;
  EXPECT_NE(env.find("ORCH_CYCLE_STAGE=finish\n"), std::string::npos) << env;
}

TEST(CycleCli, AReviewerThatCannotStartStopsTheRunBeforeAnythingRuns) {
  Project p({{"a", "a.txt"}}, kGoodWorker, "review: {worker: ghost}");
  write_file(p.path() / ".orch" / "workers.yaml",
             "workers:\n  ghost:\n    argv: [orch-test-no-such-agent-cli, \"{prompt}\"]\n    output: text\n");
  auto ran = run_orch({"cycle", "run", "cycle.yaml"}, p.path());
  EXPECT_EQ(ran.exit_code, 2) << ran.err;
  EXPECT_NE(ran.err.find("cannot start"), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("role-review"), std::string::npos) << ran.err;
  EXPECT_EQ(read_file(p.path() / "a.txt"), "start\n");
  EXPECT_EQ(parse(run_orch({"cycle", "list", "--json"}, p.path()).out), json::array());
}

TEST(CycleCli, ABadCycleFileIsRefusedWithItsLineAndNothingRecorded) {
  TempDir d;
  write_file(d / "status.yaml", "- {id: a, file: a.txt, state: todo}\n");
  write_file(d / "cycle.yaml",
             "status: {file: status.yaml}\nlifecycle:\n  states: [todo, done]\n  stages:\n    finish:\n"
             "      move: todo -> done\n      worker: {command: 'true'}\n");
  auto ran = run_orch({"cycle", "run", "cycle.yaml"}, d.path());
  EXPECT_EQ(ran.exit_code, 2);
  EXPECT_NE(ran.err.find("cycle.yaml:5"), std::string::npos) << ran.err;
  EXPECT_NE(ran.err.find("gate"), std::string::npos) << ran.err;
  EXPECT_FALSE(fs::exists(d / ".orch"));
}

TEST(CycleCli, InitWritesACycleFileOnce) {
  TempDir d;
  auto init = run_orch({"cycle", "init"}, d.path());
  ASSERT_EQ(init.exit_code, 0) << init.err;
  EXPECT_TRUE(fs::exists(d / "cycle.yaml"));
  auto twice = run_orch({"cycle", "init"}, d.path());
  EXPECT_EQ(twice.exit_code, 2) << "an existing file is not overwritten";
}

}  // namespace
}  // namespace orch::cycle_cli_test
