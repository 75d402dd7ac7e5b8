// engine/orphans.h — killing what a dead orch left running.
//
// Step processes run in their own process groups, so kill -9 of orch leaves them
// running. Before a run is resumed (or cancelled without a live driver), they are
// killed, so the re-run never races a half-dead previous attempt. A process is
// one of them when its environment says ORCH_RUN_ID=<run> (the step processes
// orch started for that run and whatever they started in turn), or when it is in
// the process group an attempt the ledger still has running was started in (an
// `attempt_spawned` event, or a line of the run's spawn journal), in the same
// session, and started after that attempt did: a step that cleared its
// environment (`env -i ...`) is found that way. The journal
// (`<store>/runs/<run>/spawned`) gets its line with a write(2) right after the
// process started (microseconds after its exec), long before the ledger records
// it at the next commit: a write the kernel has taken survives kill -9 of orch
// (only a crash of the machine, which ends the processes too, loses it), so a
// step whose orch is killed before that commit is found all the same.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orch/error.h"
#include "orch/store.h"

namespace orch {

// The data of an attempt_spawned event for the process group `pgid`, led by the
// attempt's process, started at `spawned_ms` (wall clock): the group, orch's
// session, and what tells that group from a later one with the same number — the
// machine's boot, the pid namespace, and when its leader started.
nlohmann::json process_group_record(int pgid, std::int64_t spawned_ms);

// The spawn journal of `run_id` in the store folder `store_folder`.
std::filesystem::path spawn_journal_path(const std::filesystem::path& store_folder,
                                         const std::string& run_id);

// Removes a dead driver's spawn journal once the transaction that closed its
// attempts (close_interrupted_attempts) has committed: their groups are dead.
void discard_spawn_journal(const std::filesystem::path& store_folder, const std::string& run_id);

// Appends to a run's spawn journal: one JSON line per process group, the
// process_group_record with "step" and "attempt" added.
class SpawnJournal {
 public:
  SpawnJournal() = default;
  // The journal to append to: made (its folder must exist) at the first
  // record, so a run that starts no process has none.
  void set_path(const std::filesystem::path& path);
  // Writes the line for `pgid`, right after the process started. An error (a
  // full disk) is returned for the caller to record, and what was written of the
  // line is cut off again, so the lines after it still read; the ledger's
  // attempt_spawned event still covers the group once committed.
  Expected<void> record(const std::string& step_id, int attempt, int pgid, std::int64_t spawned_ms);
  // Called when the ledger has committed every group in the journal (their
  // attempt_spawned events): empties it once it holds kClearAbove bytes or more,
  // so it never holds much more than that (about 400 groups).
  void clear();
  static constexpr off_t kClearAbove = 64 * 1024;
  ~SpawnJournal();
  SpawnJournal(const SpawnJournal&) = delete;
  SpawnJournal& operator=(const SpawnJournal&) = delete;

 private:
  int fd_ = -1;
  off_t size_ = 0;           // what the file holds, in whole lines
  std::string same_fields_;  // the fields every line has alike, as JSON members
  std::filesystem::path path_;
};

// Returns how many processes were found and killed. Never kills the caller or its
// own process group. Reads the ledger (the attempts left running and their
// attempt_spawned events) and the run's spawn journal when `store` is given.
Expected<int> kill_orphans(Store* store, const std::string& run_id);

// Kills what one attempt left running outside its process group (`setsid cmd &`),
// found by the ORCH_RUN_ID, ORCH_STEP_ID and ORCH_ATTEMPT it inherited: before
// that attempt's `writes:` are restored, so nothing it started changes them
// meanwhile. Returns how many were killed.
int kill_attempt_leftovers(const std::string& run_id, const std::string& step_id, int attempt);

// What close_interrupted_attempts closed.
struct ClosedAttempts {
  std::vector<AttemptRecord> attempts;  // each as now recorded: interrupted, charged its usage
  // Step id → why its interrupted attempt's `writes:` could not be put back:
  // "its writes could not be put back: ...; the snapshot is kept in DIR" (or "their
  // snapshot, DIR, is gone"). The snapshot is kept (named in it) for a human to recover from, and nothing
  // may run the step again on the leftovers without being asked.
  std::map<std::string, std::string> unrestored;
  // Snapshots put back: to remove once the caller's transaction has committed
  // (should it die before, the next resume finds them and puts them back again).
  std::vector<std::filesystem::path> spent_snapshots;
};

// Closes the attempts of `run_id` that a dead driver left `running` (call after
// kill_orphans, inside the caller's transaction): each becomes interrupted and
// uncounted, its `writes:` snapshot is restored, and an attempt_interrupted event
// says whether that worked (with a restore_failed event when it did not; a
// snapshot that is gone or damaged is such a failure, not a pass). What the
// attempt reported in its usage file before it was killed was spent: it is
// charged to the attempt's row (so the run's totals, summed from the attempts,
// include it); the caller adds their spend to their steps' rows (charge_step).
// Each is stamped finished at `now_ms` (when the ledger learnt it ended) and its
// duration runs from its start to `last_alive_ms`, the dead driver's last sign of
// life (refresh_running_totals: the run row's heartbeat or the latest attempt
// time): as long as orch is known to have watched it, not the downtime after.
Expected<ClosedAttempts> close_interrupted_attempts(Store& store, const std::string& run_id,
                                                    std::int64_t now_ms, std::int64_t last_alive_ms);

// Removes the snapshots `closed` put back (after the transaction committed).
void remove_spent_snapshots(const ClosedAttempts& closed);

// Adds to `step`'s totals the tokens, cost and duration of those of `closed`
// that are its: the wall time an interrupted attempt was watched counts toward
// the step's wall budget, as it does when orch is stopped by a signal.
void charge_step(StepRecord& step, const std::vector<AttemptRecord>& closed);

}  // namespace orch
