#include "flows/cycle_plans.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "flows/cycle_doc.h"
#include "flows/plan_template.h"
#include "flows/stage_plan.h"
#include "util/json_text.h"
#include "util/read_file.h"
#include "util/strings.h"

namespace orch::flows {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::string read_text_or_empty(const fs::path& path) {
  auto text = read_file_text(path);
  return text ? *text : std::string();
}

// A file's name as a step id's part: [A-Za-z0-9_.-], starting with a letter or
// digit, at most 80 characters, with no dot-separated part a placeholder would
// stop at (plan validation refuses those ids): an empty one ("a..b", "notes.")
// or "result" or "json" ("package.json") is joined to the part before with '-'.
std::string slug_of(const std::string& file) {
  std::string s;
  for (char ch : file) {
    const bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-';
    s += ok ? ch : '-';
  }
  while (!s.empty() && !std::isalnum(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  if (s.size() > 80) s = s.substr(s.size() - 80);
  while (!s.empty() && !std::isalnum(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  if (s.empty()) return "job";
  auto unnamable = [](std::string_view part) { return part.empty() || part == "result" || part == "json"; };
  std::vector<std::string> parts;
  for (std::size_t at = 0;;) {
    const std::size_t dot = s.find('.', at);
    std::string part = s.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    if (!parts.empty() && (unnamable(part) || unnamable(parts.back())))
      parts.back() += "-" + part;
    else
      parts.push_back(std::move(part));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  if (unnamable(parts.back())) parts.back() += "-file";  // the whole name was "json" or "result"
  return join(parts, ".");
}

// `command` with {name} replaced by "$VAR" (quoted), everything else literal.
std::string with_shell_vars(const std::string& command,
                            const std::vector<std::pair<std::string, std::string>>& vars) {
  std::string out = escape_placeholders(command);
  for (const auto& [name, var] : vars) replace_all(out, "{" + name + "}", "\"$" + var + "\"");
  return out;
}

ojson escaped_env(std::vector<std::pair<std::string, std::string>> vars) {
  ojson env = ojson::object();
  for (auto& [name, value] : vars) env[name] = escape_placeholders(value);
  return env;
}

ojson plan_doc(const CyclePlanContext& c, const char* phase, int concurrency, ojson steps) {
  ojson plan = {{"name", fmt::format("cycle {} {} {}", c.run, c.cycle, phase)},
                {"concurrency", std::max(1, concurrency)},
                {"on_failure", "continue"},
                {"steps", std::move(steps)}};
  if (c.tokens_left >= 0) plan["budget"] = {{"tokens", std::max<std::int64_t>(1, c.tokens_left)}};
  return plan;
}

void set_role(ojson& step, const CycleRole& role) {
  step["executor"] = role.kind == RoleKind::Command ? "shell" : role.executor;
  step["attempts"] = role.attempts;
  if (role.timeout_ms) step["timeout"] = fmt::format("{}ms", *role.timeout_ms);
}

const char* const kWorkerBrief =
    "You work on one file of this repository, for the stage '{stage}' of the items listed below "
    "(their ids, states and what earlier cycles tried). Change only {file}: a change to any other "
    "file is reverted and voids the job. When you are done, these checks must pass on the file: "
    "`{gate}`. End your reply with one line of JSON naming the state each item reached: "
    "{{\"claims\": [{{\"id\": \"ID\", \"transition\": \"STATE\", \"note\": \"...\"}}]}} "
    "(or \"no-change\" / \"stuck\" as the transition).";

const char* const kReviewBrief =
    "Review the work done on {file} in this cycle. For each item below, decide whether the "
    "transition claimed for it holds: read the file as it is now and as it was (the baseline), "
    "and the gate results. Reply with ONE JSON document and nothing else: {{\"milestones\": "
    "[{{\"id\": \"ID\", \"transition\": \"STATE or no-change/stuck/rejected-by-review\", "
    "\"accepted\": true|false, \"rollback_required\": true|false, \"evidence\": \"...\", "
    "\"follow_up\": \"...\"}}]}}, one milestone per item.";

const char* const kPlanBrief =
    "Plan this cycle's work: the items below are about to be worked on, one job per file, in "
    "parallel. Write short notes for the workers: per item, an approach, and what to try "
    "differently where earlier cycles failed (past_attempts). Free text; it is handed to the "
    "workers as context.";

}  // namespace

std::vector<CycleJob> cycle_jobs(const std::vector<FileJob>& jobs, const Lifecycle& lifecycle) {
  std::vector<CycleJob> out;
  std::set<std::string> taken;
  for (const FileJob& fj : jobs) {
    CycleJob job;
    job.file = fj.file;
    job.tasks = fj.tasks;
    std::string base = slug_of(fj.file), slug = base;
    for (int k = 2; taken.contains(slug); ++k) slug = fmt::format("{}-{}", base, k);
    taken.insert(slug);
    job.slug = slug;
    // Phases in the lifecycle's order: a stage out of an earlier state first.
    std::vector<const CycleStage*> stages;
    for (const CycleStage& stage : lifecycle.stages()) stages.push_back(&stage);
    const auto& states = lifecycle.states();
    auto rank = [&](const CycleStage* s) {
      return std::find(states.begin(), states.end(), s->from) - states.begin();
    };
    std::stable_sort(stages.begin(), stages.end(),
                     [&](const CycleStage* a, const CycleStage* b) { return rank(a) < rank(b); });
    for (const CycleStage* stage_ptr : stages) {
      const CycleStage& stage = *stage_ptr;
      JobPhase phase;
      phase.stage = stage.name;
      for (std::size_t i = 0; i < job.tasks.size(); ++i)
        if (job.tasks[i].stage == stage.name) phase.tasks.push_back(i);
      if (phase.tasks.empty()) continue;
      phase.number = static_cast<int>(job.phases.size()) + 1;
      job.phases.push_back(std::move(phase));
    }
    out.push_back(std::move(job));
  }
  return out;
}

std::string worker_step_id(const CycleJob& job, int phase) {
  return fmt::format("{}.phase-{}", job.slug, phase);
}
std::string gate_step_id(const CycleJob& job, int phase, std::size_t task) {
  return fmt::format("{}.gate-{}.{}", job.slug, phase, task + 1);
}
std::string review_step_id(const CycleJob& job) {
  return job.slug + ".review";
}
std::string verify_step_id(const CycleJob& job, std::size_t task) {
  return fmt::format("{}.verify.{}", job.slug, task + 1);
}

fs::path CyclePaths::cycle(int n) const {
  return root / fmt::format("cycle_{}", n);
}
fs::path CyclePaths::job(int n, const std::string& slug) const {
  return cycle(n) / "jobs" / slug;
}
fs::path CyclePaths::scope(int n) const {
  return cycle(n) / "workspace";
}
fs::path CyclePaths::audit() const {
  return root / "audit" / "transitions.jsonl";
}

std::string gate_as_run(const std::string& gate, const std::string& file, const std::string& id) {
  // One pass, so that a file whose name holds "{id}" is not filled in twice.
  std::string out;
  for (std::size_t at = 0; at < gate.size();) {
    if (gate.compare(at, 6, "{file}") == 0) {
      out += file;
      at += 6;
    } else if (gate.compare(at, 4, "{id}") == 0) {
      out += id;
      at += 4;
    } else {
      out += gate[at++];
    }
  }
  return out;
}

ojson plan_phase_plan(const CyclePlanContext& c, const std::vector<CycleJob>& jobs) {
  const CycleRole& role = *c.config->plan;
  std::vector<std::string> files;
  for (const CycleJob& job : jobs) files.push_back(job.file);
  const fs::path input = c.paths.cycle(c.cycle) / "objectives.json";
  ojson step = {{"id", kCyclePlanStep}, {"goal", fmt::format("Plan cycle {}.", c.cycle)}};
  set_role(step, role);
  step["env"] = escaped_env({{"ORCH_CYCLE_RUN", c.run},
                             {"ORCH_CYCLE", std::to_string(c.cycle)},
                             {"ORCH_CYCLE_OBJECTIVES", input.string()},
                             {"ORCH_CYCLE_FILES", join(files, " ")}});
  if (role.kind == RoleKind::Command) {
    step["sh"] = escape_placeholders(role.command);
  } else {
    std::string objectives_text = "(see " + input.string() + ")";
    if (auto text = read_text_or_empty(input); !text.empty()) objectives_text = text;
    step["inputs"] =
        stage_inputs(role.executor, escape_placeholders(role.prompt.empty() ? kPlanBrief : role.prompt),
                     {{"objectives", escape_placeholders(objectives_text)}}, false);
  }
  return plan_doc(c, "plan", 1, ojson::array({std::move(step)}));
}

json tasks_file_json(const CyclePlanContext& c, const CycleJob& job, const JobPhase& phase) {
  json tasks = json::array();
  for (std::size_t i : phase.tasks) tasks.push_back(cycle_task_json(job.tasks[i]));
  return {{"run", c.run},         {"cycle", c.cycle}, {"job", job.slug},          {"phase", phase.number},
          {"stage", phase.stage}, {"file", job.file}, {"tasks", std::move(tasks)}};
}

fs::path tasks_file(const CyclePlanContext& c, const CycleJob& job, int phase) {
  return c.paths.job(c.cycle, job.slug) / fmt::format("tasks-{}.json", phase);
}

ojson work_phase_plan(const CyclePlanContext& c, const std::vector<CycleJob>& jobs,
                      const std::string& plan_file) {
  ojson steps = ojson::array();
  for (const CycleJob& job : jobs) {
    std::vector<std::string> previous_gates;
    for (const JobPhase& phase : job.phases) {
      const CycleStageConfig* stage = c.config->stage(phase.stage);
      std::vector<std::string> ids;
      for (std::size_t i : phase.tasks) ids.push_back(job.tasks[i].id);
      const fs::path tasks_path = tasks_file(c, job, phase.number);
      ojson worker = {
          {"id", worker_step_id(job, phase.number)},
          {"goal", fmt::format("Cycle {}: {} {} in {}.", c.cycle, phase.stage, join(ids, ", "), job.file)},
          {"writes", ojson::array({job.file})}};
      if (!previous_gates.empty()) worker["deps"] = previous_gates;
      set_role(worker, stage->worker);
      worker["env"] = escaped_env({{"ORCH_CYCLE_RUN", c.run},
                                   {"ORCH_CYCLE", std::to_string(c.cycle)},
                                   {"ORCH_CYCLE_JOB", job.slug},
                                   {"ORCH_CYCLE_PHASE", std::to_string(phase.number)},
                                   {"ORCH_CYCLE_STAGE", phase.stage},
                                   {"ORCH_CYCLE_FILE", job.file},
                                   {"ORCH_CYCLE_IDS", join(ids, " ")},
                                   {"ORCH_CYCLE_TASKS", tasks_path.string()},
                                   {"ORCH_CYCLE_PLAN", plan_file}});
      if (stage->worker.kind == RoleKind::Command) {
        worker["sh"] = with_shell_vars(
            stage->worker.command,
            {{"file", "ORCH_CYCLE_FILE"}, {"ids", "ORCH_CYCLE_IDS"}, {"stage", "ORCH_CYCLE_STAGE"}});
      } else {
        std::string brief = stage->worker.prompt.empty() ? kWorkerBrief : stage->worker.prompt;
        replace_all(brief, "{stage}", phase.stage);
        replace_all(brief, "{file}", job.file);
        std::vector<std::string> gates;
        for (const std::string& id : ids) gates.push_back(gate_as_run(stage->gate, job.file, id));
        std::sort(gates.begin(), gates.end());
        gates.erase(std::unique(gates.begin(), gates.end()), gates.end());
        replace_all(brief, "{gate}", join(gates, "`, `"));
        replace_all(brief, "{{", "{");
        replace_all(brief, "}}", "}");
        std::vector<std::pair<std::string, std::string>> extra = {
            {"file", job.file}, {"tasks", json_text(tasks_file_json(c, job, phase)["tasks"], 2)}};
        if (!plan_file.empty()) extra.emplace_back("cycle_plan", read_text_or_empty(plan_file));
        for (auto& e : extra) e.second = escape_placeholders(e.second);
        worker["inputs"] = stage_inputs(stage->worker.executor, escape_placeholders(brief), extra, true);
      }
      steps.push_back(std::move(worker));
      std::vector<std::string> gates;
      for (std::size_t i : phase.tasks) {
        const std::string id = gate_step_id(job, phase.number, i);
        steps.push_back(
            {{"id", id},
             {"goal", fmt::format("The gate of {} on {}.", job.tasks[i].id, job.file)},
             {"deps", ojson::array({worker_step_id(job, phase.number)})},
             {"env", escaped_env({{"ORCH_CYCLE_FILE", job.file}, {"ORCH_CYCLE_ID", job.tasks[i].id}})},
             {"sh", with_shell_vars(stage->gate, {{"file", "ORCH_CYCLE_FILE"}, {"id", "ORCH_CYCLE_ID"}})}});
        gates.push_back(id);
      }
      previous_gates = std::move(gates);
    }
  }
  return plan_doc(c, "work", c.config->max_parallel, std::move(steps));
}

json milestones_schema(const CycleJob& job, const Lifecycle& lifecycle) {
  json ids = json::array();
  for (const CycleTask& t : job.tasks) ids.push_back(t.id);
  json words = json::array();
  for (const std::string& s : lifecycle.states()) words.push_back(s);
  for (const char* w : {"stuck", "no-change", "rejected-by-review"}) words.push_back(w);
  json milestone = {{"type", "object"},
                    {"required", {"id", "transition", "accepted"}},
                    {"additionalProperties", false},
                    {"properties",
                     {{"id", {{"enum", ids}}},
                      {"transition", {{"enum", words}}},
                      {"accepted", {{"type", "boolean"}}},
                      {"rollback_required", {{"type", "boolean"}}},
                      {"evidence", {{"type", "string"}}},
                      {"follow_up", {{"type", "string"}}}}}};
  return {{"type", "object"},
          {"required", {"milestones"}},
          {"additionalProperties", false},
          {"properties", {{"milestones", {{"type", "array"}, {"items", milestone}}}}}};
}

ojson review_phase_plan(const CyclePlanContext& c, const std::vector<ReviewInput>& inputs) {
  const CycleRole& role = *c.config->review;
  ojson steps = ojson::array();
  for (const ReviewInput& in : inputs) {
    const CycleJob& job = *in.job;
    const fs::path context = c.paths.job(c.cycle, job.slug) / "review.json";
    ojson step = {{"id", review_step_id(job)},
                  {"goal", fmt::format("Review cycle {}'s work on {}.", c.cycle, job.file)}};
    set_role(step, role);
    step["env"] = escaped_env({{"ORCH_CYCLE_RUN", c.run},
                               {"ORCH_CYCLE", std::to_string(c.cycle)},
                               {"ORCH_CYCLE_JOB", job.slug},
                               {"ORCH_CYCLE_FILE", job.file},
                               {"ORCH_CYCLE_REVIEW", context.string()}});
    if (role.kind == RoleKind::Command) {
      step["sh"] = with_shell_vars(role.command, {{"file", "ORCH_CYCLE_FILE"}});
    } else {
      std::string brief = role.prompt.empty() ? kReviewBrief : role.prompt;
      replace_all(brief, "{file}", job.file);
      replace_all(brief, "{{", "{");
      replace_all(brief, "}}", "}");
      std::vector<std::pair<std::string, std::string>> extra = {{"job", json_text(in.context, 2)}};
      if (!role.executor.starts_with("worker:")) {
        extra.emplace_back("file_now", read_text_or_empty(c.config->workspace / job.file));
        extra.emplace_back("file_before", read_text_or_empty(c.paths.job(c.cycle, job.slug) / "baseline"));
      }
      for (auto& e : extra) e.second = escape_placeholders(e.second);
      step["inputs"] = stage_inputs(role.executor, escape_placeholders(brief), extra, true);
    }
    step["post"] = ojson::array({{{"result_json", milestones_schema(job, c.config->lifecycle)}}});
    steps.push_back(std::move(step));
  }
  return plan_doc(c, "review", c.config->max_parallel, std::move(steps));
}

ojson verify_phase_plan(const CyclePlanContext& c, const std::vector<VerifyCheck>& checks) {
  ojson steps = ojson::array();
  for (const VerifyCheck& v : checks) {
    const CycleTask& t = v.job->tasks[v.task];
    const CycleStageConfig* stage = c.config->stage(t.stage);
    steps.push_back(
        {{"id", verify_step_id(*v.job, v.task)},
         {"goal", fmt::format("The gate of {} on {} as it is now.", t.id, t.file)},
         {"env", escaped_env({{"ORCH_CYCLE_FILE", t.file}, {"ORCH_CYCLE_ID", t.id}})},
         {"sh", with_shell_vars(stage->gate, {{"file", "ORCH_CYCLE_FILE"}, {"id", "ORCH_CYCLE_ID"}})}});
  }
  return plan_doc(c, "verify", c.config->max_parallel, std::move(steps));
}

}  // namespace orch::flows
