// verify/file_checks.cc — file_exists and file_contains. The path is resolved
// inside the workspace at check time (symlinks included), so a link the step
// created to somewhere outside fails the check instead of being read.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "orch/workspace.h"
#include "util/fd.h"
#include "verify/check_text.h"
#include "verify/postcondition_internal.h"

namespace orch::detail {

namespace {

namespace fs = std::filesystem;

// file_contains reads the file in chunks, so a multi-gigabyte file costs time but not memory.
constexpr std::size_t kChunk = 1024 * 1024;

const char* file_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "named pipe";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "device";
  return "special file";
}

enum class Search { Found, NotFound, ReadError };

// Streams the file through a window that keeps the last text.size()-1 bytes of
// the previous chunk, so a match across a chunk boundary is found.
Search search_fd(int fd, std::string_view text, std::size_t& bytes_read, int& error) {
  std::vector<char> buf(kChunk);
  std::string window;
  bytes_read = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      return Search::ReadError;
    }
    if (n == 0) return text.empty() ? Search::Found : Search::NotFound;
    bytes_read += static_cast<std::size_t>(n);
    window.append(buf.data(), static_cast<std::size_t>(n));
    if (window.find(text) != std::string::npos) return Search::Found;
    std::size_t keep = text.empty() ? 0 : text.size() - 1;
    if (window.size() > keep) window.erase(0, window.size() - keep);
  }
}

}  // namespace

CheckResult check_file_exists(const Postcondition& post, const CheckContext& ctx) {
  CheckResult out{PostKind::FileExists, false, {}};
  auto resolved = resolve_in_workspace(ctx.workspace, post.path);
  if (!resolved) {
    out.reason = "file_exists: " + resolved.error().message;
    return out;
  }
  std::string name = in_quotes(post.path);
  struct stat st {};
  if (::stat(resolved->c_str(), &st) != 0) {
    int err = errno;
    out.reason = err == ENOENT || err == ENOTDIR
                     ? fmt::format("file_exists {}: no such file in the workspace ({})", name, resolved->string())
                     : fmt::format("file_exists {}: cannot check {}: {}", name, resolved->string(), std::strerror(err));
    return out;
  }
  out.held = true;
  out.reason = S_ISREG(st.st_mode)
                   ? fmt::format("file_exists {}: found ({})", name, byte_count(static_cast<std::size_t>(st.st_size)))
                   : fmt::format("file_exists {}: found ({})", name, file_type_name(st.st_mode));
  return out;
}

CheckResult check_file_contains(const Postcondition& post, const CheckContext& ctx) {
  CheckResult out{PostKind::FileContains, false, {}};
  auto resolved = resolve_in_workspace(ctx.workspace, post.path);
  if (!resolved) {
    out.reason = "file_contains: " + resolved.error().message;
    return out;
  }
  std::string what = fmt::format("file_contains {} in {}", in_quotes(post.text), in_quotes(post.path));
  // O_NONBLOCK: a named pipe must not hang the check (it is refused below);
  // O_NOFOLLOW: the resolved path has no symlinks, so one now is a swap since.
  Fd fd(::open(resolved->c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW));
  if (fd.get() < 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      out.reason = fmt::format("{}: no such file in the workspace ({})", what, resolved->string());
    } else {
      out.reason = fmt::format("{}: cannot open {}: {}", what, resolved->string(), std::strerror(err));
    }
    return out;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    out.reason = fmt::format("{}: {} is a {}, not a regular file", what, resolved->string(), file_type_name(st.st_mode));
    return out;
  }
  std::size_t bytes = 0;
  int err = 0;
  switch (search_fd(fd.get(), post.text, bytes, err)) {
    case Search::Found:
      out.held = true;
      out.reason = what + ": found";
      break;
    case Search::NotFound:
      out.reason = fmt::format("{}: not found in the file ({})", what, byte_count(bytes));
      break;
    case Search::ReadError:
      out.reason = fmt::format("{}: cannot read {}: {}", what, resolved->string(), std::strerror(err));
      break;
  }
  return out;
}

}  // namespace orch::detail
