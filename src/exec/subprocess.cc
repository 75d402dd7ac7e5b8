#include "exec/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>

#include "exec/child_signals.h"

extern char** environ;

namespace orch {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kMaxDrainReads = 64;  // 4 MiB per stream per drain, then back to the loop

// Everything the child does between vfork and exec, prepared by the parent: until
// it execs, the child runs on orch's memory and stack, so it may only make system
// calls (no allocation, no lock, no C++ object).
struct ChildPlan {
  std::vector<const char*> candidates;  // the files to exec, tried in order
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;  // nullptr: orch's own working folder
  int stdin_fd = -1;          // -1: /dev/null
  int stdout_fd = -1;
  int stderr_fd = -1;
  sigset_t defaults{};  // signals set back to their default disposition
  pid_t die_with = 0;   // killed when this process (orch) dies (children_die_with_orch); 0: not
};

std::atomic<bool> g_children_die_with_orch{false};

// The files execvp would try for `name` under `path`, in order: each PATH entry
// followed by "/name" (an empty entry is the working folder, so plain `name`).
std::vector<std::string> path_candidates(const std::string& name, std::string_view path) {
  std::vector<std::string> out;
  for (;;) {
    const auto colon = path.find(':');
    const std::string_view dir = path.substr(0, colon);
    out.push_back(dir.empty() ? name : fmt::format("{}/{}", dir, name));
    if (colon == std::string_view::npos) return out;
    path.remove_prefix(colon + 1);
  }
}

// fd `from` as fd `to`, inherited across exec (dup2 of an fd onto itself would
// leave its close-on-exec flag set).
bool move_fd(int from, int to) {
  if (from == to) return ::fcntl(to, F_SETFD, 0) == 0;
  return ::dup2(from, to) == to;
}

// The child's way out when it cannot exec: errno in *error, read by the parent
// once the child has exited.
[[noreturn]] void child_failed(volatile int* error) {
  *error = errno != 0 ? errno : EINVAL;
  ::_exit(127);
}

// The child's side: sets up the process as posix_spawn would (process group,
// stdin from /dev/null, stdout and stderr to the pipes, working folder, signal
// dispositions and mask), then execs the first candidate that can be, searching
// like execvp without its /bin/sh fallback (as posix_spawnp does).
[[noreturn]] void run_child(const ChildPlan& plan, volatile int* error) {
  auto fail = [error] { child_failed(error); };
  // A signal handler of orch's must never run in the child, which shares orch's
  // memory until it execs: every caught signal goes back to its default while all
  // are still blocked (as the parent left them), then the mask is emptied.
  reset_signal_dispositions(plan.defaults);
  if (::setpgid(0, 0) != 0) fail();
  // Set before exec, and kept across it; an orch that died before this line is
  // seen by the parent's pid having changed (the child was reparented).
  if (plan.die_with != 0 && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != plan.die_with)) fail();
  if (plan.stdin_fd >= 0) {
    if (!move_fd(plan.stdin_fd, 0)) fail();
  } else {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd < 0 || !move_fd(null_fd, 0)) fail();
    if (null_fd != 0) ::close(null_fd);
  }
  if (!move_fd(plan.stdout_fd, 1) || !move_fd(plan.stderr_fd, 2)) fail();
  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) fail();
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  bool denied = false;
  for (const char* file : plan.candidates) {
    ::execve(file, plan.argv, plan.envp);
    switch (errno) {
      case EACCES:
        denied = true;
        break;
      case ENOENT:
      case ENOTDIR:
      case ESTALE:
      case ENODEV:
      case ETIMEDOUT:
        break;
      default:
        fail();
    }
  }
  if (denied) errno = EACCES;
  child_failed(error);
}

// Starts a child with vfork and run_child. Returns 0 with *pid set, or the errno
// that made the start fail (that child already reaped).
//
// vfork rather than posix_spawn: glibc's posix_spawn maps a fresh stack for each
// child and unmaps it afterwards, and the unmapping must flush the TLB of the
// core the child ran on. With two cores busy running steps that flush was a
// tenth of orch's CPU a step, and the fresh stack's page faults cost the child
// as much again (docs/benchmarks.md). A vfork child runs on orch's own stack
// below this frame, and the calling thread waits until it has exec'd or exited.
int spawn_child(const ChildPlan& plan, pid_t* pid_out) {
  volatile int child_error = 0;
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::vfork();
  if (pid == 0) run_child(plan, &child_error);
  const int vfork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) return vfork_error;
  if (child_error != 0) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return child_error;
  }
  *pid_out = pid;
  return 0;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string_view env_name(std::string_view entry) {
  return entry.substr(0, entry.find('='));
}

