// flows/cycle_doc.h — the document of a cycle run (the ledger's cycles.doc_json,
// schemas/cycle-report.schema.json): what a resume goes on from and what
// `orch cycle status|show` print.
//
//   {"id", "name", "config": {...}, "initial_items": [{id, file, state}],
//    "cycles": [{"cycle": N, "progress": "prepare|plan|work|review|verify|write|done",
//                "objectives": [task...], "jobs": [{slug, file, ids, hash_before, ...}],
//                "runs": {"plan": RUN, "work": RUN, ...}, "scope": [...],
//                "milestones": [...], "decisions": [...]}],
//    "stop_reason": "..."}
//
// Each cycle's objectives are recorded before any of its work starts, so a
// resume rebuilds exactly the same jobs; its decisions once the writer is done,
// so the next cycle's history (past_attempts, two strikes) is read from here.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flows/cycle_lifecycle.h"
#include "flows/cycle_objectives.h"
#include "flows/cycle_writer.h"
#include "orch/error.h"

namespace orch::flows {

// How far one cycle has got; each step is recorded when the one before is done.
enum class CycleProgress { Prepare, Plan, Work, Review, Verify, Write, Done };
const char* cycle_progress_name(CycleProgress p);
std::optional<CycleProgress> parse_cycle_progress(std::string_view name);

nlohmann::json cycle_task_json(const CycleTask& task);
Expected<CycleTask> cycle_task_from_json(const nlohmann::json& doc, const Lifecycle& lifecycle);
std::vector<CycleTask> cycle_tasks_of(const nlohmann::json& cycle, const Lifecycle& lifecycle);

nlohmann::json milestone_json(const Milestone& m);
Milestone milestone_from_json(const nlohmann::json& doc);

nlohmann::json cycle_items_json(const std::vector<CycleItem>& items);
std::vector<CycleItem> cycle_items_from_json(const nlohmann::json& doc);

// One writer decision, as recorded: the item, its job, the outcome's word
// ("advanced" or the seed's), the milestone's transition, the new state when
// applied, why, whether the file was put back, the item's state and its file's
// hash after the writer.
struct RecordedDecision {
  std::string id;
  std::string job;
  MilestoneOutcome outcome = MilestoneOutcome::NoChange;
  std::string transition;
  std::optional<std::string> to;
  std::string why;
  bool restored = false;
  std::string state;
  std::string file_hash;
};
nlohmann::json decision_json(const RecordedDecision& d);
RecordedDecision decision_from_json(const nlohmann::json& doc, const Lifecycle& lifecycle);

// Every item's outcomes over the document's finished cycles, oldest first.
std::vector<ItemHistory> cycle_history(const nlohmann::json& doc, const Lifecycle& lifecycle);

// A file's content hash, "fnv1a64:HEX" ("" when it cannot be read).
std::string file_content_hash(const std::string& path);

}  // namespace orch::flows
