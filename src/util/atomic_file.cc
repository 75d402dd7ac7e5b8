#include "util/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

namespace orch {

namespace fs = std::filesystem;

namespace {

Error io_error(const fs::path& path, std::string_view doing, int err) {
  return Error{ErrorCode::Io, fmt::format("{}: {}: {}", path.string(), doing, std::strerror(err))};
}

// Closes the descriptor and removes the temporary file unless released.
class TempFile {
 public:
  TempFile(int fd, fs::path path) : fd_(fd), path_(std::move(path)) {}
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  TempFile(TempFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {
    other.path_.clear();
  }
  int fd() const { return fd_; }
  const fs::path& path() const { return path_; }
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void release() { path_.clear(); }

 private:
  int fd_;
  fs::path path_;
};

// Writes `content` to a new temporary file in `path`'s folder (created when
// missing), synced when asked, and closed: what is left is to give it its name.
Expected<TempFile> write_temporary(const fs::path& path, std::string_view content, bool sync) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec)
    return fail(ErrorCode::Io, fmt::format("{}: creating the folder: {}", folder.string(), ec.message()));

  std::string pattern = (folder / ("." + path.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) return std::unexpected(io_error(path, "creating a temporary file", errno));
  TempFile temp(fd, pattern);
  (void)::fchmod(fd, 0644);  // mkstemp makes 0600; a trace or note is read by others

  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(io_error(path, "writing", errno));
    }
    written += static_cast<std::size_t>(n);
  }
  if (sync && ::fsync(fd) != 0) return std::unexpected(io_error(path, "syncing", errno));
  if (temp.close() != 0) return std::unexpected(io_error(path, "closing", errno));
  return temp;
}

void sync_folder_of(const fs::path& path) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);  // best effort: the name is in place either way
    ::close(dir);
  }
}

}  // namespace

Expected<void> write_file_atomically(const fs::path& path, std::string_view content, Durability durability) {
  const bool sync = durability == Durability::Synced;
  TempFile temp = ORCH_TRY(write_temporary(path, content, sync));
  if (::rename(temp.path().c_str(), path.c_str()) != 0)
    return std::unexpected(io_error(path, "replacing", errno));
  temp.release();
  if (sync) sync_folder_of(path);
  return {};
}

Expected<bool> create_file_atomically(const fs::path& path, std::string_view content, Durability durability) {
  const bool sync = durability == Durability::Synced;
  TempFile temp = ORCH_TRY(write_temporary(path, content, sync));
  // link() gives the whole file its name, and fails if the name is taken.
  if (::link(temp.path().c_str(), path.c_str()) != 0) {
    if (errno == EEXIST) return false;
    return std::unexpected(io_error(path, "creating", errno));
  }
  // The temporary name goes when `temp` does.
  if (sync) sync_folder_of(path);
  return true;
}

}  // namespace orch
