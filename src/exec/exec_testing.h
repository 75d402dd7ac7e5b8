// exec/exec_testing.h — helpers shared by the exec layer's tests (header-only).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "orch/event_loop.h"
#include "orch/executor.h"
#include "testing/testing.h"

namespace orch::testing {

// Turns the loop until `finished()` holds or `limit` has passed; returns finished().
inline bool run_until(EventLoop& loop, const std::function<bool()>& finished,
                      std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!finished() && std::chrono::steady_clock::now() < deadline) {
    loop.run_once(std::chrono::milliseconds(50));
  }
  return finished();
}

// Gone = no such process, or a zombie nobody has reaped yet (an orphan reparented
// to an init that does not reap is dead all the same).
inline bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  auto paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  char state = line[paren + 2];
  return state == 'Z' || state == 'X';
}

// Waits (briefly) for a process to be gone: SIGKILL delivery is asynchronous.
inline bool wait_gone(pid_t pid, std::chrono::milliseconds limit = std::chrono::seconds(2)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!process_gone(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// How many file descriptors this process has open (to catch leaks).
inline int open_fd_count() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

// The pids a test script wrote to `path`, one per line.
inline std::vector<pid_t> read_pids(const std::filesystem::path& path) {
  std::vector<pid_t> pids;
  std::ifstream in(path);
  for (long pid = 0; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

// An attempt spec for a shell step in `workspace`, output under workspace/.out.
inline AttemptSpec shell_spec(const std::filesystem::path& workspace, std::vector<std::string> argv) {
  AttemptSpec spec;
  spec.run_id = "run";
  spec.step_id = "step";
  spec.executor = "shell";
  spec.argv = std::move(argv);
  spec.workspace = workspace;
  spec.stdout_path = workspace / ".out" / "step.1.stdout";
  spec.stderr_path = workspace / ".out" / "step.1.stderr";
  spec.usage_path = workspace / ".out" / "step.1.usage.json";
  return spec;
}

// Collects the outcomes an executor reports (to check "exactly once").
struct Reports {
  std::vector<AttemptOutcome> outcomes;
  Executor::DoneCallback callback() {
    return [this](AttemptOutcome outcome) { outcomes.push_back(std::move(outcome)); };
  }
  bool any() const { return !outcomes.empty(); }
  const AttemptOutcome& only() const { return outcomes.at(0); }
};

}  // namespace orch::testing
