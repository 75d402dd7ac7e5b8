// cli/detached_driver.cc — a run's driver in a process of its own (cli/detached_driver.h).
#include "cli/detached_driver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/common.h"

namespace orch::cli {

namespace fs = std::filesystem;

fs::path detached_log_path(const Store& store, const std::string& run_id) {
  return store.folder() / "detached" / (run_id + ".log");
}

fs::path orch_binary_path() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "orch";
  if (self.filename() == "orch") return self;
  return self.parent_path() / "orch";
}

int exec_orch_serve(const std::vector<std::string>& words) {
  const fs::path server = orch_binary_path().parent_path() / "orch-serve";
  std::vector<std::string> all = {"orch-serve"};
  all.insert(all.end(), words.begin(), words.end());
  std::vector<char*> argv;
  for (std::string& w : all) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(server.c_str(), argv.data());
  return report_error(
      Error{ErrorCode::Io, fmt::format("cannot start {}: {} (orch-serve is built and installed beside orch "
                                       "when cpp-httplib is there: scripts/install-deps.sh installs it)",
                                       server.string(), std::strerror(errno))});
}

Expected<int> start_detached_driver(const DetachedDriver& d) {
  std::vector<std::string> words = {d.orch.string(), "resume", d.run_id, "--store", d.store};
  for (const auto& [flag, value] : {std::pair{"--models", &d.models}, std::pair{"--registry", &d.registry},
                                    std::pair{"--workers", &d.workers}}) {
    if (value->empty()) continue;
    words.push_back(flag);
    words.push_back(*value);
  }
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  std::error_code ec;
  fs::create_directories(d.log.parent_path(), ec);
  const int log = ::open(d.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0)
    return fail(ErrorCode::Io,
                fmt::format("{}: cannot open the driver's log: {}", d.log.string(), std::strerror(errno)));
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // `started`: the middle process writes the driver's pid (or -errno of its
  // fork); `exec_failed`: the driver writes exec's errno, or closes it on exec.
  int started[2] = {-1, -1};
  int exec_failed[2] = {-1, -1};
  if (devnull < 0 || ::pipe2(started, O_CLOEXEC) != 0 || ::pipe2(exec_failed, O_CLOEXEC) != 0) {
    const int err = errno;
    for (int fd : {log, devnull, started[0], started[1], exec_failed[0], exec_failed[1]})
      if (fd >= 0) ::close(fd);
    return fail(ErrorCode::Spawn, fmt::format("cannot start the run's driver: {}", std::strerror(err)));
  }
  // Only async-signal-safe calls between fork and exec: this process may have threads.
  const pid_t child = ::fork();
  if (child == 0) {
    ::setsid();
    const pid_t grandchild = ::fork();
    if (grandchild != 0) {
      const int told = grandchild > 0 ? grandchild : -errno;
      (void)!::write(started[1], &told, sizeof told);
      ::_exit(0);
    }
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    const int err = errno;
    (void)!::write(exec_failed[1], &err, sizeof err);
    ::_exit(127);
  }
  const int fork_errno = errno;
  for (int fd : {log, devnull, started[1], exec_failed[1]}) ::close(fd);
  auto read_int = [](int fd) {
    int value = 0;
    ssize_t got = 0;
    while ((got = ::read(fd, &value, sizeof value)) < 0 && errno == EINTR) {
    }
    ::close(fd);
    return got == sizeof value ? value : 0;
  };
  if (child < 0) {
    ::close(started[0]);
    ::close(exec_failed[0]);
    return fail(ErrorCode::Spawn,
                fmt::format("cannot start the run's driver: fork: {}", std::strerror(fork_errno)));
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int pid = read_int(started[0]);
  if (pid <= 0) {
    ::close(exec_failed[0]);
    return fail(ErrorCode::Spawn, fmt::format("cannot start the run's driver: fork: {}",
                                              std::strerror(pid < 0 ? -pid : EAGAIN)));
  }
  // EOF when the exec happened (the pipe closed on exec).
  if (const int err = read_int(exec_failed[0]); err != 0)
    return fail(ErrorCode::Spawn,
                fmt::format("cannot start the run's driver {}: {}", d.orch.string(), std::strerror(err)));
  return pid;
}

}  // namespace orch::cli
