#include "util/file_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace orch {

namespace fs = std::filesystem;

namespace {
std::string read_pid(int fd) {
  char buf[32] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool names_a_live_process(const std::string& pid) {
  char* end = nullptr;
  long n = std::strtol(pid.c_str(), &end, 10);
  return !pid.empty() && *end == '\0' && n > 0 && (kill(static_cast<pid_t>(n), 0) == 0 || errno == EPERM);
}

// The pid of the process holding the lock, for the message. The holder writes it
// just after it takes the lock, so a file read at that moment may still be empty
// or name the previous (dead) holder: read again for a little while.
std::string read_owner(int fd) {
  std::string pid = read_pid(fd);
  for (int tries = 0; tries < 40 && !names_a_live_process(pid); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pid = read_pid(fd);
  }
  return names_a_live_process(pid) ? pid : "unknown";
}
}  // namespace

Expected<FileLock> FileLock::acquire(
    const fs::path& path, const std::function<std::string(const std::string& holder)>& busy_message) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(ErrorCode::Io, fmt::format("{}: cannot open lock file: {}", path.string(), strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::string holder = read_owner(fd);
    close(fd);
    if (err == EWOULDBLOCK) return fail(ErrorCode::Busy, busy_message(holder));
    return fail(ErrorCode::Io, fmt::format("{}: cannot lock: {}", path.string(), strerror(err)));
  }
  // Written over the previous holder's pid, then cut to length, so that the file
  // is never empty in between. The pid is only for messages; the lock is what matters.
  std::string pid = std::to_string(getpid()) + "\n";
  if (pwrite(fd, pid.data(), pid.size(), 0) < 0 || ftruncate(fd, static_cast<off_t>(pid.size())) != 0) {
    // Nothing to do: a message will say "pid unknown".
  }
  return FileLock(fd);
}

bool FileLock::is_held(const fs::path& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace orch
