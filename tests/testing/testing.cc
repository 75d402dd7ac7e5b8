#include "testing/testing.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

extern char** environ;

namespace orch::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  fs::path base = fs::temp_directory_path();
  for (;;) {
    path_ = base / ("orch-test-" + std::to_string(rd()));
    std::error_code ec;
    if (fs::create_directory(path_, ec)) break;
  }
  path_ = fs::canonical(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

CommandResult run_command(const std::vector<std::string>& argv, const fs::path& cwd,
                          const std::map<std::string, std::string>& env, int timeout_s) {
  CommandResult r;
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe failed";
    return r;
  }
  std::map<std::string, std::string> full;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) full[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) full[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : full) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& s : args) cargv.push_back(s.data());
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << strerror(rc);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      ADD_FAILURE() << "command timed out after " << timeout_s << "s: " << argv[0];
      break;
    }
    int n = poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  return r;
}

std::string orch_binary() {
  const char* b = std::getenv("ORCH_BINARY");
  return b ? b : "orch";
}

fs::path source_dir() {
  const char* s = std::getenv("ORCH_SOURCE_DIR");
  return s ? fs::path(s) : fs::current_path();
}

CommandResult run_orch(const std::vector<std::string>& args, const fs::path& cwd,
                       const std::map<std::string, std::string>& env, int timeout_s) {
  std::vector<std::string> argv{orch_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, cwd, env, timeout_s);
}

void write_file(const fs::path& path, const std::string& content) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f << content;
}

void make_socket_file(const fs::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.string().size(), sizeof(addr.sun_path)) << path;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const int bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::close(fd);
  ASSERT_EQ(bound, 0) << path << ": " << std::strerror(errno);
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

pid_t spawn_orch(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                 const std::filesystem::path& out) {
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(127);
    FILE* f = std::fopen(out.c_str(), "w");
    if (f) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    std::vector<std::string> all{orch_binary()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int without_proc(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid < 0) return kNoNamespace;
  if (pid == 0) {
    // Private mounts first, so the unmount stays in this namespace.
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        umount2("/proc", MNT_DETACH) != 0 || access("/proc/self", F_OK) == 0)
      _exit(kNoNamespace);
    _exit(body());
  }
  return wait_exit(pid);
}

bool process_alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

bool wait_for(const std::function<bool()>& cond, int ms) {
  for (int i = 0; i < ms / 20; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

std::string run_id_in(const std::string& output) {
  const auto at = output.find("orch: run ");
  if (at == std::string::npos) return "";
  const auto start = at + 10;
  return output.substr(start, output.find(' ', start) - start);
}

}  // namespace orch::testing
