#include "cli/approval_prompt.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "util/strings.h"

namespace orch::cli {

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};

// One line from the terminal, without its newline; nullopt at end of input, on
// an error, or when orch is asked to stop meanwhile (Ctrl-C at the prompt: orch's
// handler restarts reads, so the terminal is polled, not read blindly).
std::optional<std::string> read_answer(int fd, const std::function<bool()>& stop_requested) {
  std::string line;
  for (;;) {
    if (stop_requested && stop_requested()) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return std::nullopt;
    if (ready == 0) continue;
    char c = 0;
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n' || c == '\r') return line;
    line += c;
    if (line.size() > 4096) return line;
  }
}

bool ask(const ApprovalRequest& r) {
  std::unique_ptr<std::FILE, FileCloser> tty(std::fopen("/dev/tty", "r+"));
  if (!tty) return false;
  std::string text = fmt::format("\r\033[K\norch: step '{}' of run {} needs approval: {} risk\n", r.step_id,
                                 r.run_id, risk_level_name(r.risk));
  // The goal and the command came from a plan and from steps' results: their
  // control characters are escaped, so none can move the cursor, clear a line or
  // retitle the terminal to change what the human approving sees.
  if (!r.goal.empty()) text += fmt::format("  goal:    {}\n", terminal_text(r.goal));
  const std::string command = terminal_lines(r.command);
  std::string indented;
  for (char c : command) indented += c == '\n' ? std::string("\n           ") : std::string(1, c);
  text += fmt::format("  command: {}\n", indented);
  if (r.risk == RiskLevel::High)
    text += fmt::format("Type the step id '{}' to approve it (anything else leaves it waiting): ", r.step_id);
  else
    text += "Run it? [y/N] ";
  std::fputs(text.c_str(), tty.get());
  std::fflush(tty.get());
  auto answer = read_answer(fileno(tty.get()), r.stop_requested);
  if (!answer) {
    std::fputs("\n", tty.get());
    return false;
  }
  std::string a(trim(*answer));
  if (r.risk == RiskLevel::High) return a == r.step_id;
  return a == "y" || a == "Y" || a == "yes" || a == "YES" || a == "Yes";
}

}  // namespace

std::function<bool(const ApprovalRequest&)> terminal_approval_prompt() {
  if (!isatty(STDIN_FILENO)) return {};
  std::unique_ptr<std::FILE, FileCloser> tty(std::fopen("/dev/tty", "r+"));
  if (!tty) return {};
  return ask;
}

}  // namespace orch::cli
