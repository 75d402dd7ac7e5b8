#include "cli/cycle_report.h"

#include <fmt/format.h>

#include <map>

#include "flows/cycle_doc.h"
#include "flows/cycle_status.h"
#include "flows/cycle_writer.h"

namespace orch::cli {

namespace {

nlohmann::json parse_doc(const CycleRecord& record) {
  nlohmann::json doc = nlohmann::json::parse(record.doc_json, nullptr, false);
  return doc.is_object() ? doc : nlohmann::json::object();
}

// Each cycle's decisions counted by outcome word.
nlohmann::json per_cycle(const nlohmann::json& doc) {
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& c : doc.value("cycles", nlohmann::json::array())) {
    nlohmann::json counts = nlohmann::json::object();
    nlohmann::json advanced = nlohmann::json::array();
    for (const nlohmann::json& d : c.value("decisions", nlohmann::json::array())) {
      const std::string word = d.value("outcome", "");
      counts[word] = counts.value(word, 0) + 1;
      if (d.contains("to")) advanced.push_back({{"id", d["id"]}, {"to", d["to"]}});
    }
    out.push_back({{"cycle", c.value("cycle", 0)},
                   {"progress", c.value("progress", "")},
                   {"tasks", c.value("objectives", nlohmann::json::array()).size()},
                   {"jobs", c.value("jobs", nlohmann::json::array()).size()},
                   {"outcomes", counts},
                   {"advanced", advanced}});
  }
  return out;
}

}  // namespace

std::string cycle_summary_text(const nlohmann::json& doc) {
  std::string out;
  for (const nlohmann::json& c : doc.value("cycles", nlohmann::json::array())) {
    out += fmt::format("cycle {} ({})\n", c.value("cycle", 0), c.value("progress", ""));
    for (const nlohmann::json& d : c.value("decisions", nlohmann::json::array())) {
      const std::string what =
          d.contains("to") ? fmt::format("-> {}", d["to"].get<std::string>()) : d.value("outcome", "");
      out += fmt::format("  {:<24} {:<28} {}{}\n", d.value("id", ""), what, d.value("why", "").substr(0, 100),
                         d.value("restored", false) ? " [file put back]" : "");
    }
  }
  out += fmt::format("cycle run {}: {}{}\n", doc.value("id", ""), doc.value("status", ""),
                     doc.value("stop_reason", "").empty() ? "" : ": " + doc.value("stop_reason", ""));
  return out;
}

nlohmann::json dry_run_json(const flows::CycleConfig& config, const flows::CycleDryRun& dry) {
  nlohmann::json objectives = nlohmann::json::array(), jobs = nlohmann::json::array();
  for (const auto& t : dry.objectives) objectives.push_back(flows::cycle_task_json(t));
  for (const auto& j : dry.jobs) {
    nlohmann::json phases = nlohmann::json::array();
    for (const auto& p : j.phases) {
      nlohmann::json ids = nlohmann::json::array();
      for (std::size_t i : p.tasks) ids.push_back(j.tasks[i].id);
      phases.push_back({{"phase", p.number}, {"stage", p.stage}, {"ids", ids}});
    }
    jobs.push_back({{"job", j.slug}, {"file", j.file}, {"phases", phases}});
  }
  return {{"name", config.name},
          {"workspace", config.workspace.string()},
          {"cycle", 1},
          {"objectives", objectives},
          {"jobs", jobs}};
}

std::string dry_run_text(const flows::CycleConfig& config, const flows::CycleDryRun& dry) {
  std::string out = fmt::format("cycle 1 of {} (dry run: nothing runs, nothing is recorded)\n", config.name);
  out += fmt::format("{} objective{}:\n", dry.objectives.size(), dry.objectives.size() == 1 ? "" : "s");
  for (const auto& t : dry.objectives)
    out += fmt::format("  {:<24} {:<14} {} ({})\n", t.id, t.state, t.stage, t.file);
  out += fmt::format("{} job{}:\n", dry.jobs.size(), dry.jobs.size() == 1 ? "" : "s");
  for (const auto& j : dry.jobs) {
    out += fmt::format("  {}\n", j.file);
    for (const auto& p : j.phases) {
      std::string ids;
      for (std::size_t i : p.tasks) ids += (ids.empty() ? "" : ", ") + j.tasks[i].id;
      const auto* stage = config.stage(p.stage);
      out += fmt::format("    phase {}: {} {}; gate: {}\n", p.number, p.stage, ids, stage ? stage->gate : "");
    }
  }
  return out;
}

