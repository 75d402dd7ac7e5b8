// flows/cycle_objectives.h — what one cycle of `orch cycle` works on: its
// objectives (CycleTask, the seed's PlannedTask) and its jobs (FileJob), as pure functions of the
// status file's items, the lifecycle and what earlier cycles said (seed 003).
//
//   objectives: every item whose state has a stage and that is not stuck, with
//               the last `past_attempts` outcomes of its earlier cycles (what was
//               tried, why it did not hold), in the status file's order;
//   jobs:       the objectives grouped by file, one job per file, in the order
//               their first task appears: two items in one file are one job, and
//               a file is never in two jobs of a cycle (a job's agent owns its
//               file for the cycle; nothing else may write it).
// Stuck: the agent said stuck, or two consecutive cycles gave the item a strike
// (no-change or a rejection, counts_as_strike) while its file stayed as it was.
// A change to the file or the item's state by other means (a person, another
// tool) clears it: the item is selected again.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "flows/cycle_lifecycle.h"

namespace orch::flows {

// One item of the status file.
struct CycleItem {
  std::string id;
  std::string file;   // relative to the workspace
  std::string state;  // a state of the lifecycle
};

// What one earlier cycle did with an item.
struct ItemOutcome {
  int cycle = 0;
  MilestoneOutcome outcome = MilestoneOutcome::NoChange;
  std::string transition;  // the milestone's word, or the state it moved to
  std::string why;         // the milestone's evidence, or why the writer refused it
  std::string state;       // the item's state after that cycle
  std::string file_hash;   // its file's content hash after that cycle
};

struct CycleTask {
  std::string id;
  std::string stage;  // the stage that moves it out of its state
  std::string file;
  std::string state;
  std::vector<ItemOutcome> past_attempts;  // the newest last, at most the window
};

struct FileJob {
  std::string file;
  std::vector<CycleTask> tasks;
};

// An item's history, oldest first, as the audit and the milestones record it.
struct ItemHistory {
  std::string id;
  std::vector<ItemOutcome> outcomes;
};

// Whether `item` is stuck: see the header comment. `file_hash`: its file's
// content hash now.
bool is_stuck(const CycleItem& item, const std::vector<ItemOutcome>& history, const std::string& file_hash);

// The objectives of the next cycle. `history` by item id (missing: none);
// `file_hash(file)` gives a file's content hash now.
std::vector<CycleTask> select_objectives(const std::vector<CycleItem>& items, const Lifecycle& lifecycle,
                                         const std::vector<ItemHistory>& history,
                                         const std::function<std::string(const std::string& file)>& file_hash,
                                         int past_attempts_window);

// One job per file, in the order of the files' first tasks.
std::vector<FileJob> group_jobs(const std::vector<CycleTask>& tasks);

}  // namespace orch::flows
