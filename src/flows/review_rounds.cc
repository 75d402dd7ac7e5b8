#include "flows/review_rounds.h"

#include <set>
#include <utility>

#include "flows/review_gate.h"

namespace orch::flows {

namespace {
constexpr std::pair<FixStatus, const char*> kFixStatusNames[] = {
    {FixStatus::NotRun, "not_run"},
    {FixStatus::Off, "off"},
    {FixStatus::NothingToFix, "nothing_to_fix"},
    {FixStatus::Pending, "pending"},
    {FixStatus::Applied, "applied"},
    {FixStatus::RolledBack, "rolled_back"},
};
}  // namespace

const char* fix_status_name(FixStatus status) {
  for (const auto& [s, name] : kFixStatusNames)
    if (s == status) return name;
  return "not_run";
}

std::optional<FixStatus> parse_fix_status(std::string_view name) {
  for (const auto& [s, n] : kFixStatusNames)
    if (name == n) return s;
  return std::nullopt;
}

const char* role_status_name(RoleStatus status) {
  switch (status) {
    case RoleStatus::Ok:
      return "ok";
    case RoleStatus::Repaired:
      return "repaired";
    case RoleStatus::Failed:
      return "failed";
  }
  return "failed";
}

RoundProgress track_rounds(const std::vector<std::vector<Finding>>& rounds, int dry_rounds) {
  return track_rounds(rounds, dry_rounds, {});
}

RoundProgress track_rounds(const std::vector<std::vector<Finding>>& rounds, int dry_rounds,
                           const std::vector<RoundFacts>& facts) {
  const bool known = facts.size() == rounds.size();
  RoundProgress out;
  std::set<std::string> seen;                 // every counted id of earlier rounds
  std::vector<std::set<std::string>> ids_of;  // counted ids, per round
  std::set<std::string> escalated;
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    std::set<std::string> ids;
    std::set<std::string> acted_on;  // MINOR or worse: what the loop fixes
    int fresh_blocking = 0;
    for (const Finding& f : rounds[r]) {
      if (!counts_for_gate(f)) continue;
      if (f.severity != Severity::Nit) acted_on.insert(f.id);
      const bool blocking = f.severity == Severity::Critical || f.severity == Severity::Major;
      if (blocking && !seen.contains(f.id) && !ids.contains(f.id)) ++fresh_blocking;
      ids.insert(f.id);
    }
    out.new_blocking.push_back(fresh_blocking);
    const bool complete = !known || facts[r].complete;
    out.dry_streak = fresh_blocking == 0 && complete ? out.dry_streak + 1 : 0;
    const int round = static_cast<int>(r) + 1;
    if (!out.converged_round && dry_rounds > 0 && out.dry_streak >= dry_rounds) out.converged_round = round;
    if (r >= 2)
      for (const auto& id : acted_on)
        if (ids_of[r - 2].contains(id) &&
            (!known || facts[r - 2].patched.contains(id) || facts[r - 1].patched.contains(id)) &&
            escalated.insert(id).second)
          out.escalated.push_back({id, round});
    seen.insert(ids.begin(), ids.end());
    ids_of.push_back(std::move(ids));
  }
  return out;
}

}  // namespace orch::flows
