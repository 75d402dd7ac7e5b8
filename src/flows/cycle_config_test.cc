// cycle.yaml: read with every problem at its line, defaults, paths, the schema
// as a net, the stored form, and the file `orch cycle init` writes.
#include "flows/cycle_config.h"

#include <gtest/gtest.h>

#include "testing/testing.h"
#include "util/json_schema.h"
#include "util/yaml_json.h"

namespace orch::flows {
namespace {

namespace fs = std::filesystem;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;

// A folder with a status file, where each test writes its cycle.yaml.
class CycleConfigTest : public ::testing::Test {
 protected:
  CycleConfigTest() { write_file(dir_ / "status.yaml", "- {id: add, file: src/add.c, state: stub}\n"); }

  fs::path cycle_path() const { return dir_ / "cycle.yaml"; }

  Expected<CycleConfig> load(const std::string& text) {
    write_file(cycle_path(), text);
    return load_cycle_config(cycle_path());
  }

  // The problems of `text`, which must not load.
  std::string problems(const std::string& text) {
    auto c = load(text);
    EXPECT_FALSE(c) << "loaded:\n" << text;
    return c ? std::string() : c.error().message;
  }

  // "DIR/cycle.yaml:LINE: " + rest.
  std::string at(int line, const std::string& rest) const {
    return cycle_path().string() + ":" + std::to_string(line) + ": " + rest;
  }