// The overriding value of `name` in `env` (the last one given wins).
std::optional<std::string_view> override_of(const std::vector<std::pair<std::string, std::string>>& env,
                                            std::string_view name) {
  std::optional<std::string_view> found;
  for (const auto& [k, v] : env) {
    if (k == name) found = v;
  }
  return found;
}

// The PATH argv[0] is resolved in: the step's own when it sets one, else orch's.
std::string effective_path(const std::vector<std::pair<std::string, std::string>>& env) {
  if (auto p = override_of(env, "PATH")) return std::string(*p);
  const char* own = std::getenv("PATH");
  return own ? own : "/bin:/usr/bin";
}

// PATH lookups, remembered for the process like a shell's command hash. Without
// it, `run: [true]` under a PATH of a dozen folders makes every spawned child try
// (and fail) an execve in each folder before /usr/bin, while orch waits for the
// child to exec. An answer is reused only while every PATH folder up to and
// including the one it came from is unchanged — same device, inode and
// modification time; adding, removing or renaming a file in a folder changes its
// time — and only if none of them had changed in the second before the search (a
// change in the same clock tick as the search would leave the time as it was).
// A PATH with a relative entry (which the child resolves against its own working
// folder, not orch's) is left to the search at spawn time; "not found" is never
// remembered.
class PathCache {
 public:
  std::optional<std::string> find(const std::string& name, const std::string& path) {
    if (has_relative_entry(path)) return std::nullopt;
    std::lock_guard lock(mu_);
    const auto key = std::make_pair(path, name);
    if (auto it = entries_.find(key); it != entries_.end()) {
      if (unchanged(it->second)) return it->second.resolved;
      entries_.erase(it);
    }
    ++searches_;
    Entry entry;
    bool cacheable = true;
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    std::string_view rest = path;
    for (;;) {
      const auto colon = rest.find(':');
      const std::string dir(rest.substr(0, colon));
      // A folder named twice (PATH=/a:/b:/a) was searched the first time.
      if (std::find(entry.dirs.begin(), entry.dirs.end(), dir) != entry.dirs.end()) {
        if (colon == std::string_view::npos) return std::nullopt;
        rest.remove_prefix(colon + 1);
        continue;
      }
      // The folder's stamp first: a file added to it after this is noticed later.
      const Stamp stamp = stamp_of(dir);
      if (stamp.exists && stamp.mtime.tv_sec + 1 >= now.tv_sec) cacheable = false;
      entry.dirs.push_back(dir);
      entry.stamps.push_back(stamp);
      const std::string candidate = dir + "/" + name;
      struct stat st {};
      if (stamp.exists && ::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          ::access(candidate.c_str(), X_OK) == 0) {
        entry.resolved = candidate;
        break;
      }
      if (colon == std::string_view::npos) return std::nullopt;
      rest.remove_prefix(colon + 1);
    }
    if (cacheable) entries_[key] = entry;
    return entry.resolved;
  }

  void forget(const std::string& name, const std::string& path) {
    std::lock_guard lock(mu_);
    entries_.erase(std::make_pair(path, name));
  }

  std::size_t searches() {
    std::lock_guard lock(mu_);
    return searches_;
  }

 private:
  struct Stamp {
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    timespec mtime{};
  };
  struct Entry {
    std::string resolved;
    std::vector<std::string> dirs;
    std::vector<Stamp> stamps;
  };

  static bool has_relative_entry(std::string_view path) {
    for (;;) {
      const auto colon = path.find(':');
      if (path.substr(0, colon).empty() || path.front() != '/') return true;
      if (colon == std::string_view::npos) return false;
      path.remove_prefix(colon + 1);
    }
  }
  static Stamp stamp_of(const std::string& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return {};
    return {true, st.st_dev, st.st_ino, st.st_mtim};
  }
  static bool same(const Stamp& a, const Stamp& b) {
    if (a.exists != b.exists) return false;
    return !a.exists || (a.dev == b.dev && a.ino == b.ino && a.mtime.tv_sec == b.mtime.tv_sec &&
                         a.mtime.tv_nsec == b.mtime.tv_nsec);
  }
  static bool unchanged(const Entry& e) {
    for (std::size_t i = 0; i < e.dirs.size(); ++i)
      if (!same(stamp_of(e.dirs[i]), e.stamps[i])) return false;
    return true;
  }

  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Entry> entries_;  // (PATH, name)
  std::size_t searches_ = 0;
};

PathCache& path_cache() {
  static PathCache cache;
  return cache;
}

