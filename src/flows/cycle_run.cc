#include "flows/cycle_run.h"

#include <fmt/format.h>

#include "flows/cycle_doc.h"
#include "flows/cycle_driver.h"
#include "flows/cycle_status.h"
#include "flows/stage_plan.h"
#include "orch/executor.h"
#include "orch/plan.h"
#include "util/iso_time.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::flows {

using json = nlohmann::json;

namespace {

// The pre-flight: every role that is a worker or a model, in a probe plan
// validated against the executors, so a worker that is not in the workers file,
// an agent CLI that is not installed or a model whose key is not set fails
// before anything runs, never as a phase that fails in every cycle.
Expected<void> check_cycle_executors(const CycleEnv& env, const CycleConfig& c) {
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  auto probe = [&](const std::string& id, const CycleRole& role) {
    if (role.kind == RoleKind::Command) return;
    steps.push_back(
        {{"id", id}, {"goal", "probe"}, {"executor", role.executor}, {"inputs", {{"prompt", "probe"}}}});
  };
  for (const CycleStageConfig& stage : c.stages) probe("stage-" + stage.name, stage.worker);
  if (c.plan) probe("role-plan", *c.plan);
  if (c.review) probe("role-review", *c.review);
  if (steps.empty()) return {};
  const nlohmann::ordered_json plan = {{"name", "cycle pre-flight"}, {"steps", steps}};
  auto checked =
      load_built_plan(c.workspace, *env.executors, json_text(plan), c.file.string(), c.file.string());
  if (!checked) return std::unexpected(checked.error());
  std::vector<std::string> cannot_start;
  for (const Step& step : checked->steps)
    if (const Executor* executor = env.executors->find(step.executor))
      if (auto why = executor->setup_problem(step))
        cannot_start.push_back(fmt::format("{}: {}: {}", c.file.string(), step.id, *why));
  if (!cannot_start.empty())
    return fail(ErrorCode::InvalidInput,
                fmt::format("{} of the cycle's roles cannot start, so nothing was run:\n{}",
                            cannot_start.size(), join(cannot_start, "\n")));
  return {};
}

// Takes the cycle run's lock, reads its record as it is now, and drives it.
Expected<CycleOutcome> drive_cycle_run(CycleEnv& env, const std::string& id, bool resuming,
                                       std::optional<std::int64_t> budget_tokens) {
  auto lock = env.store->lock("cycle-" + id, [&](const std::string& pid) {
    return fmt::format(
        "cycle run {} is already being driven by another orch process{}; wait for it to finish "
        "(`orch cycle status {}`)",
        id, pid == "unknown" ? "" : " (pid " + pid + ")", id);
  });
  if (!lock) return std::unexpected(lock.error());
  auto found = ORCH_TRY(env.cycles->find_cycle(id));
  if (!found) return fail(ErrorCode::NotFound, fmt::format("no cycle run '{}' in the ledger", id));
  CycleRecord record = std::move(*found);
  if (resuming && record.status != CycleStatus::Running && record.status != CycleStatus::Budget)
    return fail(ErrorCode::InvalidInput, fmt::format("cycle run '{}' has ended ({}): nothing to resume", id,
                                                     cycle_status_name(record.status)));
  json doc = json::parse(record.doc_json, nullptr, false);
  if (!doc.is_object() || !doc.contains("config"))
    return fail(ErrorCode::Store, fmt::format("cycle run '{}': its document in the ledger is damaged", id));
  CycleConfig config = ORCH_TRY(cycle_config_from_json(doc["config"]));
  ORCH_TRY(check_cycle_executors(env, config));
  if (record.status == CycleStatus::Budget) {
    if (!budget_tokens || (config.budget_tokens && *budget_tokens <= *config.budget_tokens))
      return fail(ErrorCode::InvalidInput,
                  fmt::format("cycle run '{}' stopped at its budget of {} tokens: resume it with a higher "
                              "--budget-tokens",
                              id, config.budget_tokens.value_or(0)));
  }
  if (budget_tokens) {
    config.budget_tokens = *budget_tokens;
    doc["config"] = cycle_config_json(config);
  }
  record.status = CycleStatus::Running;
  doc["status"] = cycle_status_name(CycleStatus::Running);
  cycle_detail::CycleDriver driver(env, std::move(record), std::move(doc), std::move(config));
  return driver.drive();
}

}  // namespace

Expected<CycleConfig> cycle_config_of(const CycleRecord& record) {
  json doc = json::parse(record.doc_json, nullptr, false);
  if (!doc.is_object() || !doc.contains("config"))
    return fail(ErrorCode::Store,
                fmt::format("cycle run '{}': its document in the ledger is damaged", record.id));
  return cycle_config_from_json(doc["config"]);
}

Expected<CycleOutcome> start_cycle_run(CycleEnv& env, const CycleConfig& config) {
  // The status file is read once before anything is recorded: a bad one is the
  // user's to fix, with nothing left behind.
  ORCH_TRY(read_status_file(config.status_file, config.fields, config.lifecycle));
  ORCH_TRY(check_cycle_executors(env, config));
  const std::int64_t now = env.now_ms();
  const std::string stamp = iso8601_utc(now, TimePrecision::Seconds);
  std::string digits;
  for (char ch : stamp.substr(0, 19))
    if (std::isdigit(static_cast<unsigned char>(ch))) digits += ch;
  const std::string base =
      digits.substr(0, 8) + "-" + digits.substr(8) + "-" + name_slug(config.name, "cycle");
  CycleRecord record;
  record.name = config.name;
  record.workspace = config.workspace.string();
  record.config_file = config.file.string();
  record.created_at = now;
  record.updated_at = now;
  json doc = {{"id", ""},
              {"name", config.name},
              {"workspace", config.workspace.string()},
              {"status", "running"},
              {"created_at", stamp},
              {"config", cycle_config_json(config)},
              {"cycles", json::array()}};
  // Runs started in the same second take the next free id.
  for (int n = 1;; ++n) {
    record.id = n == 1 ? base : fmt::format("{}-{}", base, n);
    if (ORCH_TRY(env.cycles->find_cycle(record.id))) continue;
    doc["id"] = record.id;
    record.doc_json = json_text(doc);
    auto inserted = env.cycles->insert_cycle(record);
    if (inserted) break;
    if (n >= 100) return std::unexpected(inserted.error());
  }
  if (env.on_note) env.on_note(fmt::format("cycle run {} started", record.id));
  return drive_cycle_run(env, record.id, false, std::nullopt);
}

Expected<CycleOutcome> resume_cycle_run(CycleEnv& env, const std::string& id,
                                        std::optional<std::int64_t> budget_tokens) {
  return drive_cycle_run(env, id, true, budget_tokens);
}

Expected<CycleDryRun> dry_run_cycle(const CycleConfig& config) {
  StatusFile status = ORCH_TRY(read_status_file(config.status_file, config.fields, config.lifecycle));
  CycleDryRun out;
  out.objectives = select_objectives(
      status.items, config.lifecycle, {},
      [&](const std::string& file) { return file_content_hash((config.workspace / file).string()); },
      config.past_attempts);
  out.jobs = cycle_jobs(group_jobs(out.objectives), config.lifecycle);
  return out;
}

}  // namespace orch::flows
