#include "engine/run_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace orch {

namespace fs = std::filesystem;

namespace {
fs::path lock_path(const fs::path& store_folder, const std::string& run_id) {
  return store_folder / "locks" / (run_id + ".lock");
}

std::string read_owner(int fd) {
  char buf[32] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "unknown";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "unknown" : s;
}
}  // namespace

Expected<RunLock> RunLock::acquire(const fs::path& store_folder, const std::string& run_id) {
  std::error_code ec;
  fs::create_directories(store_folder / "locks", ec);
  fs::path path = lock_path(store_folder, run_id);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(ErrorCode::Io, fmt::format("{}: cannot open lock file: {}", path.string(), strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::string owner = read_owner(fd);
    close(fd);
    if (err == EWOULDBLOCK)
      return fail(ErrorCode::Busy,
                  fmt::format("run {} is already being driven by another orch process (pid {}); "
                              "wait for it to finish or `orch cancel {}`",
                              run_id, owner, run_id));
    return fail(ErrorCode::Io, fmt::format("{}: cannot lock: {}", path.string(), strerror(err)));
  }
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for messages; the lock itself is what matters.
  }
  return RunLock(fd);
}

bool RunLock::is_held(const fs::path& store_folder, const std::string& run_id) {
  fs::path path = lock_path(store_folder, run_id);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

RunLock::RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RunLock& RunLock::operator=(RunLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunLock::~RunLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace orch
