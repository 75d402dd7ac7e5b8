// bench/child_signals.cc — what setting a vfork child's signal dispositions back
// costs, the part of it orch's parent waits for.
//
//   bench_child_signals [N]
//
// With SIGPIPE ignored and handlers on SIGINT and SIGTERM (as orch's CLI has
// them), starts N children (default 3000) with vfork three ways and reaps each
// before the next, printing the mean µs per child of each:
//   exit      the child calls _exit at once (the floor: vfork, exit, waitpid);
//   per-signal  the child asks sigaction about every signal and sets back those
//             caught, and the thirteen orch gives their default (what orch did
//             before, and what glibc's posix_spawn does: a system call a signal);
//   orch      the child calls orch's reset_signal_dispositions
//             (src/exec/child_signals.cc), which reads SigCgt and SigIgn from
//             /proc/self/status and sets back only what needs it.
// The three are run in turn, three rounds, so a drift of the machine shows.
#include "exec/child_signals.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

sigset_t defaults;

void on_signal(int /*sig*/) {}

[[gnu::noinline]] pid_t child_exit() {
  const pid_t pid = vfork();
  if (pid == 0) _exit(0);
  return pid;
}

[[gnu::noinline]] pid_t child_per_signal() {
  const pid_t pid = vfork();
  if (pid == 0) {
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction current {};
      if (sigaction(sig, nullptr, &current) != 0) continue;
      if (sigismember(&defaults, sig) == 1 ||
          (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN)) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, nullptr);
      }
    }
    _exit(0);
  }
  return pid;
}

[[gnu::noinline]] pid_t child_orch() {
  const pid_t pid = vfork();
  if (pid == 0) {
    orch::reset_signal_dispositions(defaults);
    _exit(0);
  }
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 3000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: bench_child_signals [N]\n");
    return 2;
  }
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU, SIGXFSZ,
                  SIGUSR1, SIGUSR2, SIGALRM})
    sigaddset(&defaults, sig);
  struct sigaction handler {};
  handler.sa_handler = on_signal;
  sigemptyset(&handler.sa_mask);
  sigaction(SIGINT, &handler, nullptr);
  sigaction(SIGTERM, &handler, nullptr);
  signal(SIGPIPE, SIG_IGN);

  struct Way {
    const char* name;
    pid_t (*start)();
  };
  const Way ways[] = {{"exit", child_exit}, {"per-signal", child_per_signal}, {"orch", child_orch}};
  for (int round = 1; round <= 3; ++round) {
    std::printf("round %d:", round);
    for (const Way& way : ways) {
      const auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < n; ++i) {
        const pid_t pid = way.start();
        if (pid < 0 || waitpid(pid, nullptr, 0) != pid) {
          std::perror("bench_child_signals");
          return 1;
        }
      }
      const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
      std::printf("  %s %.1f µs", way.name, spent.count() / static_cast<double>(n));
    }
    std::printf("\n");
  }
  return 0;
}
