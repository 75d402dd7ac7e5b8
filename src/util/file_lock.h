// util/file_lock.h — a lock that one process at a time holds, on a file.
//
// flock(2) on a lock file, held for as long as the FileLock lives. The kernel
// drops the lock when the process dies, even by kill -9, so what it guards is
// free again at once, and two live holders never coexist. The file holds the
// holder's pid, for messages only.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "orch/error.h"

namespace orch {

class FileLock {
 public:
  // Takes the lock on `path` (making its folder) without waiting. When a live
  // process holds it: ErrorCode::Busy, with the message `busy_message(holder)`
  // writes (holder: that process's pid, or "unknown").
  static Expected<FileLock> acquire(
      const std::filesystem::path& path,
      const std::function<std::string(const std::string& holder)>& busy_message);
  // True when a live process holds the lock on `path`.
  static bool is_held(const std::filesystem::path& path);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace orch
