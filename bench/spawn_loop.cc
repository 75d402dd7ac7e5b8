// bench/spawn_loop.cc — the baseline for the 5000-step benchmark.
//
//   spawn_loop N J CMD [ARG...]
//   spawn_loop --vfork N J CMD [ARG...]
//   spawn_loop --orch-mechanics DIR N J CMD [ARG...]
//   spawn_loop --orch-mechanics DIR --ledger DB N J CMD [ARG...]
//
// Runs CMD N times with posix_spawnp, keeping at most J children running at
// once (reaping with waitpid), and prints the elapsed wall time in seconds.
// This is the baseline orch (and make, ninja) are compared against in
// bench/run.sh. No orch code is used.
// Exits 1 if any child could not be spawned or did not exit 0.
//
// --vfork: the same loop starting each child with vfork and execve (CMD looked up
// in PATH once, before the loop). orch starts its children that way (see
// src/exec/subprocess.cc for why): this loop shows what that alone saves against
// posix_spawn on the machine at hand.
//
// --orch-mechanics DIR starts and ends each child the way orch's shell executor
// does (src/exec/subprocess.cc), written again here: vfork, then in the child its
// own process group, stdin from /dev/null, stdout and stderr to pipes, cwd DIR,
// default dispositions for the signals orch resets and for every caught one, no
// blocked signals, and execve of CMD as found in PATH once (orch remembers its
// PATH lookups); in the parent a pidfd watched with poll(2), the pipes read until
// end of file, and the group killed once the child has exited (then the pipes
// are read to their end).
// What it adds to the plain loop is what those mechanics cost; what orch adds to
// it is orch's own work (its ledger, checks and bookkeeping).
//
// --ledger DB adds the least durable record a per-turn SQLite ledger can keep,
// in a new database DB (WAL, synchronous = NORMAL, as orch's ledger): each turn
// of the loop is one transaction that records the end of every child reaped
// since the last one (an UPDATE of its attempt row and an event row) and the
// start of every child about to be spawned (an attempt row and an event row),
// committed before those children are spawned. Two tables with integer keys, no
// other index, statements prepared once. What orch adds to this is the rest of
// its bookkeeping, not the cost of durability itself.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace {

int usage() {
  std::fprintf(stderr, "usage: spawn_loop [--vfork | --orch-mechanics DIR [--ledger DB]] N J CMD [ARG...]\n");
  return 2;
}

bool parse_count(const char* text, long& out) {
  char* end = nullptr;
  out = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && out > 0;
}

// The plain loop: posix_spawnp with nothing else, waitpid for any child.
long plain_loop(long total, long jobs, char** command) {
  long started = 0;
  long running = 0;
  long failures = 0;
  while (started < total || running > 0) {
    while (started < total && running < jobs) {
      pid_t pid = 0;
      const int rc = posix_spawnp(&pid, command[0], nullptr, nullptr, command, environ);
      ++started;
      if (rc != 0) {
        std::fprintf(stderr, "spawn_loop: cannot spawn %s: %s\n", command[0], std::strerror(rc));
        ++failures;
        continue;
      }
      ++running;
    }
    if (running == 0) {
      continue;
    }
    int status = 0;
    const pid_t done = waitpid(-1, &status, 0);
    if (done < 0) {
      std::perror("spawn_loop: waitpid");
      return -1;
    }
    --running;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failures;
    }
  }
  return failures;
}

// CMD[0] as execvp would find it (in PATH when it has no '/'); empty if nowhere.
std::string resolve(const char* name) {
  if (std::strchr(name, '/') != nullptr) return name;
  const char* path = std::getenv("PATH");
  std::string rest = path != nullptr ? path : "/bin:/usr/bin";
  for (;;) {
    const auto colon = rest.find(':');
    const std::string dir = rest.substr(0, colon);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string::npos) return {};
    rest.erase(0, colon + 1);
  }
}