// The values orch gives each attempt of its own (ORCH_IN_<NAME>, ORCH_P0...,
// a check's ORCH_RESULT and ORCH_RESULT_FILE). Inherited from an orch that runs
// this one inside a step, they are that step's, not this attempt's: a script
// reading $ORCH_IN_x for an input it was not given must find it unset.
bool attempt_value(std::string_view name) {
  if (name.starts_with("ORCH_IN_") || name == "ORCH_RESULT" || name == "ORCH_RESULT_FILE") return true;
  return name.size() > 6 && name.starts_with("ORCH_P") &&
         name.substr(6).find_first_not_of("0123456789") == std::string_view::npos;
}

std::string spawn_failure_message(const std::string& program, int err, const std::filesystem::path& cwd) {
  if (err == ENOENT || err == ENOTDIR || err == EACCES) {
    // The child reports a failed chdir with the same errno as a failed exec.
    std::error_code ec;
    if (!cwd.empty() && !std::filesystem::is_directory(cwd, ec)) {
      return fmt::format("cannot run '{}': working folder '{}' does not exist or is not a folder", program,
                         cwd.string());
    }
  }
  if (err == E2BIG) {
    return fmt::format(
        "cannot run '{}': {} (its arguments and environment together are more than the system "
        "takes: {} bytes)",
        program, std::strerror(err), sysconf(_SC_ARG_MAX));
  }
  if (err == ENOENT && program.find('/') == std::string::npos) {
    return fmt::format("cannot run '{}': {} (not found in PATH)", program, std::strerror(err));
  }
  return fmt::format("cannot run '{}': {}", program, std::strerror(err));
}

}  // namespace

