// The plans of one cycle of `orch cycle`: the jobs' slugs and phases, the work
// plan as the engine loads it, what a command becomes, the review's schema.
#include "flows/cycle_plans.h"

#include <gtest/gtest.h>

#include <set>

#include "flows/plan_template.h"
#include "flows/stage_plan.h"
#include "orch/engine.h"
#include "orch/executor.h"
#include "orch/placeholder.h"
#include "orch/validate.h"
#include "testing/testing.h"
#include "util/json_schema.h"

namespace orch::flows::cycle_plans_test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using orch::testing::TempDir;

// Stage names that sort the other way round from the lifecycle's order.
Lifecycle two_stages() {
  auto l = Lifecycle::from_json(json::parse(R"({
    "states": ["stub", "implemented", "documented"],
    "stages": {"document": "implemented -> documented", "implement": "stub -> implemented"}})"));
  EXPECT_TRUE(l) << (l ? "" : l.error().message);
  return l ? *l : Lifecycle{};
}

CycleTask task(const std::string& id, const std::string& file, const std::string& state) {
  return CycleTask{id, state == "stub" ? "implement" : "document", file, state, {}};
}

CycleRole command_role(const std::string& command) {
  CycleRole r;
  r.kind = RoleKind::Command;
  r.command = command;
  return r;
}

// A config of the two-stage lifecycle, its workspace `ws`.
CycleConfig two_stage_config(const fs::path& ws, const std::string& worker, const std::string& gate) {
  CycleConfig c;
  c.file = ws / "cycle.yaml";
  c.name = "t";
  c.workspace = ws;
  c.status_file = ws / "status.yaml";
  c.lifecycle = two_stages();
  c.stages.push_back(CycleStageConfig{"document", command_role(worker), gate, 0});
  c.stages.push_back(CycleStageConfig{"implement", command_role(worker), gate, 0});
  return c;
}

// The text a plan string stands for: its template's literal segments.
std::string literal_of(const std::string& text) {
  auto t = parse_template(text);
  EXPECT_TRUE(t) << text << ": " << (t ? "" : t.error().message);
  if (!t) return {};
  EXPECT_FALSE(t->has_placeholders()) << text;
  std::string out;
  for (const Segment& s : t->segments) out += s.text;
  return out;
}

// The work plan of `jobs`, loaded and validated as the driver loads it.
Expected<Plan> load_work_plan(const CycleConfig& config, const std::vector<CycleJob>& jobs) {
  CyclePlanContext ctx{&config, "r1", 1, CyclePaths{config.workspace / ".orch" / "cycles" / "r1"}, -1};
  const ExecutorRegistry registry = ExecutorRegistry::with_builtins();
  return load_built_plan(config.workspace, registry, work_phase_plan(ctx, jobs, "").dump(), "work.json",
                         "the work plan");
}

TEST(CyclePlans, TwoFilesWithTheSameSlugGetDifferentOnes) {
  const std::vector<FileJob> files = {{"a/b.c", {task("x", "a/b.c", "stub")}},
                                      {"a-b.c", {task("y", "a-b.c", "stub")}},
                                      {"a b.c", {task("z", "a b.c", "stub")}}};
  const auto jobs = cycle_jobs(files, two_stages());
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].slug, "a-b.c");
  EXPECT_EQ(jobs[0].file, "a/b.c");
  std::set<std::string> slugs;
  for (const CycleJob& j : jobs) slugs.insert(j.slug);
  EXPECT_EQ(slugs.size(), 3u) << jobs[0].slug << " " << jobs[1].slug << " " << jobs[2].slug;
}

