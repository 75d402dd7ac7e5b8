// engine/ready_set.h — what may start now.
//
// ReadySet: the steps that are pending with every dependency done, in plan
// order (the dispatcher walks them in order, so a step held back holds back
// those after it rather than being overtaken for ever). It counts each step's
// dependencies left (StepState::deps_left) and makes a step ready when its last
// one is done.
//
// InFlight: the attempts running and what they hold, against the limits a
// ready step must also fit in besides the run's -j — the descriptors the
// open-files limit leaves (each attempt counts its executor's
// open_files_per_attempt()) and the `writes:` of the steps in flight (two steps
// that may change the same files never run at once: a failed one's restore
// would undo what the other did).
//
// Neither touches the ledger or the loop; the scheduler asks and records.
#pragma once

#include <climits>
#include <filesystem>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/step_state.h"

namespace orch {

class ReadySet {
 public:
  using iterator = std::set<int>::const_iterator;

  // Every pending step whose dependencies are all done, each step's
  // deps_left counted afresh from the steps' records.
  void rebuild(std::vector<StepState>& steps, const std::unordered_map<std::string, int>& index_of);
  // Step `i` is done: each dependent it was the last dependency of becomes
  // ready (if it is pending).
  void dependency_done(std::vector<StepState>& steps, int i);

  void insert(int i) { ready_.insert(i); }
  void erase(int i) { ready_.erase(i); }
  iterator erase(iterator it) { return ready_.erase(it); }
  bool empty() const { return ready_.empty(); }
  iterator begin() const { return ready_.begin(); }
  iterator end() const { return ready_.end(); }

 private:
  std::set<int> ready_;
};

class InFlight {
 public:
  // Descriptors kept for the ledger, the event loop, libcurl's idle connections
  // and the rest; the attempts in flight share what the open-files limit leaves.
  static constexpr long long kFdsReserved = 64;

  int count() const { return count_; }

  // Reads the open-files limit (RLIMIT_NOFILE): the attempts may hold it less kFdsReserved.
  void measure_open_files();
  long long open_files_limit() const { return limit_; }

  // Whether an attempt that needs `need` descriptors fits now. One attempt at a
  // time always goes: a limit that cannot hold even that shows up as the
  // attempt's own "Too many open files", not as a run that never ends.
  // FullFirstTime: it does not, and it is the first time in the run (the
  // caller records concurrency_capped).
  enum class Room { Fits, Full, FullFirstTime };
  Room open_files_room(int need);

  // Whether step `i` declares `writes:` that are, hold or lie in those of a step
  // in flight: compared as written in `workspace`, and with the symlinks on the
  // way resolved as they are now (`out` and `alias/x` overlap when `alias`
  // links to `out`).
  bool writes_overlap(const std::vector<StepState>& steps, int i,
                      const std::filesystem::path& workspace) const;

  // An attempt of step `i` (`writes`: whether the step declares any) is in
  // flight, holding `open_files` descriptors; and is no longer.
  void add(int i, bool writes, int open_files);
  void remove(int i, int open_files);

 private:
  int count_ = 0;
  long long limit_ = LLONG_MAX;  // RLIMIT_NOFILE's soft limit (LLONG_MAX: none)
  long long free_ = LLONG_MAX;   // descriptors the attempts in flight may still open
  bool capped_ = false;          // FullFirstTime said
  std::vector<int> writers_;     // steps in flight that declare `writes:`
};

}  // namespace orch