Expected<nlohmann::json> cycle_status_json(const CycleRecord& record) {
  const nlohmann::json doc = parse_doc(record);
  const flows::CycleConfig config =
      ORCH_TRY(flows::cycle_config_from_json(doc.value("config", nlohmann::json::object())));
  nlohmann::json items = nlohmann::json::array(), by_state = nlohmann::json::object(),
                 stuck = nlohmann::json::array();
  for (const std::string& s : config.lifecycle.states()) by_state[s] = nlohmann::json::array();
  auto status = flows::read_status_file(config.status_file, config.fields, config.lifecycle);
  if (!status) return std::unexpected(status.error());
  const auto history = flows::cycle_history(doc, config.lifecycle);
  for (const flows::CycleItem& item : status->items) {
    static const std::vector<flows::ItemOutcome> kNone;
    const std::vector<flows::ItemOutcome>* past = &kNone;
    for (const auto& h : history)
      if (h.id == item.id) past = &h.outcomes;
    const bool final_state = config.lifecycle.stage_for(item.state) == nullptr;
    const bool is_stuck =
        !final_state &&
        flows::is_stuck(item, *past, flows::file_content_hash((config.workspace / item.file).string()));
    nlohmann::json entry = {{"id", item.id},
                            {"file", item.file},
                            {"state", item.state},
                            {"final", final_state},
                            {"stuck", is_stuck}};
    if (!past->empty())
      entry["last"] = {{"cycle", past->back().cycle},
                       {"outcome", flows::milestone_outcome_name(past->back().outcome)},
                       {"why", past->back().why}};
    items.push_back(std::move(entry));
    by_state[item.state].push_back(item.id);
    if (is_stuck) stuck.push_back(item.id);
  }
  return nlohmann::json{{"run", record.id},
                        {"name", record.name},
                        {"status", cycle_status_name(record.status)},
                        {"cycles", record.cycles},
                        {"status_file", config.status_file.string()},
                        {"items", items},
                        {"by_state", by_state},
                        {"stuck", stuck},
                        {"per_cycle", per_cycle(doc)},
                        {"stop_reason", doc.value("stop_reason", "")}};
}

std::string cycle_status_text(const nlohmann::json& s) {
  std::string out = fmt::format("cycle run {} ({}): {}, {} cycle{} done\n", s["run"].get<std::string>(),
                                s["name"].get<std::string>(), s["status"].get<std::string>(),
                                s["cycles"].get<int>(), s["cycles"].get<int>() == 1 ? "" : "s");
  out += fmt::format("items ({}):\n", s["status_file"].get<std::string>());
  for (const auto& [state, ids] : s["by_state"].items()) {
    std::string list;
    for (const nlohmann::json& id : ids) list += (list.empty() ? "" : ", ") + id.get<std::string>();
    out += fmt::format("  {:<16} {:>3}  {}\n", state, ids.size(), list);
  }
  if (!s["stuck"].empty()) {
    out += "stuck (not selected until their file or state changes):\n";
    for (const nlohmann::json& item : s["items"])
      if (item.value("stuck", false))
        out += fmt::format("  {:<24} {}: {}\n", item["id"].get<std::string>(),
                           item["last"].value("outcome", ""), item["last"].value("why", ""));
  }
  for (const nlohmann::json& c : s["per_cycle"]) {
    std::string counts;
    for (const auto& [word, n] : c["outcomes"].items())
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n.get<int>(), word);
    out += fmt::format("cycle {} ({}): {} task{} in {} job{}{}{}\n", c["cycle"].get<int>(),
                       c["progress"].get<std::string>(), c["tasks"].get<std::size_t>(),
                       c["tasks"].get<std::size_t>() == 1 ? "" : "s", c["jobs"].get<std::size_t>(),
                       c["jobs"].get<std::size_t>() == 1 ? "" : "s", counts.empty() ? "" : ": ", counts);
  }
  if (!s.value("stop_reason", "").empty()) out += "stopped: " + s["stop_reason"].get<std::string>() + "\n";
  return out;
}

Expected<nlohmann::json> cycle_show_json(const CycleRecord& record, int cycle) {
  const nlohmann::json doc = parse_doc(record);
  if (cycle <= 0) return doc;
  const nlohmann::json& cycles = doc.value("cycles", nlohmann::json::array());
  if (cycle > static_cast<int>(cycles.size()))
    return fail(ErrorCode::NotFound, fmt::format("cycle run '{}' has {} cycle{}: no cycle {}", record.id,
                                                 cycles.size(), cycles.size() == 1 ? "" : "s", cycle));
  nlohmann::json out = doc;
  out["cycles"] = nlohmann::json::array({cycles[static_cast<std::size_t>(cycle - 1)]});
  out["shown_cycle"] = cycle;
  return out;
}

