// engine/run_lock.h — at most one process drives a run at a time.
//
// A run is locked with flock(2) on <store>/locks/<run>.lock, held for as long as
// the RunLock lives. The kernel drops the lock when the process dies, even by
// kill -9, so a crashed run is immediately resumable and a live one never is
// twice. The lock file holds the owner's pid, for the error message.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "orch/error.h"

namespace orch {

class RunLock {
 public:
  // Takes the lock without waiting; ErrorCode::Busy names the owner's pid when held.
  // `when_busy(pid)`, when given, is that message (pid: the owner's, or "unknown"),
  // for a lock that is not a run's (`orch cancel` only knows runs).
  static Expected<RunLock> acquire(const std::filesystem::path& store_folder, const std::string& run_id,
                                   const std::function<std::string(const std::string& pid)>& when_busy = {});
  // True when some live process holds the run's lock (used by status and cancel).
  static bool is_held(const std::filesystem::path& store_folder, const std::string& run_id);

  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&& other) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace orch
