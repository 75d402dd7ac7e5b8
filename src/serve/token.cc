// The token of `orch serve`. See token.h.
#include "serve/token.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace orch::serve {

Expected<std::string> random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(ErrorCode::Io, fmt::format("getrandom: {}", std::strerror(errno)));
    got += static_cast<std::size_t>(n);
  }
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

Expected<Token> load_or_make_token(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path().empty() ? "." : file.parent_path(), ec);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) {
    const std::string value = ORCH_TRY(random_hex(32));
    const std::string line = value + "\n";
    const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    const bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (!written || !synced) {
      ::unlink(file.c_str());
      return fail(ErrorCode::Io,
                  fmt::format("{}: writing the token: {}", file.string(), std::strerror(errno)));
    }
    return Token{value, true};
  }
  if (errno != EEXIST)
    return fail(ErrorCode::Io,
                fmt::format("{}: making the token file: {}", file.string(), std::strerror(errno)));
  const int in = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0)
    return fail(ErrorCode::Io, fmt::format("{}: reading the token: {}", file.string(), std::strerror(errno)));
  struct stat st {};
  if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0 || st.st_uid != ::geteuid()) {
    ::close(in);
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}: the token file must be a regular file of yours that only you may read "
                            "(chmod 600 {}), or remove it for a new token",
                            file.string(), file.string()));
  }
  char buffer[256];
  const ssize_t n = ::read(in, buffer, sizeof buffer);
  ::close(in);
  std::string value(buffer, n > 0 ? static_cast<std::size_t>(n) : 0);
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r' || value.back() == ' '))
    value.pop_back();
  if (value.size() < 32 || value.find_first_of(" \t\n") != std::string::npos)
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}: not a token (32 or more characters on one line): remove it for a new one",
                            file.string()));
  return Token{value, false};
}

bool same_token(const std::string& token, std::string_view given) {
  if (token.empty() || given.size() != token.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(token[i] ^ given[i]);
  return diff == 0;
}

}  // namespace orch::serve