std::string cycle_show_text(const nlohmann::json& doc) {
  if (!doc.contains("shown_cycle")) return cycle_summary_text(doc);
  const nlohmann::json& shown = doc["cycles"][0];
  std::string out = fmt::format("cycle run {}, cycle {} ({})\n", doc.value("id", ""), shown.value("cycle", 0),
                                shown.value("progress", ""));
  out += "objectives:\n";
  for (const nlohmann::json& t : shown.value("objectives", nlohmann::json::array()))
    out += fmt::format("  {:<24} {:<14} {} ({})\n", t.value("id", ""), t.value("state", ""),
                       t.value("stage", ""), t.value("file", ""));
  for (const nlohmann::json& c : shown.value("scope", nlohmann::json::array()))
    out += fmt::format("stray write: {} {} (blamed: {}; put back)\n", c.value("path", ""),
                       c.value("kind", ""), c.value("jobs", nlohmann::json::array()).dump());
  out += "milestones:\n";
  for (const nlohmann::json& m : shown.value("milestones", nlohmann::json::array()))
    out += fmt::format("  {:<24} {:<28} accepted={} {}\n", m.value("id", ""), m.value("transition", ""),
                       m.value("accepted", false), m.value("evidence", "").substr(0, 100));
  out += "decisions:\n";
  for (const nlohmann::json& d : shown.value("decisions", nlohmann::json::array()))
    out +=
        fmt::format("  {:<24} {:<28} {}{}\n", d.value("id", ""),
                    d.contains("to") ? "-> " + d["to"].get<std::string>() : d.value("outcome", ""),
                    d.value("why", "").substr(0, 100), d.value("restored", false) ? " [file put back]" : "");
  return out;
}

Expected<nlohmann::json> cycle_audit_json(const CycleRecord& record, CycleStore& cycles) {
  const nlohmann::json doc = parse_doc(record);
  const flows::CycleConfig config =
      ORCH_TRY(flows::cycle_config_from_json(doc.value("config", nlohmann::json::object())));
  const std::vector<flows::AuditEntry> audit = ORCH_TRY(cycles.transitions(record.id));
  nlohmann::json entries = nlohmann::json::array();
  for (const flows::AuditEntry& e : audit) entries.push_back(flows::audit_entry_json(e));
  nlohmann::json replay = {{"matches", false}, {"differences", nlohmann::json::array()}};
  auto replayed = flows::replay_audit(
      flows::cycle_items_from_json(doc.value("initial_items", nlohmann::json::array())), audit);
  auto now = flows::read_status_file(config.status_file, config.fields, config.lifecycle);
  if (!replayed) {
    replay["differences"].push_back(replayed.error().message);
  } else if (!now) {
    replay["differences"].push_back(now.error().message);
  } else {
    std::map<std::string, std::string> expected;
    for (const auto& i : *replayed) expected[i.id] = i.state;
    for (const auto& i : now->items) {
      auto it = expected.find(i.id);
      if (it == expected.end())
        replay["differences"].push_back(fmt::format("{}: in the status file, not in the first one", i.id));
      else if (it->second != i.state)
        replay["differences"].push_back(
            fmt::format("{}: the audit gives '{}', the status file says '{}'", i.id, it->second, i.state));
    }
    replay["matches"] = replay["differences"].empty();
  }
  return nlohmann::json{{"run", record.id},
                        {"status_file", config.status_file.string()},
                        {"transitions", entries},
                        {"replay", replay}};
}

std::string cycle_audit_text(const nlohmann::json& a) {
  std::string out;
  for (const nlohmann::json& e : a["transitions"])
    out += fmt::format("cycle {:<3} {:<24} {} -> {}  gate `{}` exit {}  {} -> {}\n", e["cycle"].get<int>(),
                       e["id"].get<std::string>(), e["from"].get<std::string>(), e["to"].get<std::string>(),
                       e["gate"].get<std::string>(), e["gate_exit"].get<int>(),
                       e["hash_before"].get<std::string>(), e["hash_after"].get<std::string>());
  out += fmt::format("{} transition{}; replayed over the first status file: {}\n", a["transitions"].size(),
                     a["transitions"].size() == 1 ? "" : "s",
                     a["replay"]["matches"].get<bool>() ? "matches " + a["status_file"].get<std::string>()
                                                        : "DOES NOT match");
  for (const nlohmann::json& d : a["replay"]["differences"]) out += "  " + d.get<std::string>() + "\n";
  return out;
}

}  // namespace orch::cli
