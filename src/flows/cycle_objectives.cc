#include "flows/cycle_objectives.h"

#include <algorithm>
#include <map>

namespace orch::flows {

bool is_stuck(const CycleItem& item, const std::vector<ItemOutcome>& history, const std::string& file_hash) {
  if (history.empty()) return false;
  const ItemOutcome& last = history.back();
  // The file or the state changed since the last cycle saw it, by other means:
  // the item is worth another try whatever it was.
  if (last.file_hash != file_hash || last.state != item.state) return false;
  if (last.outcome == MilestoneOutcome::Stuck) return true;
  if (history.size() < 2) return false;
  const ItemOutcome& before = history[history.size() - 2];
  return counts_as_strike(last.outcome) && counts_as_strike(before.outcome) &&
         before.cycle + 1 == last.cycle && before.file_hash == last.file_hash && before.state == last.state;
}

std::vector<CycleTask> select_objectives(const std::vector<CycleItem>& items, const Lifecycle& lifecycle,
                                         const std::vector<ItemHistory>& history,
                                         const std::function<std::string(const std::string& file)>& file_hash,
                                         int past_attempts_window) {
  std::map<std::string, const std::vector<ItemOutcome>*> by_id;
  for (const ItemHistory& h : history) by_id[h.id] = &h.outcomes;
  static const std::vector<ItemOutcome> kNone;
  std::vector<CycleTask> out;
  for (const CycleItem& item : items) {
    const CycleStage* stage = lifecycle.stage_for(item.state);
    if (!stage) continue;  // done as far as the cycle goes
    auto found = by_id.find(item.id);
    const std::vector<ItemOutcome>& past = found == by_id.end() ? kNone : *found->second;
    if (is_stuck(item, past, file_hash(item.file))) continue;
    CycleTask t{item.id, stage->name, item.file, item.state, {}};
    const std::size_t window = static_cast<std::size_t>(std::max(0, past_attempts_window));
    const std::size_t first = past.size() > window ? past.size() - window : 0;
    t.past_attempts.assign(past.begin() + static_cast<std::ptrdiff_t>(first), past.end());
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<FileJob> group_jobs(const std::vector<CycleTask>& tasks) {
  std::vector<FileJob> jobs;
  std::map<std::string, std::size_t> index;
  for (const CycleTask& t : tasks) {
    auto [it, fresh] = index.emplace(t.file, jobs.size());
    if (fresh) jobs.push_back(FileJob{t.file, {}});
    jobs[it->second].tasks.push_back(t);
  }
  return jobs;
}

}  // namespace orch::flows