  TempDir dir_;
};

// The smallest cycle.yaml; `extra` goes at the end (top-level keys).
std::string minimal(const std::string& extra = "") {
  return "status: {file: status.yaml}\n"
         "lifecycle:\n"
         "  states: [stub, implemented]\n"
         "  stages:\n"
         "    implement:\n"
         "      move: stub -> implemented\n"
         "      worker:\n"
         "        command: ./implement.sh {file} {ids}\n"
         "      gate: cc -fsyntax-only {file}\n" +
         extra;
}

const char* const kFull =
    "name: proofs\n"                                   // 1
    "workspace: ws\n"                                  // 2
    "status:\n"                                        // 3
    "  file: items/status.yaml\n"                      // 4
    "  fields: {id: key, file: path, state: stage}\n"  // 5
    "lifecycle:\n"                                     // 6
    "  states: [nl_reviewed, bound, aligned, proved]\n"
    "  stages:\n"  // 8
    "    formalize:\n"
    "      move: nl_reviewed -> bound|aligned\n"  // 10
    "      worker: {worker: claude, prompt_file: prompts/formalize.md, attempts: 3, timeout: 20m}\n"
    "      gate: lake env lean {file}\n"  // 12
    "    prove:\n"
    "      move: aligned -> proved\n"  // 14
    "      worker:\n"
    "        command: ./prove.sh {file} {ids} {stage}\n"  // 16
    "        timeout: 90\n"
    "      gate: lake env lean {file} --id {id}\n"  // 18
    "plan: {model: planner, prompt: Plan the cycle.}\n"
    "review: {worker: reviewer, timeout: 1h30m}\n"  // 20
    "max_iterations: 20\n"
    "max_parallel: 4\n"
    "past_attempts: 3\n"
    "budget: {tokens: 2000000}\n"
    "scope: {ignore: [\".lake/**\", \"build/**\"]}\n"
    "workers: .orch/workers.yaml\n"
    "models: .orch/models.yaml\n";

void write_full_tree(const fs::path& dir) {
  write_file(dir / "ws" / "items" / "status.yaml", "- {key: a, path: A.lean, stage: bound}\n");
  write_file(dir / "ws" / ".orch" / "workers.yaml", "workers: {}\n");
  write_file(dir / "ws" / ".orch" / "models.yaml", "models: {}\n");
  write_file(dir / "prompts" / "formalize.md", "Formalize {{id}}.\n");
}

TEST_F(CycleConfigTest, AFullConfigIsReadWithEveryFieldAndItsPathsResolved) {
  write_full_tree(dir_.path());
  auto c = load(kFull);
  ASSERT_TRUE(c) << c.error().message;
  const fs::path dir = cycle_path().parent_path();
  EXPECT_EQ(c->file, cycle_path());
  EXPECT_EQ(c->name, "proofs");
  EXPECT_EQ(c->workspace, dir / "ws") << "relative to the cycle file's folder";
  EXPECT_EQ(c->status_file, dir / "ws" / "items" / "status.yaml") << "relative to the workspace";
  EXPECT_EQ(c->fields.id, "key");
  EXPECT_EQ(c->fields.file, "path");
  EXPECT_EQ(c->fields.state, "stage");
  EXPECT_EQ(c->lifecycle.states(), (std::vector<std::string>{"nl_reviewed", "bound", "aligned", "proved"}));
  EXPECT_TRUE(c->lifecycle.legal("nl_reviewed", "aligned"));
  ASSERT_EQ(c->stages.size(), 2u);
  const CycleStageConfig* formalize = c->stage("formalize");
  ASSERT_NE(formalize, nullptr);
  EXPECT_EQ(formalize->line, 9);
  EXPECT_EQ(formalize->worker.kind, RoleKind::Worker);
  EXPECT_EQ(formalize->worker.executor, "worker:claude");
  EXPECT_EQ(formalize->worker.prompt, "Formalize {{id}}.\n") << "the prompt file, relative to the cycle file";
  EXPECT_EQ(formalize->worker.attempts, 3);
  EXPECT_EQ(formalize->worker.timeout_ms, 20 * 60 * 1000);
  EXPECT_EQ(formalize->worker.line, 11);
  EXPECT_EQ(formalize->gate, "lake env lean {file}");
  const CycleStageConfig* prove = c->stage("prove");
  ASSERT_NE(prove, nullptr);
  EXPECT_EQ(prove->worker.kind, RoleKind::Command);
  EXPECT_EQ(prove->worker.command, "./prove.sh {file} {ids} {stage}");
  EXPECT_EQ(prove->worker.executor, "");
  EXPECT_EQ(prove->worker.timeout_ms, 90 * 1000) << "a bare number is seconds, as in a plan";
  EXPECT_EQ(prove->worker.line, 15) << "the line of its key, not of the block under it";
  EXPECT_EQ(prove->gate, "lake env lean {file} --id {id}");
  EXPECT_EQ(c->stage("polish"), nullptr);
  ASSERT_TRUE(c->plan);
  EXPECT_EQ(c->plan->kind, RoleKind::Model);
  EXPECT_EQ(c->plan->executor, "llm:planner");
  EXPECT_EQ(c->plan->prompt, "Plan the cycle.");
  EXPECT_EQ(c->plan->attempts, 1);
  ASSERT_TRUE(c->review);
  EXPECT_EQ(c->review->executor, "worker:reviewer");
  EXPECT_EQ(c->review->attempts, 2) << "a malformed review gets one repair";
  EXPECT_EQ(c->review->timeout_ms, 90 * 60 * 1000);
  EXPECT_EQ(c->review->line, 20);
  EXPECT_EQ(c->max_iterations, 20);
  EXPECT_EQ(c->max_parallel, 4);
  EXPECT_EQ(c->past_attempts, 3);
  EXPECT_EQ(c->budget_tokens, 2000000);
  EXPECT_EQ(c->scope_ignore, (std::vector<std::string>{".lake/**", "build/**"}));
  EXPECT_EQ(c->workers_file, (dir / "ws" / ".orch" / "workers.yaml").string()) << "relative to the workspace";
  EXPECT_EQ(c->models_file, (dir / "ws" / ".orch" / "models.yaml").string());
}

TEST_F(CycleConfigTest, DefaultsFillWhatTheFileLeavesOut) {
  auto c = load(minimal("plan:\nreview:\n"));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->name, "cycle") << "the file's stem";
  EXPECT_EQ(c->workspace, cycle_path().parent_path()) << "the cycle file's folder";
  EXPECT_EQ(c->status_file, cycle_path().parent_path() / "status.yaml");
  EXPECT_EQ(c->fields.id, "id");
  EXPECT_EQ(c->fields.file, "file");
  EXPECT_EQ(c->fields.state, "state");
  ASSERT_EQ(c->stages.size(), 1u);
  EXPECT_EQ(c->stages[0].worker.attempts, 1);
  EXPECT_FALSE(c->stages[0].worker.timeout_ms);
  EXPECT_EQ(c->stages[0].worker.prompt, "");
  EXPECT_FALSE(c->plan) << "an empty value is a key left out";
  EXPECT_FALSE(c->review) << "gate-only";
  EXPECT_EQ(c->max_iterations, 10);
  EXPECT_EQ(c->max_parallel, 8);
  EXPECT_EQ(c->past_attempts, 1);
  EXPECT_FALSE(c->budget_tokens);
  EXPECT_TRUE(c->scope_ignore.empty());
  EXPECT_EQ(c->workers_file, "");
  EXPECT_EQ(c->models_file, "");

