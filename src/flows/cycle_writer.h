// flows/cycle_writer.h — the writer of `orch cycle`: code, never a model, that
// decides whether a reviewed milestone changes an item's state (seed 003).
//
// A milestone is applied only when the transition it claims is legal for the
// item's state now AND the gate holds on the file as it is now (the gate is run
// again by the writer: a reviewer's word that it held is not evidence). Any
// other claimed transition is refused: the item keeps its state, its milestone
// becomes rejected-by-scheduler, and the file goes back to the job's baseline.
// A milestone that does not claim a move (no-change, stuck, ...) changes no
// state; one that says rollback_required, or that the review refused, puts the
// file back too. Every applied change is one audit entry; replaying the audit
// over the first status file gives the current one (replay_audit).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flows/cycle_lifecycle.h"
#include "flows/cycle_objectives.h"
#include "orch/cycle_store.h"

namespace orch::flows {

// What the review said of one task (seed 003: Milestone).
struct Milestone {
  std::string id;          // the item's id
  std::string transition;  // a state (a move) or the seed's word (no-change, stuck, ...)
  bool accepted = false;   // the reviewer accepts the claimed transition
  bool rollback_required = false;
  std::string evidence;
  std::string follow_up;
};

// What the writer does with a milestone.
struct WriterDecision {
  MilestoneOutcome outcome = MilestoneOutcome::NoChange;  // as recorded for the item
  std::optional<std::string> to;                          // the new state, when applied
  bool restore_baseline = false;                          // put the file back as before the job
  std::string why;                                        // for the record and the next cycle
};

// `gate_exit`: the exit status of the gate run on the file as it is now
// (nullopt: the gate could not be run, which is a refusal too).
WriterDecision decide_milestone(const CycleItem& item, const Milestone& milestone, const Lifecycle& lifecycle,
                                std::optional<int> gate_exit);

// What the writer does with one job's file and each of its tasks. The file is
// one unit, checked whole by the gate: it is put back to its baseline when a
// milestone demands it (rollback_required, a scope violation), or when no task
// of the job is applied and one of them is refused. A task whose move was
// legal and held, in a file put back, is refused too (its evidence is gone).
// When one task is applied and another refused, the file is kept as the gate
// checked it and the refused item keeps its state.
struct JobDecision {
  bool restore_baseline = false;
  std::vector<WriterDecision> tasks;  // in the order of `items`
};
// `items`: each task's item as it was when the cycle began; `gate_exits`: the
// writer's gate on the file as it is, per task (nullopt: not run).
JobDecision decide_job(const std::vector<CycleItem>& items, const std::vector<Milestone>& milestones,
                       const Lifecycle& lifecycle, const std::vector<std::optional<int>>& gate_exits);

// One applied change of state: the ledger's record of it (orch/cycle_store.h),
// exported to audit/transitions.jsonl one JSON object a line, without its run
// (the folder names it) and its seq (the line's place).
using AuditEntry = CycleTransition;

nlohmann::json audit_entry_json(const AuditEntry& entry);
Expected<AuditEntry> audit_entry_from_json(const nlohmann::json& doc);

// The items after the audit's changes, applied in order over `initial`. An
// entry whose `from` is not the item's state at that point is an error naming
// the entry's place: the audit and the status file disagree.
Expected<std::vector<CycleItem>> replay_audit(std::vector<CycleItem> initial,
                                              const std::vector<AuditEntry>& audit);

}  // namespace orch::flows