TEST(CyclePlans, EverySlugMakesStepIdsThePlanValidatorAccepts) {
  TempDir ws;
  const CycleConfig config = two_stage_config(ws.path(), "true", "true");
  // File names that are not step ids as they are: a path, spaces, a leading
  // dot, a shell word, a part a placeholder would read ("json", "result"), an
  // empty part between dots, a trailing dot, a long path.
  const std::vector<std::string> names = {"src/add.c",
                                          "a b.c",
                                          ".hidden.c",
                                          "$(rm -rf ~).c",
                                          "package.json",
                                          "result.txt",
                                          "json",
                                          "a..b.c",
                                          "notes.",
                                          "_x.c",
                                          std::string(150, 'd') + ".c"};
  std::vector<FileJob> files;
  for (std::size_t i = 0; i < names.size(); ++i)
    files.push_back({names[i], {task("i" + std::to_string(i), names[i], "stub")}});
  const auto jobs = cycle_jobs(files, two_stages());
  ASSERT_EQ(jobs.size(), names.size());
  EXPECT_EQ(jobs[0].slug, "src-add.c");
  EXPECT_EQ(jobs[2].slug, "hidden.c");
  EXPECT_EQ(jobs[4].slug, "package-json");
  EXPECT_EQ(jobs[5].slug, "result-txt");
  EXPECT_EQ(jobs[6].slug, "json-file");
  EXPECT_EQ(jobs[7].slug, "a-.b.c");
  EXPECT_EQ(jobs[8].slug, "notes-");
  EXPECT_EQ(jobs[10].slug.size(), 80u);
  auto plan = load_work_plan(config, jobs);
  ASSERT_TRUE(plan) << plan.error().message;
  for (const CycleJob& job : jobs) {
    EXPECT_NE(plan->find_step(worker_step_id(job, 1)), nullptr) << job.file;
    EXPECT_NE(plan->find_step(gate_step_id(job, 1, 0)), nullptr) << job.file;
  }
  // The other step ids are built from the same slug.
  const ExecutorRegistry registry = ExecutorRegistry::with_builtins();
  for (const CycleJob& job : jobs) {
    for (const std::string& id : {review_step_id(job), verify_step_id(job, 0)}) {
      Plan one;
      Step s;
      s.id = id;
      s.sh = "true";
      one.steps.push_back(s);
      EXPECT_TRUE(validate_plan(one, validate_options_for(ws.path(), "", registry)).empty()) << id;
    }
  }
}

TEST(CyclePlans, PhasesFollowTheLifecycleNotTheStagesNames) {
  // The document task comes first in the file and its stage's name sorts first:
  // implement is still phase 1.
  const std::vector<FileJob> files = {
      {"f.c",
       {task("doc", "f.c", "implemented"), task("impl", "f.c", "stub"), task("impl2", "f.c", "stub")}}};
  const auto jobs = cycle_jobs(files, two_stages());
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].phases.size(), 2u);
  EXPECT_EQ(jobs[0].phases[0].number, 1);
  EXPECT_EQ(jobs[0].phases[0].stage, "implement");
  EXPECT_EQ(jobs[0].phases[0].tasks, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(jobs[0].phases[1].number, 2);
  EXPECT_EQ(jobs[0].phases[1].stage, "document");
  EXPECT_EQ(jobs[0].phases[1].tasks, (std::vector<std::size_t>{0}));

  // A job with only the later stage's tasks has one phase, numbered 1.
  const auto only = cycle_jobs({{"g.c", {task("doc", "g.c", "implemented")}}}, two_stages());
  ASSERT_EQ(only[0].phases.size(), 1u);
  EXPECT_EQ(only[0].phases[0].number, 1);
  EXPECT_EQ(only[0].phases[0].stage, "document");
}

TEST(CyclePlans, APhaseRunsOnlyAfterEveryGateOfThePhaseBefore) {
  TempDir ws;
  const CycleConfig config = two_stage_config(ws.path(), "true", "true");
  const auto jobs = cycle_jobs(
      {{"f.c",
        {task("doc", "f.c", "implemented"), task("impl", "f.c", "stub"), task("impl2", "f.c", "stub")}},
       {"g.c", {task("other", "g.c", "stub")}}},
      two_stages());
  auto plan = load_work_plan(config, jobs);
  ASSERT_TRUE(plan) << plan.error().message;
  const CycleJob& f = jobs[0];
  const Step* phase1 = plan->find_step(worker_step_id(f, 1));
  const Step* phase2 = plan->find_step(worker_step_id(f, 2));
  ASSERT_NE(phase1, nullptr);
  ASSERT_NE(phase2, nullptr);
  EXPECT_TRUE(phase1->deps.empty());
  EXPECT_EQ(phase2->deps, (std::vector<std::string>{gate_step_id(f, 1, 1), gate_step_id(f, 1, 2)}));
  EXPECT_EQ(phase2->deps, (std::vector<std::string>{"f.c.gate-1.2", "f.c.gate-1.3"}));
  // Each gate depends on its phase's worker only; the other job does not wait.
  for (std::size_t i : {1u, 2u}) {
    const Step* gate = plan->find_step(gate_step_id(f, 1, i));
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->deps, (std::vector<std::string>{worker_step_id(f, 1)}));
  }
  EXPECT_EQ(plan->find_step(gate_step_id(f, 2, 0))->deps, (std::vector<std::string>{worker_step_id(f, 2)}));
  EXPECT_TRUE(plan->find_step(worker_step_id(jobs[1], 1))->deps.empty());
  // The worker writes its own file only.
  EXPECT_EQ(phase2->writes, (std::vector<std::string>{"f.c"}));
}