  auto gate_only = load(minimal("review: gate-only\n"));
  ASSERT_TRUE(gate_only) << gate_only.error().message;
  EXPECT_FALSE(gate_only->review);
  auto review = load(minimal("review:\n  command: ./review.sh\n  attempts: 1\n"));
  ASSERT_TRUE(review) << review.error().message;
  ASSERT_TRUE(review->review);
  EXPECT_EQ(review->review->kind, RoleKind::Command);
  EXPECT_EQ(review->review->attempts, 1) << "the file's word wins over the review's default of 2";
}

TEST_F(CycleConfigTest, AnUnknownKeyAnywhereIsNamedWithASuggestion) {
  const std::string m = problems(
      "max_iteration: 3\n"  // 1
      "status: {file: status.yaml, feilds: {}}\n"
      "lifecycle:\n"  // 3
      "  states: [stub, implemented]\n"
      "  stages:\n"  // 5
      "    implement:\n"
      "      move: stub -> implemented\n"  // 7
      "      worker: {command: make, atempts: 2}\n"
      "      gate: cc {file}\n"  // 9
      "      gates: cc {file}\n");
  EXPECT_HAS(m, at(1, "max_iteration: unknown key (did you mean 'max_iterations'?)"));
  EXPECT_HAS(m, at(2, "status.feilds: unknown key (did you mean 'fields'?)"));
  EXPECT_HAS(m, at(8, "lifecycle.stages.implement.worker.atempts: unknown key (did you mean 'attempts'?)"));
  EXPECT_HAS(m, at(10, "lifecycle.stages.implement.gates: unknown key (did you mean 'gate'?)"));
}

TEST_F(CycleConfigTest, AStageNeedsAMoveAWorkerAndAGate) {
  const std::string m = problems(
      "status: {file: status.yaml}\n"
      "lifecycle:\n"
      "  states: [stub, implemented, tested]\n"
      "  stages:\n"
      "    implement:\n"  // 5
      "      move: stub -> implemented\n"
      "      worker: {command: make}\n"
      "    test:\n"  // 8
      "      worker: {command: make test}\n"
      "      gate: make check\n"
      "    polish:\n"  // 11
      "      move: implemented -> tested\n"
      "      gate: make check\n");
  EXPECT_HAS(m, at(5, "lifecycle.stages.implement.gate: missing: the shell command that decides"));
  EXPECT_HAS(m, at(8, "lifecycle.stages.test.move: missing: FROM -> TO"));
  EXPECT_HAS(m, at(11, "lifecycle.stages.polish.worker: missing: who does the stage's work"));
}

TEST_F(CycleConfigTest, AModelCannotBeAStagesWorker) {
  const std::string m = problems(
      "status: {file: status.yaml}\n"
      "lifecycle:\n"
      "  states: [stub, implemented]\n"
      "  stages:\n"
      "    implement:\n"
      "      move: stub -> implemented\n"
      "      worker:\n"
      "        model: fast\n"  // 8
      "      gate: cc {file}\n"
      "plan: {model: fast}\n");
  EXPECT_HAS(
      m, at(8, "lifecycle.stages.implement.worker: a model cannot edit a file: use a command or a worker"));
  EXPECT_EQ(m.find("plan"), std::string::npos) << "a model may plan";
}

TEST_F(CycleConfigTest, ALifecycleThatDoesNotHoldIsReportedAtItsLines) {
  const std::string m = problems(
      "status: {file: status.yaml}\n"
      "lifecycle:\n"
      "  states:\n"
      "    - stub\n"
      "    - implemented\n"
      "    - stub\n"  // 6
      "  stages:\n"
      "    implement:\n"
      "      move: stub => implemented\n"  // 9
      "      worker: {command: make}\n"
      "      gate: cc {file}\n"
      "    test:\n"
      "      move: implemented -> tsted\n"  // 13
      "      worker: {command: make}\n"
      "      gate: cc {file}\n");
  EXPECT_HAS(m, at(6, "lifecycle.states[2]: 'stub' is listed twice"));
  EXPECT_HAS(m, at(9, "lifecycle.stages.implement: must be \"FROM -> TO\""));
  EXPECT_HAS(m, at(13, "lifecycle.stages.test: 'tsted' is not a state of lifecycle.states"));
  const std::string none = problems("status: {file: status.yaml}\nlifecycle: {states: [a]}\n");
  EXPECT_HAS(none, at(2, "lifecycle.stages: missing"));
}

TEST_F(CycleConfigTest, TheFormsOfARoleAreChecked) {
  write_file(dir_ / "brief.md", "Do it.\n");
  const std::string m =
      problems(minimal("plan:\n"  // 10
                       "  worker: claude\n"
                       "  prompt: Plan.\n"  // 12
                       "  prompt_file: brief.md\n"
                       "review:\n"  // 14
                       "  command: ./review.sh\n"
                       "  prompt: Review.\n"  // 16
                       "  attempts: 11\n"
                       "  timeout: 5x\n"));  // 18
  EXPECT_HAS(m, at(13, "plan: give 'prompt' or 'prompt_file', not both"));
  EXPECT_HAS(m, at(16, "review.prompt: a command takes no prompt"));
  EXPECT_HAS(m, at(17, "review.attempts: 11 is more than the most allowed, 10"));
  EXPECT_HAS(m, at(18, "review.timeout: bad duration '5x'"));

  const std::string kinds =
      problems(minimal("plan: {worker: a, model: b}\n"  // 10
                       "review: {prompt: Review.}\n"))  // 11
      ;
  EXPECT_HAS(kinds, at(10, "plan: give one of 'command', 'worker' and 'model', not worker and model"));
  EXPECT_HAS(kinds, at(11, "review: needs one of 'command: ...'"));

  const std::string empty = problems(
      "status: {file: status.yaml}\n"
      "lifecycle:\n"
      "  states: [stub, implemented]\n"
      "  stages:\n"
      "    implement:\n"
      "      move: stub -> implemented\n"
      "      worker: {command: ''}\n"  // 7
      "      gate: cc {file}\n"
      "plan: {worker: w, prompt_file: prompts/none.md, timeout: 0}\n");  // 9
  EXPECT_HAS(empty, at(7, "lifecycle.stages.implement.worker.command: must be a non-empty string"));
  EXPECT_HAS(empty, at(9, "plan.prompt_file: 'prompts/none.md': "));
  EXPECT_HAS(empty, at(9, "plan.timeout: '0' must be more than 0"));
}

TEST_F(CycleConfigTest, ReviewIsGateOnlyOrARole) {
  const std::string m = problems(minimal("review: gate_only\n"));
  EXPECT_HAS(m, at(10,
                   "review: must be 'gate-only' or a role (command, worker or model), not 'gate_only' (did "
                   "you mean 'gate-only'?)"));
  EXPECT_HAS(problems(minimal("review: [a]\n")), at(10, "review: must be a mapping"));
}

TEST_F(CycleConfigTest, LimitsAreBounded) {
  const std::string m =
      problems(minimal("max_iterations: 0\n"  // 10
                       "max_parallel: 1000\n"
                       "past_attempts: -1\n"  // 12
                       "budget: {tokens: 0}\n"
                       "scope: {ignore: [3, '']}\n"));  // 14
  EXPECT_HAS(m, at(10, "max_iterations: must be a whole number of at least 1, not 0"));
  EXPECT_HAS(m, at(11, "max_parallel: 1000 is more than the most allowed, 256"));
  EXPECT_HAS(m, at(12, "past_attempts: must be a whole number of at least 0, not -1"));
  EXPECT_HAS(m, at(13, "budget.tokens: must be a whole number of at least 1, not 0"));
  EXPECT_HAS(m, at(14, "scope.ignore[0]: must be a non-empty string"));
  EXPECT_HAS(m, at(14, "scope.ignore[1]: must be a non-empty string"));
  EXPECT_HAS(problems(minimal("budget: {}\n")), at(10, "budget.tokens: missing"));
  EXPECT_HAS(problems(minimal("max_iterations: 1001\n")),
             at(10, "max_iterations: 1001 is more than the most"));
  auto zero = load(minimal("past_attempts: 0\nmax_iterations: 1000\n"));
  ASSERT_TRUE(zero) << zero.error().message;
  EXPECT_EQ(zero->past_attempts, 0);
}

TEST_F(CycleConfigTest, TheStatusFileIsNamedAndExists) {
  const std::string none = problems(
      "status:\n"
      "  fields: {id: key}\n"
      "lifecycle: {states: [a, b], stages: {go: {move: a -> b, worker: {command: make}, gate: make}}}\n");
  EXPECT_HAS(none, at(2, "status.file: missing: the status file, relative to the workspace"));
  const std::string absent = problems(
      "status: {file: items.yaml}\n"
      "lifecycle: {states: [a, b], stages: {go: {move: a -> b, worker: {command: make}, gate: make}}}\n");
  EXPECT_HAS(absent, at(1, "status.file: 'items.yaml' does not exist (relative to the workspace"));
  EXPECT_HAS(problems("lifecycle: {states: [a]}\n"), at(1, "status: missing"));
  const std::string same = problems(
      "status: {file: status.yaml, fields: {id: x, file: x}}\n"
      "lifecycle: {states: [a, b], stages: {go: {move: a -> b, worker: {command: make}, gate: make}}}\n");
  EXPECT_HAS(same, at(1, "status.fields: id, file and state must be three different fields"));
  const std::string elsewhere = problems("workspace: nowhere\n" + minimal("workers: w.yaml\n"));
  EXPECT_HAS(elsewhere, at(1, "workspace: 'nowhere' is not a folder"));
}

TEST_F(CycleConfigTest, TheWorkersAndModelsFilesGivenMustExist) {
  const std::string m = problems(minimal("workers: .orch/workers.yaml\nmodels: models.yaml\n"));
  EXPECT_HAS(m, at(10, "workers: '.orch/workers.yaml' is not a file (relative to the workspace"));
  EXPECT_HAS(m, at(11, "models: 'models.yaml' is not a file"));
}

TEST_F(CycleConfigTest, TheSchemaIsANetUnderTheReader) {
  // The lifecycle takes any name for a state; the schema, the file's contract,
  // wants one word, which a move can name.
  const std::string m = problems(
      "status: {file: status.yaml}\n"
      "lifecycle:\n"
      "  states:\n"
      "    - stub\n"
      "    - in review\n"  // 5
      "    - implemented\n"
      "  stages:\n"
      "    implement:\n"
      "      move: stub -> implemented\n"
      "      worker: {command: make}\n"
      "      gate: cc {file}\n");
  EXPECT_HAS(m, at(5, "/lifecycle/states/1: schemas/cycle.schema.json: "));
}

TEST_F(CycleConfigTest, TheSchemaAgreesWithTheReader) {
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / "cycle.schema.json").string());
  ASSERT_TRUE(schema) << schema.error().message;
  auto valid = read_yaml_json(kFull);
  ASSERT_TRUE(valid);
  EXPECT_TRUE(schema->validate(*valid).empty());
  // What the reader refuses, the schema refuses too.
  for (
      const char* bad : {
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a", "b"], "stages": {"go": {"move": "a -> b", "worker": {"model": "m"}, "gate": "g"}}}})",
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a", "b"], "stages": {"go": {"move": "a -> b", "worker": {"command": "c"}}}}})",
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a", "b"], "stages": {"go": {"move": "a => b", "worker": {"command": "c"}, "gate": "g"}}}})",
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a"], "stages": {"go": {"move": "a -> a", "worker": {"command": "c"}, "gate": "g"}}}, "review": "gate_only"})",
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a"], "stages": {"go": {"move": "a -> a", "worker": {"command": "c"}, "gate": "g"}}}, "plan": {"worker": "w", "prompt": "p", "prompt_file": "f"}})",
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a"], "stages": {"go": {"move": "a -> a", "worker": {"command": "c", "prompt": "p"}, "gate": "g"}}}})",
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a"], "stages": {"go": {"move": "a -> a", "worker": {"command": "c"}, "gate": "g"}}}, "max_parallel": 257})",
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a"], "stages": {"go": {"move": "a -> a", "worker": {"command": "c"}, "gate": "g"}}}, "budget": {}})",
          R"({"status": {}, "lifecycle": {"states": ["a"], "stages": {"go": {"move": "a -> a", "worker": {"command": "c"}, "gate": "g"}}}})",
          R"({"status": {"file": "s"}, "lifecycle": {"states": ["a"], "stages": {"go": {"move": "a -> a", "worker": {"command": "c"}, "gate": "g"}}}, "colour": 1})",
      })
    EXPECT_FALSE(schema->validate(nlohmann::json::parse(bad)).empty()) << bad;
}

