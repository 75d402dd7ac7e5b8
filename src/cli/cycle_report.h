// cli/cycle_report.h — what `orch cycle` prints: a run's summary, the dry run,
// status, show and audit, as JSON (schemas/cycle-*.schema.json) and as text
// made from that JSON, so both say the same.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "flows/cycle_run.h"
#include "orch/cycle_store.h"
#include "orch/error.h"

namespace orch::cli {

// The end of `cycle run` / `cycle resume`: each cycle's decisions, the stop.
std::string cycle_summary_text(const nlohmann::json& doc);

nlohmann::json dry_run_json(const flows::CycleConfig& config, const flows::CycleDryRun& dry);
std::string dry_run_text(const flows::CycleConfig& config, const flows::CycleDryRun& dry);

// schemas/cycle-status.schema.json: the items by state as the status file has
// them now, the stuck ones, each cycle's milestones counted.
Expected<nlohmann::json> cycle_status_json(const CycleRecord& record);
std::string cycle_status_text(const nlohmann::json& status);

// The run's document, or (cycle > 0) that cycle's record.
Expected<nlohmann::json> cycle_show_json(const CycleRecord& record, int cycle);
std::string cycle_show_text(const nlohmann::json& shown);

// schemas/cycle-audit.schema.json: the transitions, and whether replaying them
// over the run's first status file gives the status file as it is.
Expected<nlohmann::json> cycle_audit_json(const CycleRecord& record, CycleStore& cycles);
std::string cycle_audit_text(const nlohmann::json& audit);

}  // namespace orch::cli
