// bench/spawn_loop.cc — the baseline for the 5000-step benchmark.
//
//   spawn_loop N J CMD [ARG...]
//
// Runs CMD N times with posix_spawnp, keeping at most J children running at
// once (reaping with waitpid), and prints the elapsed wall time in seconds.
// This is the least any orchestrator can do to run N processes J at a time; orch
// (and make, ninja) are compared against it in bench/run.sh. No orch code is used.
// Exits 1 if any child could not be spawned or did not exit 0.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

namespace {

int usage() {
  std::fprintf(stderr, "usage: spawn_loop N J CMD [ARG...]\n");
  return 2;
}

bool parse_count(const char* text, long& out) {
  char* end = nullptr;
  out = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && out > 0;
}

}  // namespace

int main(int argc, char** argv) {
  long total = 0;
  long jobs = 0;
  if (argc < 4 || !parse_count(argv[1], total) || !parse_count(argv[2], jobs)) {
    return usage();
  }
  char** command = argv + 3;

  const auto start = std::chrono::steady_clock::now();
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
      return 1;
    }
    --running;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failures;
    }
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::printf("%.3f\n", elapsed.count());
  if (failures > 0) {
    std::fprintf(stderr, "spawn_loop: %ld of %ld commands failed\n", failures, total);
    return 1;
  }
  return 0;
}
