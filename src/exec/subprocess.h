// exec/subprocess.h — one child process, driven by the EventLoop.
//
// A Subprocess is started with vfork and exec (no copy of orch's address space;
// subprocess.cc says why not posix_spawn) into its own process group, with stdin
// from /dev/null (or a file the caller names), its working folder set, and orch's environment plus the
// caller's overrides. Its stdout and stderr come back
// through two pipes watched by the loop and are handed to the caller as they
// arrive; its exit is noticed through a pidfd (or, on kernels without pidfd_open,
// a 20 ms timer that checks without reaping).
//
// The process group is the unit orch kills. When the leader exits, the rest of
// its group is SIGKILLed *before* the leader is reaped — while the zombie leader
// still holds the group id, so the id cannot have been reused by a stranger — and
// so a grandchild that outlives its parent dies with it. Then the pipes are
// drained to EOF, for at most Options::drain_limit (a process that escaped the
// group with setsid may hold them open forever), and on_exit is called once.
//
// argv[0] without a '/' is looked up in PATH once and remembered, like a shell's
// command hash, for as long as the PATH folders up to the one it was found in are
// unchanged (subprocess.cc, PathCache).
//
// Contract for the handlers: on_stdout/on_stderr must not destroy the Subprocess;
// on_exit may (it is the last thing the Subprocess does). Destroying a Subprocess
// whose leader has not been reaped SIGKILLs the group and reaps the leader
// synchronously; no handler is called after that. The EventLoop must outlive it.
// Not thread-safe: use from the loop's thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "orch/error.h"
#include "orch/event_loop.h"

namespace orch {

struct ProcessExit {
  bool signaled = false;
  int code = -1;   // the exit status, when !signaled
  int signal = 0;  // the signal that ended it, when signaled
};

// Why `program` cannot be started, said as a failed start says it ("cannot run
// 'claude': No such file or directory (not found in PATH)"), or nullopt when it
// can: a bare name is looked for in `path` (PATH's value; "/usr/bin:/bin" when
// PATH is unset), a path is checked as it stands. For executors whose program is
// their set-up (a registry tool, a worker CLI), checked before an attempt starts.
std::optional<std::string> program_not_runnable(const std::string& program, const char* path);

// From now on, every process this orch starts is killed (SIGKILL) when orch's
// process dies, even by kill -9 (prctl PR_SET_PDEATHSIG). `orch worker` sets it:
// a worker that dies loses its leases, and the attempts it ran are started again
// elsewhere, so its own must not go on beside them. Children of those processes
// are not covered (a script's own background jobs).
void children_die_with_orch();

// How many PATH searches Subprocess::start made, as opposed to answers it took
// from its cache of earlier searches (for tests; see subprocess.cc, PathCache).
std::size_t subprocess_path_searches();

class Subprocess {
 public:
  struct Options {
    std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
    // Added to orch's environment; a name given here replaces orch's value. When
    // PATH is overridden, argv[0] is looked up in the overriding PATH.
    std::vector<std::pair<std::string, std::string>> env;
    std::filesystem::path cwd;  // empty: orch's own working folder
    // Read as the process's standard input; empty: /dev/null. Opened by orch
    // before the start: a file that cannot be opened fails the start, saying so.
    std::filesystem::path stdin_file;
    std::chrono::milliseconds drain_limit{1000};
    bool use_pidfd = true;  // false forces the polling fallback (for tests)
  };
  using OutputHandler = std::function<void(std::string_view bytes)>;
  using ExitHandler = std::function<void(ProcessExit exit)>;
  struct Handlers {
    OutputHandler on_stdout;
    OutputHandler on_stderr;
    ExitHandler on_exit;
  };

  // Starts the process. Fails with ErrorCode::Spawn and a message a user can act
  // on ("cannot run 'nosuchcmd': No such file or directory (not found in PATH)").
  static Expected<std::unique_ptr<Subprocess>> start(const Options& options, EventLoop& loop,
                                                     Handlers handlers);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // SIGTERM (and SIGCONT, so a stopped process can act on it) to the group now,
  // SIGKILL to the group after `grace` if the leader is still running. No-op once
  // the leader has exited.
  void terminate(std::chrono::milliseconds grace);
  // SIGKILL to the group now. No-op once the leader has exited.
  void kill();

  pid_t pid() const { return pid_; }
  // True until the leader has been reaped.
  bool running() const { return !reaped_; }

 private:
  struct Stream {
    int fd = -1;
    OutputHandler handler;
  };
  Subprocess(EventLoop& loop, Handlers handlers);

  void watch_stream(Stream& stream);
  // Reads what is available; closes the stream at EOF. `drain`: keep reading
  // (up to a bound) until the pipe would block, instead of one read per wakeup.
  void read_stream(Stream& stream, bool drain);
  void close_stream(Stream& stream);
  void check_exit_without_pidfd();
  void on_leader_exit();
  // Calls on_exit if the leader is reaped and both pipes are closed. May destroy *this.
  void finish_if_done();

  EventLoop& loop_;
  Handlers handlers_;
  std::string program_;  // argv[0], for messages
  std::chrono::milliseconds drain_limit_{1000};
  pid_t pid_ = -1;
  int pidfd_ = -1;
  Stream out_;
  Stream err_;
  bool reaped_ = false;
  bool finished_ = false;
  ProcessExit exit_;
  EventLoop::TimerId kill_timer_ = 0;
  EventLoop::TimerId poll_timer_ = 0;
  EventLoop::TimerId drain_timer_ = 0;
};

}  // namespace orch
