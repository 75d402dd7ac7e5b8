#include "flows/cycle_doc.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <utility>

#include "engine/attempt_render.h"
#include "util/read_file.h"

namespace orch::flows {

using json = nlohmann::json;

namespace {

constexpr std::array<std::pair<CycleProgress, const char*>, 7> kProgressNames{{
    {CycleProgress::Prepare, "prepare"},
    {CycleProgress::Plan, "plan"},
    {CycleProgress::Work, "work"},
    {CycleProgress::Review, "review"},
    {CycleProgress::Verify, "verify"},
    {CycleProgress::Write, "write"},
    {CycleProgress::Done, "done"},
}};

MilestoneOutcome outcome_of_word(const std::string& word, const Lifecycle& lifecycle) {
  if (word == "advanced") return MilestoneOutcome::Advanced;
  return parse_milestone_outcome(word, lifecycle).value_or(MilestoneOutcome::RejectedByScheduler);
}

}  // namespace

const char* cycle_progress_name(CycleProgress p) {
  for (const auto& [value, name] : kProgressNames)
    if (value == p) return name;
  return "prepare";
}

std::optional<CycleProgress> parse_cycle_progress(std::string_view name) {
  for (const auto& [value, n] : kProgressNames)
    if (name == n) return value;
  return std::nullopt;
}

json cycle_task_json(const CycleTask& t) {
  json past = json::array();
  for (const ItemOutcome& o : t.past_attempts)
    past.push_back({{"cycle", o.cycle},
                    {"outcome", milestone_outcome_name(o.outcome)},
                    {"transition", o.transition},
                    {"why", o.why},
                    {"state", o.state},
                    {"file_hash", o.file_hash}});
  return {{"id", t.id}, {"stage", t.stage}, {"file", t.file}, {"state", t.state}, {"past_attempts", past}};
}

Expected<CycleTask> cycle_task_from_json(const json& doc, const Lifecycle& lifecycle) {
  CycleTask t;
  try {
    t.id = doc.at("id").get<std::string>();
    t.stage = doc.at("stage").get<std::string>();
    t.file = doc.at("file").get<std::string>();
    t.state = doc.at("state").get<std::string>();
    for (const json& o : doc.value("past_attempts", json::array()))
      t.past_attempts.push_back(ItemOutcome{
          o.at("cycle").get<int>(), outcome_of_word(o.at("outcome").get<std::string>(), lifecycle),
          o.value("transition", ""), o.value("why", ""), o.value("state", ""), o.value("file_hash", "")});
  } catch (const json::exception& e) {
    return fail(ErrorCode::InvalidInput, fmt::format("a cycle's objective: {}", e.what()));
  }
  return t;
}

std::vector<CycleTask> cycle_tasks_of(const json& cycle, const Lifecycle& lifecycle) {
  std::vector<CycleTask> out;
  for (const json& t : cycle.value("objectives", json::array()))
    if (auto task = cycle_task_from_json(t, lifecycle)) out.push_back(std::move(*task));
  return out;
}

json milestone_json(const Milestone& m) {
  return {{"id", m.id},
          {"transition", m.transition},
          {"accepted", m.accepted},
          {"rollback_required", m.rollback_required},
          {"evidence", m.evidence},
          {"follow_up", m.follow_up}};
}

Milestone milestone_from_json(const json& doc) {
  Milestone m;
  m.id = doc.value("id", "");
  m.transition = doc.value("transition", "");
  m.accepted = doc.value("accepted", false);
  m.rollback_required = doc.value("rollback_required", false);
  m.evidence = doc.value("evidence", "");
  m.follow_up = doc.value("follow_up", "");
  return m;
}

json cycle_items_json(const std::vector<CycleItem>& items) {
  json out = json::array();
  for (const CycleItem& i : items) out.push_back({{"id", i.id}, {"file", i.file}, {"state", i.state}});
  return out;
}

std::vector<CycleItem> cycle_items_from_json(const json& doc) {
  std::vector<CycleItem> out;
  if (!doc.is_array()) return out;
  for (const json& i : doc) out.push_back({i.value("id", ""), i.value("file", ""), i.value("state", "")});
  return out;
}

json decision_json(const RecordedDecision& d) {
  json out = {{"id", d.id},
              {"job", d.job},
              {"outcome", milestone_outcome_name(d.outcome)},
              {"transition", d.transition},
              {"why", d.why},
              {"restored", d.restored},
              {"state", d.state},
              {"file_hash", d.file_hash}};
  if (d.to) out["to"] = *d.to;
  return out;
}

RecordedDecision decision_from_json(const json& doc, const Lifecycle& lifecycle) {
  RecordedDecision d;
  d.id = doc.value("id", "");
  d.job = doc.value("job", "");
  d.outcome = outcome_of_word(doc.value("outcome", ""), lifecycle);
  d.transition = doc.value("transition", "");
  if (doc.contains("to")) d.to = doc["to"].get<std::string>();
  d.why = doc.value("why", "");
  d.restored = doc.value("restored", false);
  d.state = doc.value("state", "");
  d.file_hash = doc.value("file_hash", "");
  return d;
}

std::vector<ItemHistory> cycle_history(const json& doc, const Lifecycle& lifecycle) {
  std::vector<ItemHistory> out;
  std::map<std::string, std::size_t> index;
  for (const json& cycle : doc.value("cycles", json::array())) {
    if (cycle.value("progress", "") != cycle_progress_name(CycleProgress::Done)) continue;
    const int n = cycle.value("cycle", 0);
    for (const json& dj : cycle.value("decisions", json::array())) {
      const RecordedDecision d = decision_from_json(dj, lifecycle);
      auto [it, fresh] = index.emplace(d.id, out.size());
      if (fresh) out.push_back(ItemHistory{d.id, {}});
      out[it->second].outcomes.push_back(
          ItemOutcome{n, d.outcome, d.transition, d.why, d.state, d.file_hash});
    }
  }
  return out;
}

std::string file_content_hash(const std::string& path) {
  auto text = read_file_text(path);
  return text ? "fnv1a64:" + fingerprint_of(*text) : std::string();
}

}  // namespace orch::flows