// A child running `file`, started with vfork (in a function of its own, so that
// no variable of the loop lives in the frame vfork returns to twice).
[[gnu::noinline]] pid_t vfork_exec(const char* file, char** command) {
  const pid_t pid = vfork();
  if (pid == 0) {
    execve(file, command, environ);
    _exit(127);
  }
  return pid;
}

// The plain loop again, each child started with vfork and execve.
long vfork_loop(long total, long jobs, char** command) {
  const std::string file = resolve(command[0]);
  if (file.empty()) {
    std::fprintf(stderr, "spawn_loop: %s not found in PATH\n", command[0]);
    return -1;
  }
  long started = 0;
  long running = 0;
  long failures = 0;
  while (started < total || running > 0) {
    while (started < total && running < jobs) {
      const pid_t pid = vfork_exec(file.c_str(), command);
      ++started;
      if (pid < 0) {
        std::perror("spawn_loop: vfork");
        ++failures;
        continue;
      }
      ++running;
    }
    if (running == 0) continue;
    int status = 0;
    if (waitpid(-1, &status, 0) < 0) {
      std::perror("spawn_loop: waitpid");
      return -1;
    }
    --running;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }
  return failures;
}

struct Child {
  long id = 0;  // 1, 2, ... in the order started
  pid_t pid = -1;
  int out = -1;    // read end of the stdout pipe, -1 once at end of file
  int err = -1;    // read end of the stderr pipe, -1 once at end of file
  int pidfd = -1;  // readable once the child has exited
  bool exited = false;
};

void drain(int& fd) {
  std::array<char, 65536> buffer{};
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      close(fd);
      fd = -1;
    }
    return;  // end of file, or EAGAIN: nothing more for now
  }
}

// The 64-bit mask after "KEY:\t" in the text of a /proc/PID/status file.
bool status_mask(const char* text, std::size_t size, const char* key, unsigned long long* mask) {
  const std::size_t key_size = std::strlen(key);
  for (std::size_t at = 0; at + key_size < size; ++at) {
    if ((at == 0 || text[at - 1] == '\n') && std::memcmp(text + at, key, key_size) == 0) {
      std::size_t i = at + key_size;
      while (i < size && (text[i] == '\t' || text[i] == ' ')) ++i;
      unsigned long long value = 0;
      std::size_t digits = 0;
      for (; i < size; ++i, ++digits) {
        const char c = static_cast<char>(text[i] | 0x20);  // lower case
        if (c >= '0' && c <= '9') {
          value = value * 16 + static_cast<unsigned>(c - '0');
        } else if (c >= 'a' && c <= 'f') {
          value = value * 16 + static_cast<unsigned>(c - 'a' + 10);
        } else {
          break;
        }
      }
      if (digits == 0) return false;
      *mask = value;
      return true;
    }
  }
  return false;
}

// What the child does between vfork and execve, as orch's (run_child in
// src/exec/subprocess.cc and src/exec/child_signals.cc): only system calls, on
// the parent's memory. The caught and ignored signals are read from
// /proc/self/status, and only those that need it are set back to SIG_DFL.
[[noreturn]] void child_like_orch(const char* dir, const char* file, char** command, int out, int err,
                                  const sigset_t& defaults, volatile int* error) {
  char status[4096];
  std::size_t size = 0;
  const int status_fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (status_fd >= 0) {
    ssize_t n = 0;
    while (size < sizeof status && (n = read(status_fd, status + size, sizeof status - size)) > 0)
      size += static_cast<std::size_t>(n);
    close(status_fd);
  }
  unsigned long long caught = 0;
  unsigned long long ignored = 0;
  if (!status_mask(status, size, "SigCgt:", &caught) || !status_mask(status, size, "SigIgn:", &ignored)) {
    *error = ENOSYS;  // the benchmark needs /proc
    _exit(127);
  }
  for (int sig = 1; sig < NSIG && sig <= 64; ++sig) {
    const unsigned long long bit = 1ULL << (sig - 1);
    if ((caught & bit) != 0 || ((ignored & bit) != 0 && sigismember(&defaults, sig) == 1)) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(sig, &dfl, nullptr);
    }
  }
  const int null_fd = open("/dev/null", O_RDONLY);
  if (setpgid(0, 0) == 0 && null_fd >= 0 && dup2(null_fd, 0) == 0 && close(null_fd) == 0 &&
      dup2(out, 1) == 1 && dup2(err, 2) == 2 && chdir(dir) == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(file, command, environ);
  }
  *error = errno;
  _exit(127);
}

