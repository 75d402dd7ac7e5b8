#include "exec/child_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace orch {
namespace {

// The 64-bit hex mask after "KEY:" at the start of a line of `status`.
bool mask_after(std::string_view status, std::string_view key, std::uint64_t* out) {
  std::size_t at = 0;
  while (at < status.size()) {
    const std::size_t end = status.find('\n', at);
    const std::string_view line =
        status.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      std::string_view hex = line.substr(key.size() + 1);
      while (!hex.empty() && (hex.front() == '\t' || hex.front() == ' ')) hex.remove_prefix(1);
      if (hex.empty() || hex.size() > 16) return false;
      std::uint64_t mask = 0;
      for (const char c : hex) {
        unsigned digit = 0;
        if (c >= '0' && c <= '9') {
          digit = static_cast<unsigned>(c - '0');
        } else if (c >= 'a' && c <= 'f') {
          digit = static_cast<unsigned>(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
          digit = static_cast<unsigned>(c - 'A' + 10);
        } else {
          return false;
        }
        mask = (mask << 4) | digit;
      }
      *out = mask;
      return true;
    }
    if (end == std::string_view::npos) break;
    at = end + 1;
  }
  return false;
}

// The process's dispositions from `path`; false if it cannot be read or parsed.
bool read_dispositions(const char* path, SignalDispositions* out) {
  const int saved_errno = errno;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    errno = saved_errno;
    return false;
  }
  // The whole file is about 1.4 KiB; SigCgt is two thirds of the way in.
  char buffer[4096];
  std::size_t size = 0;
  while (size < sizeof buffer) {
    const ssize_t n = ::read(fd, buffer + size, sizeof buffer - size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size += static_cast<std::size_t>(n);
  }
  ::close(fd);
  errno = saved_errno;
  return parse_status_dispositions(std::string_view(buffer, size), out);
}

void set_default(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
}

}  // namespace

bool parse_status_dispositions(std::string_view status, SignalDispositions* out) noexcept {
  SignalDispositions found;
  if (!mask_after(status, "SigCgt", &found.caught) || !mask_after(status, "SigIgn", &found.ignored))
    return false;
  *out = found;
  return true;
}

void reset_signal_dispositions(const sigset_t& defaults, const char* status_path) noexcept {
  SignalDispositions known;
  const bool from_status = read_dispositions(status_path, &known);
  for (int sig = 1; sig < NSIG && sig <= 64; ++sig) {
    bool caught = false;
    bool ignored = false;
    if (from_status) {
      const std::uint64_t bit = std::uint64_t{1} << (sig - 1);
      caught = (known.caught & bit) != 0;
      ignored = (known.ignored & bit) != 0;
    } else {
      struct sigaction current {};
      if (::sigaction(sig, nullptr, &current) != 0) continue;  // SIGKILL, SIGSTOP, the C library's own
      ignored = current.sa_handler == SIG_IGN;
      caught = !ignored && current.sa_handler != SIG_DFL;
    }
    if (caught || (ignored && sigismember(&defaults, sig) == 1)) set_default(sig);
  }
}

}  // namespace orch