std::optional<std::string> program_not_runnable(const std::string& program, const char* path) {
  if (program.empty()) return std::string("cannot run a step with an empty command");
  auto runnable = [](const std::string& file) {
    struct stat st {};
    return ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(file.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) {
    if (runnable(program)) return std::nullopt;
    struct stat st {};
    const int err = ::stat(program.c_str(), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : EACCES;
    return fmt::format("cannot run '{}': {}", program, std::strerror(err));
  }
  const std::string_view folders = path != nullptr ? path : "/usr/bin:/bin";
  for (std::size_t at = 0; at <= folders.size();) {
    std::size_t end = folders.find(':', at);
    if (end == std::string_view::npos) end = folders.size();
    std::string_view folder = folders.substr(at, end - at);
    if (folder.empty()) folder = ".";  // an empty PATH entry is the current folder
    if (runnable(std::string(folder) + "/" + program)) return std::nullopt;
    at = end + 1;
  }
  return fmt::format("cannot run '{}': {} (not found in PATH)", program, std::strerror(ENOENT));
}

void children_die_with_orch() {
  g_children_die_with_orch.store(true, std::memory_order_relaxed);
}

std::size_t subprocess_path_searches() {
  return path_cache().searches();
}

Subprocess::Subprocess(EventLoop& loop, Handlers handlers) : loop_(loop), handlers_(std::move(handlers)) {}

Expected<std::unique_ptr<Subprocess>> Subprocess::start(const Options& options, EventLoop& loop,
                                                        Handlers handlers) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return fail(ErrorCode::Spawn, "cannot run a step with an empty command");
  }
  // A C string ends at its first NUL: the process would get a shorter value than
  // the step was given, without a word. (A placeholder filled from a result that
  // holds one, typically.)
  for (std::size_t i = 0; i < options.argv.size(); ++i) {
    if (options.argv[i].find('\0') != std::string::npos)
      return fail(ErrorCode::Spawn,
                  fmt::format("argument {} holds a NUL byte, which no process argument can carry", i));
  }
  for (const auto& [name, value] : options.env) {
    if (name.find('\0') != std::string::npos || value.find('\0') != std::string::npos)
      return fail(ErrorCode::Spawn,
                  fmt::format("environment variable '{}' holds a NUL byte, which no environment variable can "
                              "carry",
                              name.substr(0, name.find('\0'))));
  }
  // Linux takes at most 32 pages (128 KiB) for one argument or one NAME=value,
  // and exec fails with a bare "Argument list too long": say which one, and how big.
  static const std::size_t kMaxArgString =
      32 * static_cast<std::size_t>(std::max(sysconf(_SC_PAGESIZE), 4096L));
  for (std::size_t i = 0; i < options.argv.size(); ++i)
    if (options.argv[i].size() + 1 > kMaxArgString)
      return fail(ErrorCode::Spawn,
                  fmt::format("argument {} is {} bytes, more than the {} bytes Linux passes in one argument "
                              "(give a large value in a file instead)",
                              i, options.argv[i].size(), kMaxArgString - 1));
  for (const auto& [name, value] : options.env)
    if (name.size() + value.size() + 2 > kMaxArgString)
      return fail(
          ErrorCode::Spawn,
          fmt::format("environment variable '{}' is {} bytes, more than the {} bytes Linux passes in one "
                      "variable (give a large value in a file instead)",
                      name, value.size(), kMaxArgString - 2 - name.size()));
  std::unique_ptr<Subprocess> self(new Subprocess(loop, std::move(handlers)));
  self->program_ = options.argv[0];
  self->drain_limit_ = options.drain_limit;

  // The standard input file, opened here (close-on-exec: the child dups it to 0)
  // so that a file that cannot be read is said as such, not as a failed exec.
  int stdin_fd = -1;
  if (!options.stdin_file.empty()) {
    stdin_fd = ::open(options.stdin_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (stdin_fd < 0)
      return fail(ErrorCode::Spawn,
                  fmt::format("cannot run '{}': cannot open its standard input {}: {}", self->program_,
                              options.stdin_file.string(), std::strerror(errno)));
  }
  // Read ends are non-blocking (so draining never hangs) and close-on-exec; the
  // write ends stay blocking, since the child shares their file description.
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], stdin_fd}) {
      if (fd >= 0) ::close(fd);
    }
    return fail(ErrorCode::Spawn,
                fmt::format("cannot run '{}': cannot create a pipe: {}", self->program_, std::strerror(err)));
  }
  self->out_.fd = out_pipe[0];
  self->err_.fd = err_pipe[0];
  self->out_.handler = std::move(self->handlers_.on_stdout);
  self->err_.handler = std::move(self->handlers_.on_stderr);
  ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);

  ChildPlan plan;
  plan.stdin_fd = stdin_fd;
  plan.stdout_fd = out_pipe[1];
  plan.stderr_fd = err_pipe[1];
  if (!options.cwd.empty()) plan.cwd = options.cwd.c_str();
  if (g_children_die_with_orch.load(std::memory_order_relaxed)) plan.die_with = ::getpid();
  // Default dispositions for the signals orch might ignore, since an ignored
  // disposition survives exec; no blocked signals (the engine may block
  // SIGINT/SIGTERM for a signalfd).
  sigemptyset(&plan.defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU, SIGXFSZ,
                  SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&plan.defaults, sig);
  }

  // orch's environment minus the overridden names, then the overrides (last wins).
  std::vector<std::string> overrides;
  overrides.reserve(options.env.size());
  for (std::size_t i = 0; i < options.env.size(); ++i) {
    const auto& name = options.env[i].first;
    bool later = false;
    for (std::size_t j = i + 1; j < options.env.size() && !later; ++j) later = options.env[j].first == name;
    if (!later) overrides.push_back(name + "=" + options.env[i].second);
  }
  std::vector<char*> envp;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view name = env_name(*e);
    if (!override_of(options.env, name) && !attempt_value(name)) envp.push_back(*e);
  }
  for (auto& kv : overrides) envp.push_back(kv.data());
  envp.push_back(nullptr);
  plan.envp = envp.data();

  std::vector<char*> argv;
  argv.reserve(options.argv.size() + 1);
  for (const auto& arg : options.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  plan.argv = argv.data();

  int rc = -1;  // -1: not tried yet
  pid_t pid = -1;
  const bool has_slash = self->program_.find('/') != std::string::npos;
  if (has_slash) {
    plan.candidates = {self->program_.c_str()};
    rc = spawn_child(plan, &pid);
  } else {
    // The remembered answer first; should it fail (a file made unexecutable since,
    // a script without #!), the search decides, as it always did. The search is
    // made in the child (after its chdir, so a relative PATH entry is taken in
    // its working folder), in the step's PATH when it sets one, else in orch's.
    const std::string path = effective_path(options.env);
    if (auto known = path_cache().find(self->program_, path)) {
      plan.candidates = {known->c_str()};
      rc = spawn_child(plan, &pid);
      if (rc != 0) path_cache().forget(self->program_, path);
    }
    if (rc != 0) {
      const std::vector<std::string> files = path_candidates(self->program_, path);
      plan.candidates.clear();
      for (const auto& file : files) plan.candidates.push_back(file.c_str());
      rc = spawn_child(plan, &pid);
    }
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (stdin_fd >= 0) ::close(stdin_fd);
  if (rc != 0) {
    close_fd(self->out_.fd);
    close_fd(self->err_.fd);
    return fail(ErrorCode::Spawn, spawn_failure_message(self->program_, rc, options.cwd));
  }
  self->pid_ = pid;

  Subprocess* raw = self.get();
  self->watch_stream(self->out_);
  self->watch_stream(self->err_);
  if (options.use_pidfd) self->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (self->pidfd_ >= 0) {  // pidfd_open sets close-on-exec itself
    loop.watch(self->pidfd_, POLLIN, [raw](short) { raw->on_leader_exit(); });
  } else {
    self->poll_timer_ =
        loop.add_timer(std::chrono::milliseconds(20), [raw] { raw->check_exit_without_pidfd(); });
  }
  return self;
}

Subprocess::~Subprocess() {
  loop_.cancel_timer(kill_timer_);
  loop_.cancel_timer(poll_timer_);
  loop_.cancel_timer(drain_timer_);
  if (pidfd_ >= 0) {
    loop_.unwatch(pidfd_);
    close_fd(pidfd_);
  }
  close_stream(out_);
  close_stream(err_);
  if (pid_ > 0 && !reaped_) {
    ::kill(-pid_, SIGKILL);  // the leader is not reaped, so the group id is still ours
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

void Subprocess::terminate(std::chrono::milliseconds grace) {
  if (reaped_) return;
  ::kill(-pid_, SIGTERM);
  ::kill(-pid_, SIGCONT);
  if (kill_timer_ == 0) {
    kill_timer_ = loop_.add_timer(grace, [this] {
      kill_timer_ = 0;
      kill();
    });
  }
}

void Subprocess::kill() {
  if (!reaped_) ::kill(-pid_, SIGKILL);
}

void Subprocess::watch_stream(Stream& stream) {
  loop_.watch(stream.fd, POLLIN, [this, &stream](short) {
    read_stream(stream, reaped_);
    finish_if_done();  // last: may destroy *this
  });
}

void Subprocess::read_stream(Stream& stream, bool drain) {
  char buffer[kReadChunk];
  for (int reads = 0; stream.fd >= 0 && reads < kMaxDrainReads; ++reads) {
    ssize_t n = ::read(stream.fd, buffer, sizeof buffer);
    if (n > 0) {
      if (stream.handler) stream.handler(std::string_view(buffer, static_cast<std::size_t>(n)));
      // A short read means the pipe is empty for now: wait for the next wakeup,
      // unless we are draining after the exit and want EOF in this same turn.
      if (static_cast<std::size_t>(n) < sizeof buffer && !drain) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_stream(stream);  // EOF, or a read error we can do nothing about
  }
}

void Subprocess::close_stream(Stream& stream) {
  if (stream.fd < 0) return;
  loop_.unwatch(stream.fd);
  close_fd(stream.fd);
}

void Subprocess::check_exit_without_pidfd() {
  poll_timer_ = 0;
  // WNOWAIT: look without reaping, so the group id stays ours until the group is killed.
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == pid_) {
    on_leader_exit();  // last: may destroy *this
    return;
  }
  poll_timer_ = loop_.add_timer(std::chrono::milliseconds(20), [this] { check_exit_without_pidfd(); });
}

void Subprocess::on_leader_exit() {
  if (reaped_) return;
  ::kill(-pid_, SIGKILL);  // the rest of the group; see the header
  int status = 0;
  pid_t got = -1;
  do {
    got = ::waitpid(pid_, &status, 0);
  } while (got < 0 && errno == EINTR);
  reaped_ = true;
  if (got == pid_ && WIFSIGNALED(status)) {
    exit_.signaled = true;
    exit_.signal = WTERMSIG(status);
  } else if (got == pid_ && WIFEXITED(status)) {
    exit_.code = WEXITSTATUS(status);
  }
  if (pidfd_ >= 0) {
    loop_.unwatch(pidfd_);
    close_fd(pidfd_);
  }
  loop_.cancel_timer(kill_timer_);
  kill_timer_ = 0;

  read_stream(out_, true);
  read_stream(err_, true);
  if (out_.fd >= 0 || err_.fd >= 0) {
    drain_timer_ = loop_.add_timer(drain_limit_, [this] {
      drain_timer_ = 0;
      close_stream(out_);
      close_stream(err_);
      finish_if_done();
    });
    return;
  }
  finish_if_done();  // last: may destroy *this
}

void Subprocess::finish_if_done() {
  if (finished_ || !reaped_ || out_.fd >= 0 || err_.fd >= 0) return;
  finished_ = true;
  loop_.cancel_timer(drain_timer_);
  drain_timer_ = 0;
  ExitHandler on_exit = std::move(handlers_.on_exit);
  if (on_exit) on_exit(exit_);  // last: may destroy *this
}

}  // namespace orch