// Starts CMD (found at `file`) as orch's shell executor does; false (with a
// message) if it could not.
bool start_like_orch(Child& child, const char* dir, const char* file, char** command) {
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    std::perror("spawn_loop: pipe2");
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) close(fd);
    return false;
  }
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);

  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU, SIGXFSZ,
                  SIGUSR1, SIGUSR2, SIGALRM}) {
    sigaddset(&defaults, sig);
  }
  volatile int child_error = 0;
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = vfork();
  if (pid == 0) child_like_orch(dir, file, command, out_pipe[1], err_pipe[1], defaults, &child_error);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0 || child_error != 0) {
    std::fprintf(stderr, "spawn_loop: cannot spawn %s: %s\n", command[0],
                 std::strerror(pid < 0 ? errno : child_error));
    if (pid > 0) waitpid(pid, nullptr, 0);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return false;
  }
  child.pid = pid;
  child.out = out_pipe[0];
  child.err = err_pipe[0];
  child.pidfd = static_cast<int>(syscall(SYS_pidfd_open, child.pid, 0));
  if (child.pidfd < 0) {
    std::perror("spawn_loop: pidfd_open");
    return false;
  }
  return true;
}

// The --ledger database: one transaction per turn of the loop.
class Ledger {
 public:
  bool open(const char* path) {
    if (sqlite3_open(path, &db_) != SQLITE_OK) return fail("open");
    const char* setup =
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
        "CREATE TABLE attempts (id INTEGER PRIMARY KEY, started_ms INTEGER NOT NULL, finished_ms INTEGER,"
        " exit_code INTEGER);"
        "CREATE TABLE events (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL, kind TEXT NOT NULL,"
        " ts INTEGER NOT NULL);";
    if (sqlite3_exec(db_, setup, nullptr, nullptr, nullptr) != SQLITE_OK) return fail("set up");
    return prepare(begin_, "BEGIN") && prepare(commit_, "COMMIT") &&
           prepare(start_, "INSERT INTO attempts (id, started_ms) VALUES (?1, ?2)") &&
           prepare(finish_, "UPDATE attempts SET finished_ms = ?2, exit_code = ?3 WHERE id = ?1") &&
           prepare(event_, "INSERT INTO events (attempt, kind, ts) VALUES (?1, ?2, ?3)");
  }
  ~Ledger() {
    for (sqlite3_stmt* s : {begin_, commit_, start_, finish_, event_}) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  bool begin() { return step(begin_); }
  bool commit() { return step(commit_); }
  bool started(long id) {
    sqlite3_bind_int64(start_, 1, id);
    sqlite3_bind_int64(start_, 2, now_ms());
    return step(start_) && event(id, "started");
  }
  bool finished(long id, int exit_code) {
    sqlite3_bind_int64(finish_, 1, id);
    sqlite3_bind_int64(finish_, 2, now_ms());
    sqlite3_bind_int(finish_, 3, exit_code);
    return step(finish_) && event(id, "finished");
  }

 private:
  static long long now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  bool event(long id, const char* kind) {
    sqlite3_bind_int64(event_, 1, id);
    sqlite3_bind_text(event_, 2, kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(event_, 3, now_ms());
    return step(event_);
  }
  bool prepare(sqlite3_stmt*& s, const char* sql) {
    return sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) == SQLITE_OK || fail(sql);
  }
  bool step(sqlite3_stmt* s) {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE || fail("write");
  }
  bool fail(const char* what) {
    std::fprintf(stderr, "spawn_loop: ledger: %s: %s\n", what, db_ ? sqlite3_errmsg(db_) : "out of memory");
    return false;
  }
  sqlite3* db_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* start_ = nullptr;
  sqlite3_stmt* finish_ = nullptr;
  sqlite3_stmt* event_ = nullptr;
};

long orch_mechanics_loop(const char* dir, Ledger* ledger, long total, long jobs, char** command) {
  const std::string file = resolve(command[0]);
  if (file.empty()) {
    std::fprintf(stderr, "spawn_loop: %s not found in PATH\n", command[0]);
    return -1;
  }
  long started = 0;
  long failures = 0;
  std::vector<Child> running;
  std::vector<pollfd> fds;
  std::vector<std::pair<long, int>> ended;  // attempt id, exit code: not yet recorded
  while (started < total || !running.empty()) {
    const long starting = std::min(total - started, jobs - static_cast<long>(running.size()));
    if (ledger != nullptr && (starting > 0 || !ended.empty())) {
      bool ok = ledger->begin();
      for (const auto& [id, code] : ended) ok = ok && ledger->finished(id, code);
      for (long k = 0; k < starting; ++k) ok = ok && ledger->started(started + k + 1);
      if (!ok || !ledger->commit()) return -1;
      ended.clear();
    }
    while (started < total && static_cast<long>(running.size()) < jobs) {
      ++started;
      Child child;
      child.id = started;
      if (!start_like_orch(child, dir, file.c_str(), command)) return -1;
      running.push_back(child);
    }
    fds.clear();
    for (const Child& c : running) {
      for (int fd : {c.out, c.err, c.exited ? -1 : c.pidfd}) {
        if (fd >= 0) fds.push_back(pollfd{fd, POLLIN, 0});
      }
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      std::perror("spawn_loop: poll");
      return -1;
    }
    for (std::size_t i = 0; i < running.size();) {
      Child& c = running[i];
      if (c.out >= 0) drain(c.out);
      if (c.err >= 0) drain(c.err);
      if (!c.exited) {
        pollfd p{c.pidfd, POLLIN, 0};
        c.exited = poll(&p, 1, 0) == 1;
        // As orch does: once the child has exited, whatever it left in its group
        // (holding the pipes open, say) is killed, and the pipes drain to their end.
        if (c.exited) kill(-c.pid, SIGKILL);
      }
      if (!c.exited || c.out >= 0 || c.err >= 0) {
        ++i;
        continue;
      }
      int status = 0;
      while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
      }
      close(c.pidfd);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
      ended.emplace_back(c.id, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (ledger != nullptr && !ended.empty()) {
    bool ok = ledger->begin();
    for (const auto& [id, code] : ended) ok = ok && ledger->finished(id, code);
    if (!ok || !ledger->commit()) return -1;
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  int first = 1;
  const char* orch_dir = nullptr;
  const char* ledger_path = nullptr;
  bool use_vfork = false;
  if (argc > 1 && std::strcmp(argv[1], "--vfork") == 0) {
    use_vfork = true;
    first = 2;
  } else if (argc > 2 && std::strcmp(argv[1], "--orch-mechanics") == 0) {
    orch_dir = argv[2];
    first = 3;
    if (argc > 4 && std::strcmp(argv[3], "--ledger") == 0) {
      ledger_path = argv[4];
      first = 5;
    }
  }
  long total = 0;
  long jobs = 0;
  if (argc < first + 3 || !parse_count(argv[first], total) || !parse_count(argv[first + 1], jobs)) {
    return usage();
  }
  char** command = argv + first + 2;

  Ledger ledger;
  const auto start = std::chrono::steady_clock::now();
  if (ledger_path != nullptr && !ledger.open(ledger_path)) return 1;
  const long failures =
      orch_dir    ? orch_mechanics_loop(orch_dir, ledger_path ? &ledger : nullptr, total, jobs, command)
      : use_vfork ? vfork_loop(total, jobs, command)
                  : plain_loop(total, jobs, command);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  if (failures < 0) return 1;
  std::printf("%.3f\n", elapsed.count());
  if (failures > 0) {
    std::fprintf(stderr, "spawn_loop: %ld of %ld commands failed\n", failures, total);
    return 1;
  }
  return 0;
}
