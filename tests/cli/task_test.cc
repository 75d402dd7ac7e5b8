// Black-box tests of `orch task` through the real binary: the trace state
// machine, the verifier, isolated engines, gc, the learning loop, and `task run`
// end to end with a scripted worker.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "testing/fake_llm.h"
#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;

const char* const kIntents[] = {"security", "deployment", "architecture",  "bug_fix", "performance",
                                "feature",  "quick_fix",  "documentation", "research"};

// A project checklist (.orch/route/verify.yaml, which replaces the shipped one):
// `bug_fix_items` for bug_fix, an attestation for every other intent.
void write_checklists(const TempDir& d, const std::string& bug_fix_items) {
  std::string text = "version: 1\nchecklists:\n";
  for (const char* intent : kIntents) {
    text += fmt::format("  {}:\n", intent);
    text +=
        std::string(intent) == "bug_fix" ? bug_fix_items : "    - {check: \"it is done\", attest: true}\n";
  }
  write_file(d / ".orch" / "route" / "verify.yaml", text);
}

json parse_json(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

// Every trace document orch prints or exports validates against the published schema.
void expect_valid_trace(const json& doc) {
  static const auto schema = JsonSchema::load_file((source_dir() / "schemas" / "trace.schema.json").string());
  ASSERT_TRUE(schema) << schema.error().message;
  auto problems = schema->validate(doc);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems[0]) << "\n" << doc.dump(2);
}

