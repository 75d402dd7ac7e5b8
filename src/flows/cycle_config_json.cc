// A cycle's config as JSON and back: what the cycle's record keeps, so a resume
// goes on with exactly the config it started with (prompt files as they were
// read then, paths as they were resolved), whatever cycle.yaml says by now.
#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <utility>

#include "flows/cycle_config.h"
#include "util/strings.h"

namespace orch::flows {

namespace {

using json = nlohmann::json;

constexpr std::array<std::pair<RoleKind, const char*>, 3> kRoleKindWords{{
    {RoleKind::Command, "command"},
    {RoleKind::Worker, "worker"},
    {RoleKind::Model, "model"},
}};

json cycle_role_json(const CycleRole& role) {
  const char* kind = "command";
  for (const auto& [k, word] : kRoleKindWords)
    if (k == role.kind) kind = word;
  return {{"kind", kind},
          {"command", role.command},
          {"executor", role.executor},
          {"prompt", role.prompt},
          {"attempts", role.attempts},
          {"timeout_ms", role.timeout_ms ? json(*role.timeout_ms) : json(nullptr)},
          {"line", role.line}};
}

// Throws (json::exception, std::runtime_error; the caller catches them) on a
// damaged record.
CycleRole cycle_role_from(const json& d) {
  CycleRole role;
  const std::string kind = d.at("kind").get<std::string>();
  bool known = false;
  for (const auto& [k, word] : kRoleKindWords)
    if (kind == word) {
      role.kind = k;
      known = true;
    }
  if (!known) throw std::runtime_error(fmt::format("unknown role kind '{}'", kind));
  role.command = d.at("command").get<std::string>();
  role.executor = d.at("executor").get<std::string>();
  role.prompt = d.at("prompt").get<std::string>();
  role.attempts = d.at("attempts").get<int>();
  if (!d.at("timeout_ms").is_null()) role.timeout_ms = d.at("timeout_ms").get<std::int64_t>();
  role.line = d.at("line").get<int>();
  return role;
}

json optional_role_json(const std::optional<CycleRole>& role) {
  return role ? cycle_role_json(*role) : json(nullptr);
}

std::optional<CycleRole> optional_role_from(const json& d) {
  if (d.is_null()) return std::nullopt;
  return cycle_role_from(d);
}

// The lifecycle as cycle.yaml writes it, which Lifecycle::from_json reads back.
json lifecycle_json(const Lifecycle& lifecycle) {
  json stages = json::object();
  for (const CycleStage& s : lifecycle.stages()) stages[s.name] = s.from + " -> " + join(s.to, "|");
  return {{"states", lifecycle.states()}, {"stages", stages}};
}

}  // namespace

json cycle_config_json(const CycleConfig& c) {
  json stages = json::array();
  for (const CycleStageConfig& s : c.stages)
    stages.push_back(
        {{"name", s.name}, {"worker", cycle_role_json(s.worker)}, {"gate", s.gate}, {"line", s.line}});
  return {{"file", c.file.string()},
          {"name", c.name},
          {"workspace", c.workspace.string()},
          {"status_file", c.status_file.string()},
          {"fields", {{"id", c.fields.id}, {"file", c.fields.file}, {"state", c.fields.state}}},
          {"lifecycle", lifecycle_json(c.lifecycle)},
          {"stages", stages},
          {"plan", optional_role_json(c.plan)},
          {"review", optional_role_json(c.review)},
          {"max_iterations", c.max_iterations},
          {"max_parallel", c.max_parallel},
          {"past_attempts", c.past_attempts},
          {"budget_tokens", c.budget_tokens ? json(*c.budget_tokens) : json(nullptr)},
          {"scope_ignore", c.scope_ignore},
          {"workers_file", c.workers_file},
          {"models_file", c.models_file}};
}

Expected<CycleConfig> cycle_config_from_json(const json& d) {
  auto damaged = [](const std::string& why) {
    return fail(ErrorCode::Store, fmt::format("the cycle's stored config is damaged: {}", why));
  };
  try {
    CycleConfig c;
    c.file = d.at("file").get<std::string>();
    c.name = d.at("name").get<std::string>();
    c.workspace = d.at("workspace").get<std::string>();
    c.status_file = d.at("status_file").get<std::string>();
    const json& fields = d.at("fields");
    c.fields = {fields.at("id").get<std::string>(), fields.at("file").get<std::string>(),
                fields.at("state").get<std::string>()};
    auto lifecycle = Lifecycle::from_json(d.at("lifecycle"));
    if (!lifecycle) return damaged(lifecycle.error().message);
    c.lifecycle = std::move(*lifecycle);
    for (const json& s : d.at("stages")) {
      CycleStageConfig stage;
      stage.name = s.at("name").get<std::string>();
      stage.worker = cycle_role_from(s.at("worker"));
      stage.gate = s.at("gate").get<std::string>();
      stage.line = s.at("line").get<int>();
      c.stages.push_back(std::move(stage));
    }
    // One stage config per stage of the lifecycle, in its order: the runtime
    // looks each up by name and must find it.
    bool matches = c.stages.size() == c.lifecycle.stages().size();
    for (std::size_t i = 0; matches && i < c.stages.size(); ++i)
      matches = c.stages[i].name == c.lifecycle.stages()[i].name;
    if (!matches) return damaged("its stages are not the lifecycle's");
    c.plan = optional_role_from(d.at("plan"));
    c.review = optional_role_from(d.at("review"));
    c.max_iterations = d.at("max_iterations").get<int>();
    c.max_parallel = d.at("max_parallel").get<int>();
    c.past_attempts = d.at("past_attempts").get<int>();
    if (!d.at("budget_tokens").is_null()) c.budget_tokens = d.at("budget_tokens").get<std::int64_t>();
    c.scope_ignore = d.at("scope_ignore").get<std::vector<std::string>>();
    c.workers_file = d.at("workers_file").get<std::string>();
    c.models_file = d.at("models_file").get<std::string>();
    return c;
  } catch (const std::exception& e) {
    return damaged(e.what());
  }
}

}  // namespace orch::flows
