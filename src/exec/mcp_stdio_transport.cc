// exec/mcp_stdio_transport.cc — an MCP server orch starts, spoken to on its stdin and stdout.
//
// The server is a long-lived child (started once per run and shared by its
// steps), not an attempt, so it is not a Subprocess: it needs a pipe on its
// stdin, its stderr goes straight to a log file, and it outlives any one
// attempt. It runs in its own process group; its exit is watched through a
// pidfd and the group is killed before the leader is reaped (the zombie holds
// the group id, so no stranger can have it).
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "exec/mcp_transport.h"

extern char** environ;

namespace orch {

namespace {

constexpr std::size_t kMaxLine = 64 * 1024 * 1024;  // one message; a longer line ends the session
constexpr std::size_t kTailBytes = 1000;

std::string status_text(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return fmt::format("status {}", info.si_status);
  return fmt::format("killed by signal {} ({})", info.si_status, ::strsignal(info.si_status));
}

class StdioTransport final : public McpTransport {
 public:
  StdioTransport(EventLoop& loop, Handlers handlers, std::filesystem::path log)
      : loop_(loop), handlers_(std::move(handlers)), log_(std::move(log)) {}
  ~StdioTransport() override { shut_down(std::chrono::milliseconds(0)); }

  Expected<void> start(const RegisteredTool& server) {
    int in[2] = {-1, -1};
    int out[2] = {-1, -1};
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
      const int err = errno;
      for (int fd : {in[0], in[1], out[0], out[1]})
        if (fd >= 0) ::close(fd);
      return fail(ErrorCode::Spawn,
                  fmt::format("MCP server '{}': cannot make pipes: {}", server.name, std::strerror(err)));
    }
    const int log_fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (log_fd >= 0)
      posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
    else
      posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    if (!server.mcp.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, server.mcp.cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    sigset_t all;
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string_view entry(*e);
      bool replaced = false;
      for (const auto& [name, _] : server.mcp.env)
        if (entry.starts_with(name + "=")) replaced = true;
      if (!replaced) env_text.emplace_back(entry);
    }
    for (const auto& [name, value] : server.mcp.env) env_text.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_text = server.command;
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);

    const int rc = ::posix_spawnp(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(in[0]);
    ::close(out[1]);
    if (log_fd >= 0) ::close(log_fd);
    if (rc != 0) {
      ::close(in[1]);
      ::close(out[0]);
      pid_ = -1;
      std::string where = server.mcp.cwd.empty() ? "" : fmt::format(" in {}", server.mcp.cwd.string());
      return fail(ErrorCode::Spawn, fmt::format("MCP server '{}': cannot run '{}'{}: {}", server.name,
                                                server.command[0], where, std::strerror(rc)));
    }
    stdin_ = in[1];
    stdout_ = out[0];
    ::fcntl(stdin_, F_SETFL, ::fcntl(stdin_, F_GETFL) | O_NONBLOCK);
    ::fcntl(stdout_, F_SETFL, ::fcntl(stdout_, F_GETFL) | O_NONBLOCK);
    pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    loop_.watch(stdout_, POLLIN, [this](short) { read_stdout(); });
    if (pidfd_ >= 0) loop_.watch(pidfd_, POLLIN, [this](short) { on_exit(); });
    return {};
  }

  void send(const nlohmann::json& message) override {
    if (stdin_ < 0) return;
    outbox_ += jsonrpc::line(message);
    outbox_ += '\n';
    flush();
  }

  void shut_down(std::chrono::milliseconds grace) override {
    closed_ = true;
    if (stdout_ >= 0) {
      loop_.unwatch(stdout_);
      ::close(stdout_);
      stdout_ = -1;
    }
    if (stdin_ >= 0) {
      loop_.unwatch(stdin_);
      ::close(stdin_);  // the server's cue to exit
      stdin_ = -1;
    }
    if (pid_ <= 0) return;
    if (pidfd_ >= 0) loop_.unwatch(pidfd_);
    if (!wait_exit(grace)) {
      ::kill(-pid_, SIGTERM);
      ::kill(-pid_, SIGCONT);
      if (!wait_exit(grace)) ::kill(-pid_, SIGKILL);
    }
    ::kill(-pid_, SIGKILL);  // what is left of its group; the zombie leader still holds the id
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (pidfd_ >= 0) ::close(pidfd_);
    pidfd_ = -1;
  }

