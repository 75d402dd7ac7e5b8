#include "util/read_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace orch {

Expected<std::string> read_file_text(const std::filesystem::path& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a named pipe with no writer must not wait for one; reads
  // block again below, so `--models <(gen)` waits for what its writer sends.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return fail(err == ENOENT ? ErrorCode::NotFound : ErrorCode::Io,
                fmt::format("{}: cannot open: {}", path.string(), std::strerror(err)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
    return fail(ErrorCode::Io, fmt::format("{}: is a folder, not a file", path.string()));
  if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(ErrorCode::Io, fmt::format("{}: reading: {}", path.string(), std::strerror(errno)));
    }
    if (n == 0) {
      if (text.empty() && S_ISFIFO(st.st_mode))
        return fail(ErrorCode::Io,
                    fmt::format("{}: is a named pipe that gave nothing (no writer had it open, or "
                                "its writer wrote nothing)",
                                path.string()));
      return text;
    }
    if (text.size() + static_cast<std::size_t>(n) > max_bytes)
      return fail(ErrorCode::Io, fmt::format("{}: larger than {} bytes", path.string(), max_bytes));
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace orch
