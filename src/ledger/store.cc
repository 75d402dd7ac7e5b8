#include "orch/store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/file_lock.h"
#include "util/strings.h"

namespace orch {

Expected<std::map<StepStatus, int>> Store::step_status_counts(const std::string& run_id) {
  std::map<StepStatus, int> counts;
  for (const StepRecord& s : ORCH_TRY(steps(run_id))) ++counts[s.status];
  return counts;
}

Expected<std::optional<StepRecord>> Store::find_step(const std::string& run_id, const std::string& step_id) {
  for (StepRecord& s : ORCH_TRY(steps(run_id)))
    if (s.step_id == step_id) return std::move(s);
  return std::nullopt;
}

namespace {

std::filesystem::path lock_file(const std::filesystem::path& folder, const std::string& name) {
  return folder / "locks" / (name + ".lock");
}

// A FileLock held for the store.
class FileStoreLock final : public StoreLock {
 public:
  explicit FileStoreLock(FileLock lock) : lock_(std::move(lock)) {}

 private:
  FileLock lock_;
};

}  // namespace

Expected<std::unique_ptr<StoreLock>> Store::lock(
    const std::string& name, const std::function<std::string(const std::string& holder)>& when_busy) {
  FileLock held = ORCH_TRY(FileLock::acquire(lock_file(folder(), name), [&](const std::string& holder) {
    if (when_busy) return when_busy(holder);
    return fmt::format(
        "run {} is already being driven by another orch process (pid {}); wait for it to finish or "
        "`orch cancel {}`",
        name, holder, name);
  }));
  return std::unique_ptr<StoreLock>(std::make_unique<FileStoreLock>(std::move(held)));
}

bool Store::locked(const std::string& name) {
  return FileLock::is_held(lock_file(folder(), name));
}

Expected<OutputRead> Store::read_attempt_output(const AttemptRecord& a, AttemptStream which,
                                                const std::function<void(std::string_view)>& sink) const {
  const bool err = which == AttemptStream::Stderr;
  const char* stream = err ? "stderr" : "stdout";
  const std::string& path = err ? a.stderr_path : a.stdout_path;
  if (path.empty()) {  // kept in the ledger row (attempts.stdout_text / stderr_text)
    const std::string& text = err ? a.stderr_text : a.stdout_text;
    // Nothing kept and nothing written: a builtin step's, which has no streams.
    if (text.empty() && (err ? a.stderr_bytes : a.stdout_bytes) == 0)
      return OutputRead{OutputSource::None, ""};
    sink(text);
    return OutputRead{OutputSource::Ledger, ""};
  }
  // Paths are recorded absolute; a project moved with its store keeps its logs
  // in the store's runs/RUN/ folder, where they are looked for next.
  const std::filesystem::path moved = folder() / "runs" / a.run_id / std::filesystem::path(path).filename();
  // O_NONBLOCK: a FIFO put where a log was is refused below, not waited on.
  std::string opened = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  const int path_errno = fd < 0 ? errno : 0;
  int moved_errno = 0;
  if (fd < 0 && moved != std::filesystem::path(path)) {
    opened = moved.string();
    fd = ::open(moved.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    moved_errno = fd < 0 ? errno : 0;
  }
  if (fd < 0) {
    const std::int64_t recorded = err ? a.stderr_bytes : a.stdout_bytes;
    // No file and nothing recorded: the stream wrote nothing, so no file was made.
    if (path_errno == ENOENT && (moved_errno == 0 || moved_errno == ENOENT) &&
        (recorded == 0 || a.status == AttemptStatus::Running))
      return OutputRead{OutputSource::None, ""};
    std::string where = fmt::format("{}: {}", path, std::strerror(path_errno));
    if (moved_errno != 0) where += fmt::format("; {}: {}", moved.string(), std::strerror(moved_errno));
    return fail(ErrorCode::Io, fmt::format("cannot read the {} of attempt {} of step '{}' ({} bytes "
                                           "recorded): {}",
                                           stream, a.number, a.step_id, recorded, where));
  }
  if (struct stat st{}; ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(ErrorCode::Io, fmt::format("cannot read the {} of attempt {} of step '{}': {} "
                                           "is not a regular file (orch's logs are)",
                                           stream, a.number, a.step_id, opened));
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int read_errno = errno;
      ::close(fd);
      return fail(ErrorCode::Io, fmt::format("reading {}: {}", opened, std::strerror(read_errno)));
    }
    if (n == 0) break;
    sink(std::string_view(buf, static_cast<std::size_t>(n)));
  }
  ::close(fd);
  return OutputRead{OutputSource::File, opened};
}

Error Store::no_run(const std::string& run_id) const {
  return Error{ErrorCode::NotFound,
               fmt::format("no run '{}' in {}", quote_for_message(run_id, 80), location().string())};
}

}  // namespace orch