TEST_F(CycleConfigTest, TheConfigRoundTripsThroughJson) {
  write_full_tree(dir_.path());
  auto c = load(kFull);
  ASSERT_TRUE(c) << c.error().message;
  const nlohmann::json stored = cycle_config_json(*c);
  auto back = cycle_config_from_json(nlohmann::json::parse(stored.dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(cycle_config_json(*back), stored);
  EXPECT_EQ(back->file, c->file);
  EXPECT_EQ(back->workspace, c->workspace);
  EXPECT_EQ(back->status_file, c->status_file);
  EXPECT_EQ(back->fields.state, "stage");
  EXPECT_EQ(back->lifecycle.states(), c->lifecycle.states());
  EXPECT_TRUE(back->lifecycle.legal("nl_reviewed", "bound"));
  ASSERT_EQ(back->stages.size(), 2u);
  EXPECT_EQ(back->stage("formalize")->worker.prompt, "Formalize {{id}}.\n");
  EXPECT_EQ(back->stage("formalize")->worker.timeout_ms, 20 * 60 * 1000);
  EXPECT_EQ(back->stage("formalize")->line, 9);
  EXPECT_EQ(back->stage("prove")->worker.kind, RoleKind::Command);
  EXPECT_EQ(back->plan->kind, RoleKind::Model);
  EXPECT_EQ(back->review->attempts, 2);
  EXPECT_EQ(back->budget_tokens, 2000000);
  EXPECT_EQ(back->scope_ignore, c->scope_ignore);
  EXPECT_EQ(back->workers_file, c->workers_file);
  EXPECT_EQ(back->models_file, c->models_file);
  EXPECT_EQ(back->past_attempts, 3);

  // The unset optionals too.
  auto minimal_config = load(minimal());
  ASSERT_TRUE(minimal_config) << minimal_config.error().message;
  auto again = cycle_config_from_json(cycle_config_json(*minimal_config));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(again->plan);
  EXPECT_FALSE(again->review);
  EXPECT_FALSE(again->budget_tokens);
  EXPECT_FALSE(again->stages[0].worker.timeout_ms);
  EXPECT_EQ(cycle_config_json(*again), cycle_config_json(*minimal_config));

  // A damaged record is a Store error, not a crash.
  nlohmann::json damaged = stored;
  damaged["stages"][0]["worker"]["kind"] = "robot";
  auto refused = cycle_config_from_json(damaged);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::Store);
  damaged = stored;
  damaged["stages"].erase(1);
  EXPECT_FALSE(cycle_config_from_json(damaged));
  damaged = stored;
  damaged.erase("max_parallel");
  EXPECT_FALSE(cycle_config_from_json(damaged));
}

TEST_F(CycleConfigTest, TheInitTextLoadsAndIsCommented) {
  const std::string text = cycle_init_text();
  auto c = load(text);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->stages.size(), 1u);
  EXPECT_EQ(c->stages[0].gate, "cc -fsyntax-only -Wall {file}");
  EXPECT_EQ(c->stages[0].worker.kind, RoleKind::Command);
  EXPECT_FALSE(c->review);
  EXPECT_HAS(text, "# worker: claude");
  // Every key the reader knows is explained in the text, set or commented out.
  for (const char* key :
       {"name:",   "workspace:", "status:", "file:",    "fields:",         "lifecycle:",    "states:",
        "stages:", "move:",      "worker:", "command:", "prompt_file:",    "attempts:",     "timeout:",
        "gate:",   "plan:",      "prompt:", "review:",  "max_iterations:", "max_parallel:", "past_attempts:",
        "budget:", "scope:",     "ignore:", "workers:", "models:"})
    EXPECT_HAS(text, key);
}

TEST_F(CycleConfigTest, AMissingFileIsNotFound) {
  auto c = load_cycle_config(dir_ / "none.yaml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::NotFound);
  auto syntax = load("status: [unclosed\n");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().code, ErrorCode::InvalidInput);
  EXPECT_HAS(syntax.error().message, cycle_path().string() + ":");
}

}  // namespace
}  // namespace orch::flows
