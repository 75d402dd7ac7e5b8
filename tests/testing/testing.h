// testing/testing.h — helpers shared by orch's tests.
//
// TempDir: a fresh directory removed at the end of the test.
// run_command: runs a real process (the orch binary, usually) and captures its
// exit code, stdout and stderr; never uses a shell unless asked.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

// EXPECT_HAS(text, part): `text` contains `part`; prints `text` when it does not.
#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

namespace orch::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs argv in `cwd` with extra environment; waits at most `timeout_s` seconds
// (then kills it and fails the current test).
CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& cwd,
                          const std::map<std::string, std::string>& env = {}, int timeout_s = 120);

// The orch binary under test (ORCH_BINARY from CTest) and the source tree.
std::string orch_binary();
std::filesystem::path source_dir();

// Runs the orch binary with `args` in `cwd`.
CommandResult run_orch(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                       const std::map<std::string, std::string>& env = {}, int timeout_s = 120);

void write_file(const std::filesystem::path& path, const std::string& content);
std::string read_file(const std::filesystem::path& path);
// Makes a Unix socket file at `path` (bound, then closed: the file stays), for
// tests of what orch does with a file it cannot copy or make again.
void make_socket_file(const std::filesystem::path& path);

// Starts `orch ARGS` in `cwd` in the background, stdout and stderr to `out`;
// returns its pid (reap it with wait_exit).
pid_t spawn_orch(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                 const std::filesystem::path& out);
// Waits for `pid`; its exit status, or 128+N when killed by signal N.
int wait_exit(pid_t pid);
// True while `pid` runs (a zombie waiting for its reaper does not count).
bool process_alive(pid_t pid);
// The RUN_ID of the "orch: run RUN_ID (store DIR)" line in an orch's output; "" when none.
std::string run_id_in(const std::string& output);
// Polls `cond` every 20 ms for up to `ms`; its last value.
bool wait_for(const std::function<bool()>& cond, int ms);

// Runs `body` in a child process that has its own mount namespace with /proc
// unmounted (a minimal container or chroot), and returns its exit code (128+N
// when killed by signal N). kNoNamespace when this machine gives the test no
// mount namespace (it needs CAP_SYS_ADMIN) or /proc could not be unmounted.
inline constexpr int kNoNamespace = 77;
int without_proc(const std::function<int()>& body);

}  // namespace orch::testing