  std::string stderr_tail() const override {
    std::FILE* f = std::fopen(log_.c_str(), "rb");
    if (!f) return "";
    std::fseek(f, 0, SEEK_END);
    const long size = std::ftell(f);
    const long from = size > static_cast<long>(kTailBytes) ? size - static_cast<long>(kTailBytes) : 0;
    std::fseek(f, from, SEEK_SET);
    std::string text(static_cast<std::size_t>(size - from), '\0');
    const std::size_t got = std::fread(text.data(), 1, text.size(), f);
    std::fclose(f);
    text.resize(got);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    return text;
  }

 private:
  // True when the leader exited within `wait` (not reaped: WNOWAIT).
  bool wait_exit(std::chrono::milliseconds wait) {
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return false;
    } else {
      const auto until = std::chrono::steady_clock::now() + wait;
      siginfo_t info{};
      while (true) {
        info.si_pid = 0;
        if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid != 0)
          return true;
        if (std::chrono::steady_clock::now() >= until) return false;
        ::usleep(10'000);
      }
    }
    return true;
  }

  void flush() {
    while (!outbox_.empty() && stdin_ >= 0) {
      const ssize_t n = ::write(stdin_, outbox_.data(), outbox_.size());
      if (n > 0) {
        outbox_.erase(0, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) {
        loop_.watch(stdin_, POLLOUT, [this](short) { flush(); });
        return;
      }
      // EPIPE: the server closed its stdin; its exit is noticed through the pidfd.
      loop_.unwatch(stdin_);
      ::close(stdin_);
      stdin_ = -1;
      outbox_.clear();
      return;
    }
    if (stdin_ >= 0) loop_.unwatch(stdin_);
  }

  void read_stdout() {
    char buffer[65536];
    while (stdout_ >= 0) {
      const ssize_t n = ::read(stdout_, buffer, sizeof buffer);
      if (n > 0) {
        inbox_.append(buffer, static_cast<std::size_t>(n));
        if (!deliver_lines()) return;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      // EOF: the server closed its stdout; it is about to exit, or has.
      loop_.unwatch(stdout_);
      ::close(stdout_);
      stdout_ = -1;
      if (pidfd_ < 0) on_exit();
    }
  }

  // Hands each complete line to on_message; false when the transport closed meanwhile.
  bool deliver_lines() {
    std::size_t start = 0;
    for (std::size_t nl; (nl = inbox_.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view text(inbox_.data() + start, nl - start);
      if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
      if (text.empty()) continue;
      auto message = jsonrpc::parse(text);
      if (!message) continue;  // not a message: servers that print to stdout are broken, not fatal
      handlers_.on_message(std::move(*message));
      if (closed_) return false;
    }
    inbox_.erase(0, start);
    if (inbox_.size() > kMaxLine) inbox_.clear();
    return true;
  }

  void on_exit() {
    if (closed_ || pid_ <= 0) return;
    siginfo_t info{};
    if (pidfd_ >= 0) {
      if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
          info.si_pid == 0)
        return;
    } else {
      if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0) return;
    }
    if (stdout_ >= 0) read_stdout();  // what it wrote before it went
    if (closed_) return;
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    if (pidfd_ >= 0) {
      loop_.unwatch(pidfd_);
      ::close(pidfd_);
      pidfd_ = -1;
    }
    pid_ = -1;
    closed_ = true;
    if (stdin_ >= 0) {
      loop_.unwatch(stdin_);
      ::close(stdin_);
      stdin_ = -1;
    }
    if (stdout_ >= 0) {
      loop_.unwatch(stdout_);
      ::close(stdout_);
      stdout_ = -1;
    }
    handlers_.on_closed(status_text(info));
  }

  EventLoop& loop_;
  Handlers handlers_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  std::string outbox_;
  std::string inbox_;
  bool closed_ = false;
};

}  // namespace

Expected<std::unique_ptr<McpTransport>> start_stdio_transport(const RegisteredTool& server,
                                                              const std::filesystem::path& stderr_log,
                                                              EventLoop& loop,
                                                              McpTransport::Handlers handlers) {
  auto transport = std::make_unique<StdioTransport>(loop, std::move(handlers), stderr_log);
  ORCH_TRY(transport->start(server));
  return std::unique_ptr<McpTransport>(std::move(transport));
}

}  // namespace orch
