#include "flows/cycle_writer.h"

#include <fmt/format.h>

namespace orch::flows {

namespace {
using json = nlohmann::json;
}  // namespace

WriterDecision decide_milestone(const CycleItem& item, const Milestone& milestone, const Lifecycle& lifecycle,
                                std::optional<int> gate_exit) {
  WriterDecision d;
  const auto outcome = parse_milestone_outcome(milestone.transition, lifecycle);
  if (!outcome) {
    d.outcome = MilestoneOutcome::RejectedByScheduler;
    d.restore_baseline = true;
    d.why = fmt::format("the milestone's transition '{}' is neither a state nor an outcome",
                        milestone.transition);
    return d;
  }
  if (*outcome != MilestoneOutcome::Advanced) {
    d.outcome = *outcome;
    // A job that moved nothing leaves nothing worth keeping unless the review
    // accepted what it did as it is (no-change, with its evidence).
    d.restore_baseline = milestone.rollback_required || *outcome == MilestoneOutcome::ScopeViolation ||
                         *outcome == MilestoneOutcome::RejectedByReview ||
                         *outcome == MilestoneOutcome::BlockedByFormalizeFailure;
    d.why = milestone.evidence;
    return d;
  }
  if (!milestone.accepted) {
    d.outcome = MilestoneOutcome::RejectedByReview;
    d.restore_baseline = true;
    d.why = fmt::format("the review did not accept '{}' -> '{}'{}", item.state, milestone.transition,
                        milestone.evidence.empty() ? "" : ": " + milestone.evidence);
    return d;
  }
  if (!lifecycle.legal(item.state, milestone.transition)) {
    d.outcome = MilestoneOutcome::RejectedByScheduler;
    d.restore_baseline = true;
    const CycleStage* stage = lifecycle.stage_for(item.state);
    d.why =
        fmt::format("'{}' -> '{}' is not a transition of the lifecycle{}", item.state, milestone.transition,
                    stage ? fmt::format(" (stage {} moves '{}' to {})", stage->name, item.state,
                                        fmt::join(stage->to, " or "))
                          : "");
    return d;
  }
  if (!gate_exit || *gate_exit != 0) {
    d.outcome = MilestoneOutcome::RejectedByScheduler;
    d.restore_baseline = true;
    d.why = gate_exit ? fmt::format("the gate failed on the file as it is (exit {}): '{}' is not reached",
                                    *gate_exit, milestone.transition)
                      : std::string("the gate could not be run on the file as it is");
    return d;
  }
  if (milestone.rollback_required) {
    d.outcome = MilestoneOutcome::RejectedByReview;
    d.restore_baseline = true;
    d.why = "the review accepted the transition but required a rollback: " + milestone.evidence;
    return d;
  }
  d.outcome = MilestoneOutcome::Advanced;
  d.to = milestone.transition;
  d.why = milestone.evidence;
  return d;
}

JobDecision decide_job(const std::vector<CycleItem>& items, const std::vector<Milestone>& milestones,
                       const Lifecycle& lifecycle, const std::vector<std::optional<int>>& gate_exits) {
  JobDecision job;
  std::string forced, refused;
  bool applied = false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    WriterDecision d = decide_milestone(items[i], milestones[i], lifecycle, gate_exits[i]);
    if (forced.empty() && (milestones[i].rollback_required || d.outcome == MilestoneOutcome::ScopeViolation))
      forced = fmt::format("{}'s milestone ({}) required it", items[i].id, milestone_outcome_name(d.outcome));
    if (d.to) applied = true;
    if (refused.empty() && d.restore_baseline)
      refused = fmt::format("{} was refused ({})", items[i].id, milestone_outcome_name(d.outcome));
    job.tasks.push_back(std::move(d));
  }
  job.restore_baseline = !forced.empty() || (!applied && !refused.empty());
  for (WriterDecision& d : job.tasks) {
    d.restore_baseline = job.restore_baseline;
    if (!job.restore_baseline || !d.to) continue;
    d.outcome = MilestoneOutcome::RejectedByScheduler;
    d.why = fmt::format("the file was put back to its baseline: {}; '{}' is not kept", forced, *d.to);
    d.to.reset();
  }
  return job;
}

json audit_entry_json(const AuditEntry& e) {
  return {{"cycle", e.cycle},
          {"job", e.job},
          {"id", e.item},
          {"from", e.from},
          {"to", e.to},
          {"gate", e.gate},
          {"gate_exit", e.gate_exit},
          {"hash_before", e.hash_before},
          {"hash_after", e.hash_after},
          {"time_ms", e.time_ms}};
}

Expected<AuditEntry> audit_entry_from_json(const json& doc) {
  if (!doc.is_object()) return fail(ErrorCode::InvalidInput, "an audit entry must be a JSON object");
  AuditEntry e;
  try {
    e.cycle = doc.at("cycle").get<int>();
    e.job = doc.at("job").get<std::string>();
    e.item = doc.at("id").get<std::string>();
    e.from = doc.at("from").get<std::string>();
    e.to = doc.at("to").get<std::string>();
    e.gate = doc.at("gate").get<std::string>();
    e.gate_exit = doc.at("gate_exit").get<int>();
    e.hash_before = doc.at("hash_before").get<std::string>();
    e.hash_after = doc.at("hash_after").get<std::string>();
    e.time_ms = doc.at("time_ms").get<std::int64_t>();
  } catch (const json::exception& ex) {
    return fail(ErrorCode::InvalidInput, fmt::format("an audit entry: {}", ex.what()));
  }
  return e;
}

Expected<std::vector<CycleItem>> replay_audit(std::vector<CycleItem> items,
                                              const std::vector<AuditEntry>& audit) {
  for (std::size_t i = 0; i < audit.size(); ++i) {
    const AuditEntry& e = audit[i];
    auto it =
        std::find_if(items.begin(), items.end(), [&](const CycleItem& item) { return item.id == e.item; });
    if (it == items.end())
      return fail(ErrorCode::InvalidInput,
                  fmt::format("audit entry {}: no item '{}' in the status file", i + 1, e.item));
    if (it->state != e.from)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("audit entry {}: item '{}' moves from '{}', but it is '{}' at that point",
                              i + 1, e.item, e.from, it->state));
    it->state = e.to;
  }
  return items;
}

}  // namespace orch::flows