TEST(CyclePlans, ACommandReachesThePlanLiterallyWithItsPlaceholdersAsQuotedVariables) {
  TempDir ws;
  const CycleConfig config =
      two_stage_config(ws.path(), "echo ${HOME} {file} {ids} {stage} | awk '{print $1}'",
                       "test -s {file} && grep -q {id} {file} # ${steps.x.result}");
  const std::string file = "odd ${x} $(true).c";
  const auto jobs = cycle_jobs({{file, {task("a", file, "stub"), task("b", file, "stub")}}}, two_stages());
  auto plan = load_work_plan(config, jobs);
  ASSERT_TRUE(plan) << plan.error().message;
  const Step* worker = plan->find_step(worker_step_id(jobs[0], 1));
  ASSERT_NE(worker, nullptr);
  ASSERT_TRUE(worker->sh);
  EXPECT_EQ(literal_of(*worker->sh),
            R"(echo ${HOME} "$ORCH_CYCLE_FILE" "$ORCH_CYCLE_IDS" "$ORCH_CYCLE_STAGE" | awk '{print $1}')");
  EXPECT_EQ(literal_of(worker->env.at("ORCH_CYCLE_FILE")), file);
  EXPECT_EQ(literal_of(worker->env.at("ORCH_CYCLE_IDS")), "a b");
  EXPECT_EQ(literal_of(worker->env.at("ORCH_CYCLE_STAGE")), "implement");
  const Step* gate = plan->find_step(gate_step_id(jobs[0], 1, 1));
  ASSERT_NE(gate, nullptr);
  ASSERT_TRUE(gate->sh);
  EXPECT_EQ(
      literal_of(*gate->sh),
      R"(test -s "$ORCH_CYCLE_FILE" && grep -q "$ORCH_CYCLE_ID" "$ORCH_CYCLE_FILE" # ${steps.x.result})");
  EXPECT_EQ(literal_of(gate->env.at("ORCH_CYCLE_ID")), "b");
  EXPECT_EQ(literal_of(gate->env.at("ORCH_CYCLE_FILE")), file);
}

TEST(CyclePlans, TheMilestonesSchemaTakesTheJobsIdsAndTheLifecyclesWordsOnly) {
  const auto jobs =
      cycle_jobs({{"f.c", {task("a", "f.c", "stub"), task("b", "f.c", "implemented")}}}, two_stages());
  auto schema = JsonSchema::parse(milestones_schema(jobs[0], two_stages()));
  ASSERT_TRUE(schema) << schema.error().message;
  auto errors = [&](const char* text) { return schema->validate(json::parse(text)); };
  EXPECT_TRUE(errors(R"({"milestones": [
      {"id": "a", "transition": "implemented", "accepted": true, "rollback_required": false,
       "evidence": "compiles", "follow_up": ""},
      {"id": "b", "transition": "no-change", "accepted": false}]})")
                  .empty());
  EXPECT_TRUE(errors(R"({"milestones": []})").empty());
  EXPECT_FALSE(
      errors(R"({"milestones": [{"id": "c", "transition": "implemented", "accepted": true}]})").empty())
      << "an id of another job";
  EXPECT_FALSE(errors(R"({"milestones": [{"id": "a", "transition": "proved", "accepted": true}]})").empty())
      << "a word of no lifecycle";
  EXPECT_FALSE(
      errors(R"({"milestones": [{"id": "a", "transition": "rejected-by-scheduler", "accepted": true}]})")
          .empty())
      << "the writer's word, not a reviewer's";
  EXPECT_FALSE(errors(R"({"milestones": [{"id": "a", "transition": "implemented"}]})").empty())
      << "no accepted";
  EXPECT_FALSE(
      errors(R"({"milestones": [{"id": "a", "transition": "implemented", "accepted": "yes"}]})").empty());
  EXPECT_FALSE(
      errors(R"({"milestones": [{"id": "a", "transition": "implemented", "accepted": true, "extra": 1}]})")
          .empty());
  EXPECT_FALSE(errors(R"({"milestone": []})").empty());
}

TEST(CyclePlans, AGateAsRunHasItsPlaceholdersFilledAndOtherBracesLeft) {
  EXPECT_EQ(gate_as_run("cc -fsyntax-only {file}", "src/a.c", "add"), "cc -fsyntax-only src/a.c");
  EXPECT_EQ(gate_as_run("grep -q {id} {file} && test {id} != {file}", "a.txt", "x"),
            "grep -q x a.txt && test x != a.txt");
  EXPECT_EQ(gate_as_run("awk '{print $1}' {file} ${HOME}", "f", "i"), "awk '{print $1}' f ${HOME}");
  EXPECT_EQ(gate_as_run("make check", "f", "i"), "make check");
  // A file whose name holds a placeholder is filled in once, as it is.
  EXPECT_EQ(gate_as_run("check {file} {id}", "odd{id}.c", "x"), "check odd{id}.c x");
}

}  // namespace
}  // namespace orch::flows::cycle_plans_test