json plan_trace(const TempDir& d, const std::string& request, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"task", "plan", request, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_orch(args, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return parse_json(r.out);
}

TEST(CliTask, PlanClassifiesRunsTheRecallEnginesAndExportsAValidTrace) {
  TempDir d;
  const json t = plan_trace(d, "fix the crash in the date parser");
  EXPECT_EQ(t["intent"], "bug_fix");
  EXPECT_EQ(t["complexity"], "standard");
  EXPECT_EQ(t["strategy"], "recall-execute-verify");
  EXPECT_EQ(t["pipeline"], json({"RECALL", "PLAN", "EXECUTE", "VERIFY", "SUMMARIZE"}));
  EXPECT_EQ(t["budget"]["tokens"], 3000);
  // plan logged CLASSIFY, then the engine stages RECALL and PLAN itself.
  ASSERT_EQ(t["transitions"].size(), 3u);
  EXPECT_EQ(t["transitions"][0]["state"], "CLASSIFY");
  EXPECT_EQ(t["transitions"][1]["state"], "RECALL");
  EXPECT_EQ(t["state"], "PLAN");
  EXPECT_EQ(t["engine_results"]["recall"]["status"], "ok");
  EXPECT_EQ(t["engine_results"]["context"]["status"], "ok");
  EXPECT_EQ(t["engine_results"]["planner"]["status"], "ok") << t["engine_results"].dump(2);
  expect_valid_trace(t);
  const fs::path file = d / ".orch" / "traces" / (t["id"].get<std::string>() + ".json");
  ASSERT_TRUE(fs::exists(file));
  EXPECT_EQ(parse_json(read_file(file)), t);

  // The circuit misfire of the real implementation: "ci" is not inside "circuit".
  const json circuit = plan_trace(d, "fix the circuit driver");
  EXPECT_EQ(circuit["intent"], "bug_fix");
  EXPECT_NE(circuit["id"], t["id"]);
  auto list = run_orch({"task", "list"}, d.path());
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_HAS(list.out, t["id"].get<std::string>());
}

TEST(CliTask, IllegalTransitionsAreRefusedNamingTheLegalNextState) {
  TempDir d;
  const std::string id = plan_trace(d, "fix the crash in the date parser")["id"];
  auto skip = run_orch({"task", "log", id, "--state", "VERIFY"}, d.path());
  EXPECT_EQ(skip.exit_code, 2);
  EXPECT_HAS(skip.err, "illegal transition PLAN -> VERIFY: the legal next state is EXECUTE");
  auto again = run_orch({"task", "log", id, "--state", "PLAN"}, d.path());
  EXPECT_EQ(again.exit_code, 2);
  auto bogus = run_orch({"task", "log", id, "--state", "DANCE"}, d.path());
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_HAS(bogus.err, "'DANCE': not a state");
  auto early = run_orch({"task", "close", id, "--result", "pass"}, d.path());
  EXPECT_EQ(early.exit_code, 2);
  EXPECT_HAS(early.err, "close --result pass is legal only after SUMMARIZE");
  auto unknown = run_orch({"task", "show", "no-such-trace"}, d.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_HAS(unknown.err, "no trace 'no-such-trace'");
  auto abandon = run_orch({"task", "log", id, "--state", "ABANDONED"}, d.path());
  EXPECT_EQ(abandon.exit_code, 2);
  EXPECT_HAS(abandon.err, "ABANDONED is entered only by gc");
  // The refusals changed nothing.
  auto shown = run_orch({"task", "show", id, "--json"}, d.path());
  EXPECT_EQ(parse_json(shown.out)["state"], "PLAN");
}

// VERIFY runs the checklist's commands through the engine: a failing command
// is a FAIL verdict that blocks SUMMARIZE and close pass; EXECUTE may be retried
// twice; then only close fail is left, and the trace ends ESCALATED (exit 3).
// Two ledgers in one workspace (`--store`) share its .orch/traces/, plans and
// lessons: the second one's trace of the same request on the same day gets the
// next id, not the first one's, so neither file is overwritten.
TEST(CliTask, TwoLedgersInOneWorkspaceNeverShareATraceId) {
  TempDir d;
  const json a = plan_trace(d, "fix the crash in the date parser", {"--store", "a.db"});
  const json b = plan_trace(d, "fix the crash in the date parser", {"--store", "b.db"});
  const std::string ida = a["id"], idb = b["id"];
  EXPECT_NE(ida, idb);
  EXPECT_EQ(idb, ida + "-2");
  EXPECT_EQ(parse_json(read_file(d / ".orch" / "traces" / (ida + ".json")))["id"], ida);
  EXPECT_EQ(parse_json(read_file(d / ".orch" / "traces" / (idb + ".json")))["id"], idb);
  // Each closes into a lesson of its own.
  for (const auto& [store, id] : {std::pair{"a.db", ida}, std::pair{"b.db", idb}}) {
    auto closed = run_orch({"task", "close", id, "--result", "fail", "--store", store}, d.path());
    EXPECT_EQ(closed.exit_code, 3) << closed.err;
    EXPECT_TRUE(fs::exists(d / ".orch" / "memory" / "lessons" / (id + ".md"))) << id;
  }
  EXPECT_EQ(parse_json(read_file(d / ".orch" / "traces" / (ida + ".json")))["state"], "ESCALATED");
}

// TRACE may be the path of a trace's exported file. One that is not JSON says
// so with the parser's position and reason; JSON without an id says that.
TEST(CliTask, ATraceFileThatIsNotJsonSaysWhereItBreaks) {
  TempDir d;
  const std::string id = plan_trace(d, "fix the crash in the date parser")["id"];
  const std::string file = (d / ".orch" / "traces" / (id + ".json")).string();
  auto shown = run_orch({"task", "show", file, "--json"}, d.path());
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(parse_json(shown.out)["id"], id);

  write_file(d / "broken.json", "{\"id\": \"x\",\n  oops}\n");
  auto broken = run_orch({"task", "show", "broken.json"}, d.path());
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_HAS(broken.err,
             "broken.json: not a trace file: not valid JSON: parse error at line 2, column 3: syntax error");
  EXPECT_EQ(broken.err.find("no \"id\""), std::string::npos) << broken.err;

  write_file(d / "list.json", "[1, 2]\n");
  auto no_id = run_orch({"task", "show", "list.json"}, d.path());
  EXPECT_EQ(no_id.exit_code, 2);
  EXPECT_HAS(no_id.err, "list.json: not a trace file: valid JSON, but no \"id\" string");
}

TEST(CliTask, AFailingVerifyAllowsTwoRetriesThenOnlyEscalation) {
  TempDir d;
  write_checklists(d,
                   "    - {check: \"the fix is in place\", command: \"test -f fixed.txt\"}\n"
                   "    - {check: \"root cause named\", attest: true}\n");
  const std::string id = plan_trace(d, "fix the crash in the date parser")["id"];
  ASSERT_EQ(run_orch({"task", "log", id, "--state", "EXECUTE", "--note", "first try"}, d.path()).exit_code,
            0);
  // Evidence that contradicts itself, or attests a command, is refused before anything is recorded.
  auto command = run_orch({"task", "log", id, "--state", "VERIFY", "--attest", "1=trust me"}, d.path());
  EXPECT_EQ(command.exit_code, 2) << command.out << command.err;
  EXPECT_HAS(command.err, "--attest 1: item 1 is a command (`test -f fixed.txt`)");
  auto both =
      run_orch({"task", "log", id, "--state", "VERIFY", "--attest", "2=yes", "--refute", "2=no"}, d.path());
  EXPECT_EQ(both.exit_code, 2) << both.out << both.err;
  EXPECT_HAS(both.err, "--attest 2 and --refute 2 contradict each other");
  for (int round = 0; round < 3; ++round) {
    auto verify = run_orch(
        {"task", "log", id, "--state", "VERIFY", "--attest", "2=off by one in the day count"}, d.path());
    EXPECT_EQ(verify.exit_code, 1) << verify.out << verify.err;
    EXPECT_HAS(verify.out, "verdict FAIL");
    auto summarize = run_orch({"task", "log", id, "--state", "SUMMARIZE"}, d.path());
    EXPECT_EQ(summarize.exit_code, 2);
    EXPECT_HAS(summarize.err, "VERIFY failed");
    if (round < 2) {
      ASSERT_EQ(run_orch({"task", "log", id, "--state", "EXECUTE", "--note", "retry"}, d.path()).exit_code,
                0);
    }
  }
  auto third = run_orch({"task", "log", id, "--state", "EXECUTE"}, d.path());
  EXPECT_EQ(third.exit_code, 2);
  EXPECT_HAS(third.err, "retries are used up");
  auto closed = run_orch(
      {"task", "close", id, "--result", "fail", "--summary", "could not find it", "--json"}, d.path());
  EXPECT_EQ(closed.exit_code, 3) << closed.err;
  const json t = parse_json(closed.out);
  EXPECT_EQ(t["state"], "ESCALATED");
  EXPECT_EQ(t["retries"], 2);
  EXPECT_EQ(t["verifications"].size(), 3u);
  EXPECT_EQ(t["verifications"][0]["items"][0]["status"], "failed");
  EXPECT_EQ(t["verifications"][0]["items"][1]["status"], "attested");
  EXPECT_EQ(t["learning_results"]["harvest"]["status"], "ok") << t["learning_results"].dump(2);
  expect_valid_trace(t);
  // Each VERIFY ran its command as a recorded run of the ledger.
  auto runs = run_orch({"runs", "--json"}, d.path());
  EXPECT_HAS(runs.out, "verify " + id);
}

TEST(CliTask, APassingVerifyLetsTheTraceCloseDone) {
  TempDir d;
  write_checklists(d,
                   "    - {check: \"the fix is in place\", command: \"test -f fixed.txt\"}\n"
                   "    - {check: \"root cause named\", attest: true}\n");
  const std::string id = plan_trace(d, "fix the crash in the date parser")["id"];
  ASSERT_EQ(run_orch({"task", "log", id, "--state", "EXECUTE"}, d.path()).exit_code, 0);
  write_file(d / "fixed.txt", "yes");
  auto verify = run_orch({"task", "log", id, "--state", "VERIFY"}, d.path());
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_HAS(verify.out, "verdict PASS-WITH-WARNINGS (confidence 0.50)");
  ASSERT_EQ(run_orch({"task", "log", id, "--state", "SUMMARIZE", "--note", "done"}, d.path()).exit_code, 0);
  auto closed = run_orch(
      {"task", "close", id, "--result", "pass", "--summary", "the day count was off by one"}, d.path());
  EXPECT_EQ(closed.exit_code, 0) << closed.err;
  EXPECT_HAS(closed.out, "closed DONE");
  auto again = run_orch({"task", "close", id, "--result", "fail"}, d.path());
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_HAS(again.err, "already closed");
}

TEST(CliTask, AnAmbiguousRequestAsksFirstUnlessAnIntentIsAssumed) {
  TempDir d;
  auto asked = run_orch({"task", "plan", "the thing with the widget"}, d.path());
  EXPECT_EQ(asked.exit_code, 3) << asked.out << asked.err;
  EXPECT_HAS(asked.out, "What kind of work is it?");
  EXPECT_FALSE(fs::exists(d / ".orch" / "traces")) << "no trace is made before the question is answered";
  const json t = plan_trace(d, "the thing with the widget", {"--assume", "feature"});
  EXPECT_EQ(t["intent"], "feature");
  EXPECT_EQ(t["ambiguous"], true) << "the trace keeps that the request was ambiguous";
  EXPECT_EQ(t["classification"]["assumed"], true) << t["classification"].dump();
  // A request that was not ambiguous, planned with the intent it has anyway: nothing assumed.
  const json plain = plan_trace(d, "fix the crash in the date parser", {"--assume", "bug_fix"});
  EXPECT_EQ(plain["ambiguous"], false);
  EXPECT_EQ(plain["classification"]["assumed"], false);
  auto bad = run_orch({"task", "plan", "the thing with the widget", "--assume", "dancing"}, d.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_HAS(bad.err, "not an intent");
}

// A trace whose file cannot be written is not left open in the ledger: a
// failed `task plan` leaves nothing an agent could go on logging.
TEST(CliTask, APlanWhoseTraceCannotBeWrittenLeavesNoTrace) {
  TempDir d;
  write_file(d / ".orch" / "traces", "a file where the folder goes\n");
  auto r = run_orch({"task", "plan", "fix the crash in the date parser"}, d.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_HAS(r.err, ".orch/traces");
  fs::remove(d / ".orch" / "traces");
  auto list = run_orch({"task", "list", "--json"}, d.path());
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(parse_json(list.out), json::array()) << list.out;
}

// A broken engine degrades its own stage only: the trace is made and the
// failure is recorded with its error.
TEST(CliTask, AFailingEngineIsRecordedAndTheTraceGoesOn) {
  TempDir d;
  write_file(d / ".orch" / "memory" / "memory.db",
             "this is not a database, it is a text file of some length\n");
  const json t = plan_trace(d, "fix the crash in the date parser");
  EXPECT_EQ(t["engine_results"]["recall"]["status"], "FAILED");
  EXPECT_HAS(t["engine_results"]["recall"]["error"].get<std::string>(), "memory.db");
  EXPECT_EQ(t["engine_results"]["skills"]["status"], "ok") << "skills read files, not the index";
  EXPECT_EQ(t["state"], "PLAN");
  expect_valid_trace(t);
}

TEST(CliTask, GcAbandonsStaleTracesAndHarvestsThem) {
  TempDir d;
  const std::string id = plan_trace(d, "fix the crash in the date parser")["id"];
  auto fresh = run_orch({"task", "gc", "--older-than", "1h"}, d.path());
  EXPECT_EQ(fresh.exit_code, 0);
  EXPECT_HAS(fresh.out, "no open trace");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto gc = run_orch({"task", "gc", "--older-than", "10ms", "--json"}, d.path());
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(parse_json(gc.out)["abandoned"], json({id}));
  auto shown = parse_json(run_orch({"task", "show", id, "--json"}, d.path()).out);
  EXPECT_EQ(shown["state"], "ABANDONED");
  EXPECT_EQ(shown["result"], "abandoned");
  EXPECT_EQ(shown["learning_results"]["harvest"]["status"], "ok");
  // Stored relative to the workspace, as every path orch stores (docs/memory.md).
  EXPECT_EQ(shown["learning_results"]["harvest"]["note"], ".orch/memory/lessons/" + id + ".md");
  EXPECT_TRUE(fs::exists(d / ".orch" / "memory" / "lessons" / (id + ".md")));
  auto open = run_orch({"task", "list", "--open"}, d.path());
  EXPECT_HAS(open.out, "no open traces");
  auto log = run_orch({"task", "log", id, "--state", "EXECUTE"}, d.path());
  EXPECT_EQ(log.exit_code, 2);
  EXPECT_HAS(log.err, "is closed (ABANDONED)");
  auto bad = run_orch({"task", "gc", "--older-than", "soon"}, d.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_HAS(bad.err, "--older-than: bad duration 'soon'");
  auto day = run_orch({"task", "gc", "--older-than", "1d"}, d.path());
  EXPECT_EQ(day.exit_code, 2);
  EXPECT_HAS(day.err, "unknown unit 'd'");
  auto zero = run_orch({"task", "gc", "--older-than", "0s"}, d.path());
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_HAS(zero.err, "--older-than '0s': must be more than 0");
  {
    TempDir empty;
    EXPECT_EQ(run_orch({"task", "gc", "--older-than", "soon"}, empty.path()).exit_code, 2);
    EXPECT_FALSE(fs::exists(empty / ".orch")) << "a bad --older-than made a ledger";
  }
}

// `task plan` runs the same gc first, with abandon_after from .orch/task.yaml;
// a bad settings file is refused naming its line.
TEST(CliTask, PlanAbandonsStaleTracesFirstAndChecksTheSettingsFile) {
  TempDir d;
  const std::string stale = plan_trace(d, "fix the crash in the date parser")["id"];
  write_file(d / ".orch" / "task.yaml", "abandon_after: 10ms\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto r = run_orch({"task", "plan", "fix the crash in the time parser"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "trace " + stale + " was abandoned");
  EXPECT_EQ(parse_json(run_orch({"task", "show", stale, "--json"}, d.path()).out)["state"], "ABANDONED");

  write_file(d / ".orch" / "task.yaml", "abandon_after: 10ms\nverify_timout: 5m\n");
  auto typo = run_orch({"task", "list"}, d.path());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_HAS(typo.err, "task.yaml:2: unknown setting 'verify_timout' (did you mean 'verify_timeout'?)");
  write_file(d / ".orch" / "task.yaml", "abandon_after: later\n");
  auto bad = run_orch({"task", "list"}, d.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_HAS(bad.err, "task.yaml:1: abandon_after: bad duration 'later'");
  // Too large is said as such (the parser's reason), naming the file and field.
  write_file(d / ".orch" / "task.yaml", "verify_timeout: 5m\nabandon_after: 99999999999999h\n");
  auto huge = run_orch({"task", "list"}, d.path());
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_HAS(huge.err,
             ".orch/task.yaml:2: abandon_after: bad duration '99999999999999h': too large (at most 87600h");
  EXPECT_EQ(huge.err.find("positive"), std::string::npos) << huge.err;
  write_file(d / ".orch" / "task.yaml", "verify_timeout: 0s\n");
  auto zero = run_orch({"task", "list"}, d.path());
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_HAS(zero.err, "task.yaml:1: verify_timeout: '0s' must be more than 0");
  // YAML's own problems and a key written twice name their line too.
  write_file(d / ".orch" / "task.yaml", "verify_timeout: 5m\nabandon_after:\n\t- 1h\n");
  auto tab = run_orch({"task", "list"}, d.path());
  EXPECT_EQ(tab.exit_code, 2);
  EXPECT_HAS(tab.err, "task.yaml:3: YAML syntax error: found character that cannot start any token (a tab");
  write_file(d / ".orch" / "task.yaml", "verify_timeout: 5m\nabandon_after: 1h\nverify_timeout: 9m\n");
  auto twice = run_orch({"task", "list"}, d.path());
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_HAS(twice.err, "task.yaml:3: verify_timeout: written twice (first at line 1)");
}

// The learning loop: a closed trace becomes a lesson that a second, similar
// request finds in RECALL, through `orch similarity`, and through the gate.
TEST(CliTask, ASecondSimilarRequestRecallsTheFirstOnesLesson) {
  TempDir d;
  write_checklists(d, "    - {check: \"root cause named\", attest: true}\n");
  const std::string first = plan_trace(d, "fix the timezone crash in the date parser")["id"];
  ASSERT_EQ(run_orch({"task", "log", first, "--state", "EXECUTE"}, d.path()).exit_code, 0);
  ASSERT_EQ(
      run_orch({"task", "log", first, "--state", "VERIFY", "--attest", "1=utc offset was dropped"}, d.path())
          .exit_code,
      0);
  ASSERT_EQ(run_orch({"task", "log", first, "--state", "SUMMARIZE"}, d.path()).exit_code, 0);
  ASSERT_EQ(
      run_orch({"task", "close", first, "--result", "pass", "--summary", "kept the utc offset when parsing"},
               d.path())
          .exit_code,
      0);
  const json second = plan_trace(d, "fix the timezone crash in the date parser again");
  bool recalled = false;
  for (const auto& hit : second["engine_results"]["recall"]["hits"])
    if (hit["id"] == first) recalled = true;
  EXPECT_TRUE(recalled) << second["engine_results"].dump(2);
  EXPECT_EQ(second["llm"], "cache-first") << "a similar closed trace was found by the capability gate";
  auto similar = run_orch({"similarity", "timezone crash in the date parser"}, d.path());
  EXPECT_EQ(similar.exit_code, 0) << similar.err;
  EXPECT_HAS(similar.out, first);
}

// Worker `scripted`: ./agent.sh runs `case_line` (a shell line that may act on
// its prompt, $1), then answers "did: " and the prompt's first line.
void write_scripted_worker(const TempDir& d, const std::string& case_line) {
  write_file(d / "agent.sh", "#!/bin/sh\n" + case_line + "echo \"did: $(printf '%s' \"$1\" | head -n 1)\"\n");
  fs::permissions(d / "agent.sh", fs::perms::owner_all);
  write_file(
      d / ".orch" / "workers.yaml",
      "workers:\n  scripted:\n    argv: [./agent.sh, '{prompt}']\n    output: text\n    timeout: 30s\n");
}

// `orch task run`: every stage through the core engine with a scripted worker.
// The worker fixes the file only when its prompt says why the previous attempt
// failed, so VERIFY fails once, EXECUTE is retried with the reason, and the
// trace closes DONE.
TEST(CliTask, RunDrivesEveryStageAndRetriesExecuteWithTheVerifyFailure) {
  TempDir d;
  write_scripted_worker(d, "case \"$1\" in *'previous attempt failed'*) echo fixed > fixed.txt ;; esac\n");
  write_checklists(d, "    - {check: \"the fix is in place\", command: \"test -f fixed.txt\"}\n");
  auto r = run_orch({"task", "run", "fix the crash in the date parser", "--worker", "scripted", "--json"},
                    d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["state"], "DONE");
  EXPECT_EQ(t["result"], "pass");
  EXPECT_EQ(t["retries"], 1);
  std::vector<std::string> states;
  for (const auto& tr : t["transitions"]) states.push_back(tr["state"]);
  EXPECT_EQ(states, (std::vector<std::string>{"CLASSIFY", "RECALL", "PLAN", "EXECUTE", "VERIFY", "EXECUTE",
                                              "VERIFY", "SUMMARIZE", "DONE"}));
  ASSERT_EQ(t["verifications"].size(), 2u);
  EXPECT_EQ(t["verifications"][0]["verdict"], "FAIL");
  EXPECT_EQ(t["verifications"][1]["verdict"], "PASS");
  EXPECT_HAS(t["summary"].get<std::string>(), "did:");
  // What fixed it: the passing attempt's own account, in the trace and its lesson.
  EXPECT_HAS(t["fix"].get<std::string>(), "attempt 2: did: ");
  const std::string lesson =
      read_file(d / ".orch" / "memory" / "lessons" / (t["id"].get<std::string>() + ".md"));
  EXPECT_HAS(lesson, "## What fixed it\n\nattempt 2: did: ");
  EXPECT_FALSE(t["run_id"].get<std::string>().empty());
  expect_valid_trace(t);
  auto status = run_orch({"status", t["run_id"], "--json"}, d.path());
  EXPECT_EQ(status.exit_code, 0);
  EXPECT_EQ(parse_json(status.out)["run"]["status"], "succeeded");
  // The run is the trace's: its owner is the task, by id (no name is parsed).
  const json owner = parse_json(status.out)["run"]["owner"];
  EXPECT_EQ(owner, json({{"kind", "task"}, {"id", t["id"]}, {"round", 0}, {"phase", ""}})) << status.out;
}

// A worker that fixes one thing per call and never the last: VERIFY fails on
// a different check each time (a.txt, then b.txt), so EXECUTE is retried twice
// — the limit — and the trace is ESCALATED with three FAIL verdicts. (The same
// check failing twice in a row ends the retries sooner: the engine's "same
// failure twice" rule.)
TEST(CliTask, RunEscalatesAfterTwoRetriesWhenVerifyKeepsFailing) {
  TempDir d;
  write_file(d / "partial.sh",
             "#!/bin/sh\n[ -f calls.txt ] && touch a.txt\necho x >> calls.txt\necho \"call $(wc -l < "
             "calls.txt)\"\n");
  fs::permissions(d / "partial.sh", fs::perms::owner_all);
  write_file(d / ".orch" / "workers.yaml",
             "workers:\n  lazy:\n    argv: [./partial.sh, '{prompt}']\n    output: text\n");
  write_checklists(d,
                   "    - {check: \"a is there\", command: \"test -f a.txt\"}\n"
                   "    - {check: \"b is there\", command: \"test -f b.txt\"}\n");
  auto r =
      run_orch({"task", "run", "fix the crash in the date parser", "--worker", "lazy", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["state"], "ESCALATED");
  EXPECT_EQ(t["retries"], 2);
  ASSERT_EQ(t["verifications"].size(), 3u);
  for (const auto& v : t["verifications"]) EXPECT_EQ(v["verdict"], "FAIL");
  EXPECT_EQ(t["verifications"][0]["items"][1]["status"], "failed");
  EXPECT_EQ(t["verifications"][0]["items"][2]["status"], "not_run");
  EXPECT_EQ(t["verifications"][1]["items"][1]["status"], "passed");
  EXPECT_EQ(t["verifications"][1]["items"][2]["status"], "failed");
  EXPECT_EQ(read_file(d / "calls.txt"), "x\nx\nx\n") << "three EXECUTE attempts, no more";
  expect_valid_trace(t);

  auto ambiguous = run_orch({"task", "run", "the thing with the widget", "--worker", "lazy"}, d.path());
  EXPECT_EQ(ambiguous.exit_code, 3);
  EXPECT_HAS(ambiguous.out, "What kind of work is it?");
  auto typo = run_orch({"task", "run", "fix the crash", "--worker", "lazzy"}, d.path());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_HAS(typo.err, "lazzy");
}

// A models file whose default model is the fake provider (`max_tokens` 0: the
// model's default, 1024).
void write_fake_models(const TempDir& d, const orch::testing::FakeLlmServer& server, int max_tokens = 64) {
  write_file(
      d / ".orch" / "models.yaml",
      fmt::format("providers:\n  fake: {{api: openai, base_url: \"{}/v1\", api_key_env: ORCH_TEST_TASK_KEY, "
                  "timeout: 10s}}\nmodels:\n  m: {{provider: fake, model: task-test{}}}\n"
                  "default_model: m\n",
                  server.url(), max_tokens > 0 ? fmt::format(", max_tokens: {}", max_tokens) : ""));
}

// The default executor of `task run` is `llm`: one chat call per model stage to
// an OpenAI-compatible provider (our fake, real HTTP on 127.0.0.1), the
// usage it reports charged to the trace's budget.
TEST(CliTask, RunWithAModelCallsTheProviderForEachModelStage) {
  orch::testing::FakeLlmServer server("sk-task-run-123456");
  ASSERT_TRUE(server.started());
  TempDir d;
  write_fake_models(d, server);
  write_checklists(d, "    - {check: \"root cause named\", attest: true}\n");
  auto r = run_orch({"task", "run", "fix the crash in the date parser", "--json"}, d.path(),
                    {{"ORCH_TEST_TASK_KEY", server.api_key()}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["state"], "DONE");
  EXPECT_HAS(t["summary"].get<std::string>(), "echo: ");
  EXPECT_GT(t["budget"]["spent_tokens"].get<std::int64_t>(), 0) << "the provider's usage is charged";
  expect_valid_trace(t);
  // The planner (no template, one clause) made no call; execute and summarize did.
  const json requests = server.requests();
  ASSERT_EQ(requests.size(), 2u) << requests.dump(2);
  EXPECT_HAS(requests[0]["body"].dump(), "fix the crash in the date parser");
  EXPECT_EQ(requests[0]["body"].dump().find("${"), std::string::npos)
      << "placeholders are rendered before the call";
  EXPECT_HAS(requests[1]["body"].dump(), "Summarise");
}

// A trivial request's budget (600 tokens) cannot pay a model's default
// max_tokens (1024): each call asks for what the budget has left instead, so
// the task still finishes within its budget.
TEST(CliTask, ATrivialRequestFitsItsCallsToItsSmallBudget) {
  orch::testing::FakeLlmServer server("sk-task-run-123456");
  ASSERT_TRUE(server.started());
  TempDir d;
  write_fake_models(d, server, 0);  // the default max_tokens: more than the budget
  auto r = run_orch({"task", "run", "fix the typo in the readme", "--json"}, d.path(),
                    {{"ORCH_TEST_TASK_KEY", server.api_key()}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["state"], "DONE");
  EXPECT_EQ(t["budget"]["tokens"], 600) << t["budget"].dump();
  EXPECT_LE(t["budget"]["spent_tokens"].get<std::int64_t>(), 600);
  const json requests = server.requests();
  ASSERT_EQ(requests.size(), 2u) << requests.dump(2);
  for (const auto& q : requests) {
    const std::int64_t asked = q["body"]["max_tokens"].get<std::int64_t>();
    EXPECT_GE(asked, 256) << q["body"].dump();
    EXPECT_LT(asked, 600) << "held to the trace's budget, not the model's 1024";
  }
}

// The example registry (examples/registry.yml, whose filestats tool counts
// lines) as the workspace's .orch/registry.yml, its script beside it.
void write_example_registry(const TempDir& d) {
  write_file(d / ".orch" / "registry.yml", read_file(source_dir() / "examples" / "registry.yml"));
  write_file(d / ".orch" / "tools" / "filestats.sh",
             read_file(source_dir() / "examples" / "tools" / "filestats.sh"));
  fs::permissions(d / ".orch" / "tools" / "filestats.sh", fs::perms::owner_all);
}

// The capability gate says no model is needed (a trivial request a registry
// tool covers): `task run` runs the tool the ROUTE stage chose as EXECUTE, its
// VERIFY checklist as the tool's postconditions, and a summary without a model
// — no models file needed, and a configured model is never called, even when
// named with --model.
TEST(CliTask, ToolDirectRunsTheRegistryToolAndNoModel) {
  TempDir d;
  write_example_registry(d);
  write_file(d / "README.md", "one\ntwo\nthree\n");
  auto r = run_orch({"task", "run", "quick: count the lines of the readme", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["strategy"], "tool-direct");
  EXPECT_EQ(t["llm"], "none");
  EXPECT_EQ(t["state"], "DONE");
  std::vector<std::string> states;
  for (const auto& tr : t["transitions"]) states.push_back(tr["state"]);
  EXPECT_EQ(states,
            (std::vector<std::string>{"CLASSIFY", "ROUTE", "EXECUTE", "VERIFY", "SUMMARIZE", "DONE"}));
  EXPECT_HAS(t["transitions"][2]["note"].get<std::string>(), "tool filestats count");
  const std::string summary = t["summary"].get<std::string>();
  EXPECT_HAS(summary, R"(filestats count with {"files":["README.md"]})");
  EXPECT_HAS(summary, R"("lines":3)");
  ASSERT_EQ(t["verifications"].size(), 1u);
  EXPECT_NE(t["verifications"][0]["verdict"], "FAIL") << t["verifications"].dump(2);
  EXPECT_EQ(t["verifications"][0]["items"][0]["status"], "passed") << t["verifications"].dump(2);
  EXPECT_EQ(t["budget"]["spent_tokens"], 0);
  expect_valid_trace(t);
  auto logs = run_orch({"logs", t["run_id"], "execute"}, d.path());
  EXPECT_HAS(logs.out, R"("lines":3)");

  // With a model configured, and named: still the tool, and the model is never
  // called.
  TempDir d2;
  write_example_registry(d2);
  write_file(d2 / "README.md", "one\ntwo\nthree\n");
  orch::testing::FakeLlmServer server("sk-task-run-123456");
  ASSERT_TRUE(server.started());
  write_fake_models(d2, server);
  auto named = run_orch({"task", "run", "quick: count the lines of README.md", "--model", "m", "--json"},
                        d2.path(), {{"ORCH_TEST_TASK_KEY", server.api_key()}});
  ASSERT_EQ(named.exit_code, 0) << named.out << named.err;
  const json n = parse_json(named.out);
  EXPECT_EQ(n["state"], "DONE");
  EXPECT_HAS(n["summary"].get<std::string>(), R"("lines":3)");
  EXPECT_HAS(named.err, "--model m was not used");
  EXPECT_EQ(server.requests().size(), 0u) << server.requests().dump(2);
}

// The capability gate asks the tool first: a tool-direct request done once is
// "similar" to itself the next time, but still needs no model (cache-first would
// have sent it to a model — here, with none configured, an error).
TEST(CliTask, ToolDirectStaysToolDirectWhenASimilarTraceIsClosed) {
  TempDir d;
  write_example_registry(d);
  write_file(d / "README.md", "one\ntwo\nthree\n");
  for (int i = 0; i < 2; ++i) {
    auto r = run_orch({"task", "run", "quick: count the lines of the readme", "--json"}, d.path());
    ASSERT_EQ(r.exit_code, 0) << "run " << i + 1 << ": " << r.out << r.err;
    const json t = parse_json(r.out);
    EXPECT_EQ(t["llm"], "none") << "run " << i + 1;
    EXPECT_EQ(t["strategy"], "tool-direct");
    EXPECT_EQ(t["state"], "DONE");
    if (i == 1) {
      EXPECT_TRUE(t["classification"]["gate"]["similar_found"].get<bool>()) << t["classification"].dump(2);
    }
  }
}

// A relative program path in a registry's `command` is relative to the
// registry file's folder (docs/tools.md). A script put elsewhere — here the
// workspace's tools/, while the registry is .orch/registry.yml — cannot be run:
// that is the registry's set-up, not the work. The message names the path and
// the rule; no VERIFY, no lesson (exit 2), and once the script is where the
// rule says, --resume runs the tool.
TEST(CliTask, ToolDirectWithAMisplacedScriptIsASetUpFailure) {
  TempDir d;
  write_example_registry(d);
  fs::create_directories(d / "tools");
  fs::rename(d / ".orch" / "tools" / "filestats.sh", d / "tools" / "filestats.sh");
  write_file(d / "README.md", "one\ntwo\nthree\n");
  auto r = run_orch({"task", "run", "quick: count the lines of the readme", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, ".orch/tools/filestats.sh' cannot be run: No such file or directory");
  EXPECT_HAS(r.err, "relative to the registry file's folder");
  const json t = parse_json(r.out);
  EXPECT_EQ(t["strategy"], "tool-direct");
  EXPECT_EQ(t["state"], "EXECUTE");
  EXPECT_EQ(t["verifications"].size(), 0u);
  EXPECT_FALSE(fs::exists(d / ".orch" / "memory" / "lessons" / (t["id"].get<std::string>() + ".md")));

  fs::rename(d / "tools" / "filestats.sh", d / ".orch" / "tools" / "filestats.sh");
  auto resumed = run_orch({"task", "run", "--resume", t["id"], "--json"}, d.path());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const json done = parse_json(resumed.out);
  EXPECT_EQ(done["state"], "DONE");
  EXPECT_HAS(done["summary"].get<std::string>(), R"("lines":3)");
}

// Without a model orch gives a tool only the files the request names: a
// tool-direct request that names none cannot run, and the trace is escalated
// with the reason (exit 3), no model asked.
TEST(CliTask, ToolDirectEscalatesWhenTheRequestGivesTheToolNoInput) {
  TempDir d;
  write_example_registry(d);
  auto r = run_orch({"task", "run", "quick: count the lines of the notes", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 3) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["strategy"], "tool-direct");
  EXPECT_EQ(t["state"], "ESCALATED");
  EXPECT_HAS(t["summary"].get<std::string>(), "names no file of the workspace for the input 'files'");
}

// A request the gate does not send tool-direct still runs through the model,
// registry or not — and still needs one configured.
TEST(CliTask, ARequestThatIsNotToolDirectStillUsesTheModel) {
  TempDir d;
  write_example_registry(d);
  write_file(d / "README.md", "one\n");
  auto unconfigured = run_orch({"task", "run", "fix the crash in the date parser"}, d.path());
  EXPECT_EQ(unconfigured.exit_code, 2) << unconfigured.out << unconfigured.err;
  EXPECT_HAS(unconfigured.err, "no models are configured");

  orch::testing::FakeLlmServer server("sk-task-run-123456");
  ASSERT_TRUE(server.started());
  write_fake_models(d, server);
  auto r = run_orch({"task", "run", "fix the crash in the date parser", "--json"}, d.path(),
                    {{"ORCH_TEST_TASK_KEY", server.api_key()}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["strategy"], "recall-execute-verify");
  EXPECT_EQ(t["state"], "DONE");
  EXPECT_EQ(server.requests().size(), 2u) << "execute and summarize";
}

// The attempts the execute step of a trace's run made, from `orch status --json`.
json execute_attempts(const TempDir& d, const std::string& run_id) {
  auto status = run_orch({"status", run_id, "--json"}, d.path());
  const json report = parse_json(status.out);
  for (const auto& s : report.value("steps", json::array()))
    if (s["id"] == "execute") return s["attempts"];
  return json::array();
}

// A model call that fails for its set-up — the key's variable not set, or the
// provider refusing the key — is not the work failing: no VERIFY, no retry, no
// close and no lesson. `task run` says what to fix (exit 2) and leaves the trace
// open, and `--resume` after the fix runs it to the end.
TEST(CliTask, ASetUpFailureIsNotRetriedNorLearntFromAndTheTraceResumes) {
  orch::testing::FakeLlmServer server("sk-task-run-123456");
  ASSERT_TRUE(server.started());
  TempDir d;
  write_fake_models(d, server);
  write_checklists(d, "    - {check: \"root cause named\", attest: true}\n");
  auto r = run_orch({"task", "run", "fix the crash in the date parser", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "set-up failure");
  EXPECT_HAS(r.err, "takes its key from $ORCH_TEST_TASK_KEY, which is not set");
  const json t = parse_json(r.out);
  EXPECT_EQ(t["state"], "EXECUTE") << "left open, not escalated";
  EXPECT_FALSE(t.contains("result") && !t["result"].is_null()) << t.dump(2);
  EXPECT_EQ(t["verifications"].size(), 0u) << "a set-up failure is no VERIFY";
  EXPECT_EQ(t["retries"], 0);
  EXPECT_HAS(r.err, fmt::format("orch task run --resume {}", t["id"].get<std::string>()));
  EXPECT_EQ(execute_attempts(d, t["run_id"]).size(), 1u) << "not retried";
  EXPECT_FALSE(fs::exists(d / ".orch" / "memory" / "lessons" / (t["id"].get<std::string>() + ".md")))
      << "no lesson harvested";

  // Fixed: the same trace goes on, and ends DONE.
  auto resumed = run_orch({"task", "run", "--resume", t["id"], "--json"}, d.path(),
                          {{"ORCH_TEST_TASK_KEY", server.api_key()}});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  const json done = parse_json(resumed.out);
  EXPECT_EQ(done["state"], "DONE");
  EXPECT_EQ(done["retries"], 0) << done.dump(2);
  expect_valid_trace(done);

  // A key the provider refuses (HTTP 401): one call, the status and the URL named.
  TempDir d2;
  write_fake_models(d2, server);
  server.reset_requests();
  auto refused = run_orch({"task", "run", "fix the crash in the date parser", "--json"}, d2.path(),
                          {{"ORCH_TEST_TASK_KEY", "sk-not-the-key-000000"}});
  ASSERT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_HAS(refused.err, fmt::format("answered HTTP 401 from {}/v1/chat/completions", server.url()));
  EXPECT_HAS(refused.err, "the key in $ORCH_TEST_TASK_KEY was refused");
  EXPECT_EQ(server.requests().size(), 1u) << "not retried: " << server.requests().dump(2);
  const json t2 = parse_json(refused.out);
  EXPECT_EQ(t2["state"], "EXECUTE");
  EXPECT_EQ(t2["verifications"].size(), 0u);
  EXPECT_FALSE(fs::exists(d2 / ".orch" / "memory" / "lessons" / (t2["id"].get<std::string>() + ".md")))
      << "no lesson harvested";
}

// A summary call that fails once is tried again: work that passed VERIFY is not
// escalated for one flaky call.
TEST(CliTask, AFailedSummaryIsTriedOnceMore) {
  TempDir d;
  write_scripted_worker(
      d, "case \"$1\" in *Summarise*) if [ ! -f once ]; then touch once; exit 1; fi ;; esac\n");
  write_checklists(d, "    - {check: \"root cause named\", attest: true}\n");
  auto r = run_orch({"task", "run", "fix the crash in the date parser", "--worker", "scripted", "--json"},
                    d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["state"], "DONE");
  EXPECT_TRUE(fs::exists(d / "once")) << "the first summary call did not fail";
  EXPECT_HAS(t["summary"].get<std::string>(), "did:");
}

// The trace's token budget is the run's: the engine charges every worker call
// to it and starts no call once it is spent (exit 4, the trace ESCALATED).
TEST(CliTask, RunEnforcesTheTraceBudgetOnEveryWorkerCall) {
  TempDir d;
  const std::string agent = (source_dir() / "tests" / "agents" / "fake_agent.py").string();
  write_file(
      d / ".orch" / "workers.yaml",
      fmt::format("workers:\n  coder:\n    argv: [python3, '{}', json, '{{prompt}}']\n    output: json\n"
                  "    result: result\n    usage: {{tokens_in: usage.input_tokens, tokens_out: "
                  "usage.output_tokens}}\n"
                  "    reserve_tokens: 150\n",
                  agent));
  write_file(d / ".orch" / "route" / "budgets.yaml",
             "version: 1\ntokens:\n  by_complexity: {trivial: 100, standard: 200, complex: 300}\n"
             "  by_intent: {research: 400}\nallocation:\n  base: 200\n"
             "  by_request_type: {query: 300, action: 500, workflow: 1000, research: 1500, audit: 800}\n"
             "  safety_buffer_percent: 20\n  chars_per_token: 4\n");
  write_checklists(d, "    - {check: \"root cause named\", attest: true}\n");
  auto r =
      run_orch({"task", "run", "fix the crash in the date parser", "--worker", "coder", "--json"}, d.path());
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  const json t = parse_json(r.out);
  EXPECT_EQ(t["state"], "ESCALATED");
  EXPECT_EQ(t["budget"]["tokens"], 200);
  EXPECT_EQ(t["budget"]["spent_tokens"], 150) << "execute spent 150; summarize's 150 no longer fit in 200";
  EXPECT_HAS(t["summary"].get<std::string>(), "budget");
  expect_valid_trace(t);
}

// Starts `orch task run` (output to out.txt) with a worker whose first call
// hangs in EXECUTE (and whose later calls answer), and waits until it hangs
// there. Returns its pid, or -1 if it did not get there.
pid_t start_slow_task(const TempDir& d) {
  write_file(d / "slow.sh",
             "#!/bin/sh\nif [ ! -f first.txt ]; then echo $$ > first.txt; sleep 30; fi\necho \"worked\"\n");
  fs::permissions(d / "slow.sh", fs::perms::owner_all);
  write_file(d / ".orch" / "workers.yaml",
             "workers:\n  slow:\n    argv: [./slow.sh, '{prompt}']\n    output: text\n");
  write_checklists(d, "    - {check: \"root cause named\", attest: true}\n");
  const pid_t pid = orch::testing::spawn_orch(
      {"task", "run", "fix the crash in the date parser", "--worker", "slow"}, d.path(), d / "out.txt");
  if (!orch::testing::wait_for([&] { return fs::exists(d / "first.txt"); }, 20000)) return -1;
  return pid;
}

// The id of the one open trace once it has entered EXECUTE ("" if it has not
// within 10 s): the trace follows the run within a turn of the engine (100 ms).
std::string wait_for_execute(const TempDir& d) {
  std::string id;
  orch::testing::wait_for(
      [&] {
        const json open = parse_json(run_orch({"task", "list", "--open", "--json"}, d.path()).out);
        if (open.size() != 1 || open[0]["state"] != "EXECUTE") return false;
        id = open[0]["id"];
        return true;
      },
      10000);
  return id;
}

// kill -9 in the middle of EXECUTE, then `task run --resume`: the engine
// resumes the run (the interrupted attempt is re-run) and the trace catches up,
// ending as a run that was never interrupted would.
TEST(CliTask, RunKilledMidExecuteIsResumedAndTheTraceCatchesUp) {
  TempDir d;
  const pid_t pid = start_slow_task(d);
  ASSERT_GT(pid, 0) << read_file(d / "out.txt");
  const std::string id = wait_for_execute(d);
  ASSERT_FALSE(id.empty()) << read_file(d / "out.txt");
  kill(pid, SIGKILL);
  orch::testing::wait_exit(pid);

  auto r = run_orch({"task", "run", "--resume", id, "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json t = parse_json(r.out);
  std::vector<std::string> states;
  for (const auto& tr : t["transitions"]) states.push_back(tr["state"]);
  EXPECT_EQ(states, (std::vector<std::string>{"CLASSIFY", "RECALL", "PLAN", "EXECUTE", "VERIFY", "SUMMARIZE",
                                              "DONE"}));
  EXPECT_EQ(t["retries"], 0) << "an interrupted attempt is not a VERIFY failure";
  expect_valid_trace(t);
  auto again = run_orch({"task", "run", "--resume", id}, d.path());
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_HAS(again.err, "is closed (DONE)");
}

// gc never abandons a trace whose run a live `task run` drives, however long
// its step takes; once that process is gone, the trace is stale like any other.
TEST(CliTask, GcLeavesATraceWhoseRunIsLiveAlone) {
  TempDir d;
  const pid_t pid = start_slow_task(d);
  ASSERT_GT(pid, 0) << read_file(d / "out.txt");
  const std::string id = wait_for_execute(d);
  ASSERT_FALSE(id.empty()) << read_file(d / "out.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto live = run_orch({"task", "gc", "--older-than", "10ms", "--json"}, d.path());
  EXPECT_EQ(live.exit_code, 0) << live.err;
  EXPECT_EQ(parse_json(live.out)["abandoned"], json::array()) << "the live task's trace was abandoned";
  kill(pid, SIGINT);
  EXPECT_EQ(orch::testing::wait_exit(pid), 130) << read_file(d / "out.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto dead = run_orch({"task", "gc", "--older-than", "10ms", "--json"}, d.path());
  EXPECT_EQ(dead.exit_code, 0) << dead.err;
  EXPECT_EQ(parse_json(dead.out)["abandoned"], json({id}));
}

// A burst of SIGTERMs in the middle of EXECUTE (a `timeout` that signals orch,
// then its group; an impatient Ctrl-C) stops the task once: exit 130 with the
// trace and the command that continues, never killed by a later signal of the
// burst while that is printed; the resume then finishes it.
TEST(CliTask, ABurstOfSignalsMidExecuteStopsTheTaskOnceAndItResumes) {
  TempDir d;
  const pid_t pid = start_slow_task(d);
  ASSERT_GT(pid, 0) << read_file(d / "out.txt");
  for (int i = 0; i < 300 && orch::testing::process_alive(pid); ++i) {
    kill(pid, SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(orch::testing::wait_exit(pid), 130) << read_file(d / "out.txt");
  const std::string out = read_file(d / "out.txt");
  const auto at = out.find("interrupted: continue with `orch task run --resume ");
  ASSERT_NE(at, std::string::npos) << out;
  const auto from = at + std::string("interrupted: continue with `orch task run --resume ").size();
  const std::string id = out.substr(from, out.find('`', from) - from);
  auto r = run_orch({"task", "run", "--resume", id, "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(parse_json(r.out)["state"], "DONE");
}

}  // namespace
}  // namespace orch
