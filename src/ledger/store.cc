#include "orch/store.h"

#include <fmt/format.h>

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

Error Store::no_run(const std::string& run_id) const {
  return Error{ErrorCode::NotFound,
               fmt::format("no run '{}' in {}", quote_for_message(run_id, 80), location().string())};
}

}  // namespace orch
