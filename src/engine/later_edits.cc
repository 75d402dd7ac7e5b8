#include "engine/later_edits.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "engine/orphans.h"
#include "engine/snapshot.h"
#include "orch/report.h"
#include "util/iso_time.h"
#include "util/strings.h"

namespace orch {

namespace fs = std::filesystem;

namespace {

// "this file" / "these files" and the pronouns that go with them.
struct Wording {
  const char* files;
  const char* them;
  const char* they_are;
};
Wording wording_for(std::size_t n) {
  return n == 1 ? Wording{"this file", "it", "it is"} : Wording{"these files", "them", "they are"};
}

}  // namespace

Expected<void> settle_later_edits(Store& store, const RunRecord& run, LaterEdits policy,
                                  const LaterEditsContext& context) {
  if (policy == LaterEdits::Discard) return {};
  // Driven by a live process: the engine's resume refuses it and says by whom.
  if (store.locked(run.id)) return {};
  std::vector<AttemptRecord> killed;
  for (AttemptRecord& a : ORCH_TRY(store.attempts(run.id)))
    if (a.status == AttemptStatus::Running && !a.snapshot_dir.empty() &&
        fs::exists(fs::path(a.snapshot_dir) / "manifest.json"))
      killed.push_back(std::move(a));
  if (killed.empty()) return {};
  // What the dead orch started must not change a file while it is compared (the
  // engine's resume would kill it next anyway).
  if (auto killed_left = kill_orphans(&store, run.id); !killed_left)
    return std::unexpected(killed_left.error());
  RunRecord alive = run;  // the last sign of life: the heartbeat, or the latest attempt time
  ORCH_TRY(refresh_running_totals(store, alive, false, context.now_ms));
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(context.workspace, ec);
  for (const AttemptRecord& a : killed) {
    const std::int64_t watched_until = std::max(alive.updated_at, a.started_at);
    std::vector<fs::path> later;
    std::vector<std::string> names;
    for (const SnapshotChange& c : ORCH_TRY(snapshot_changes(a.snapshot_dir))) {
      if (!c.exists || c.mtime_ms <= watched_until + kLaterEditLagMs) continue;
      later.push_back(c.path);
      const fs::path rel = c.path.lexically_relative(root);
      names.push_back(fmt::format("{} (changed {})", rel.empty() ? c.path.string() : rel.string(),
                                  iso8601_utc(c.mtime_ms, TimePrecision::Seconds)));
    }
    if (later.empty()) continue;
    const Wording w = wording_for(later.size());
    if (policy == LaterEdits::Refuse)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("{} was stopped with its orch (last seen {}), and since then {} changed: {}. "
                              "Resuming would put {} back as before step '{}' began, so nothing was done. "
                              "To keep {} as {} now (the step runs again on {}): `{} --keep-edits`; to "
                              "put {} back as before the step: `{} --discard-edits`",
                              context.who, iso8601_utc(watched_until, TimePrecision::Seconds), w.files,
                              join(names, ", "), w.them, a.step_id, w.them, w.they_are, w.them,
                              context.resume_command, w.them, context.resume_command));
    if (auto restored = restore_snapshot(a.snapshot_dir, later); !restored)
      return fail(ErrorCode::Io,
                  fmt::format("{}: cannot restore the files of step '{}' that was cut off "
                              "(the snapshot is kept in {}): {}",
                              context.who, a.step_id, a.snapshot_dir, restored.error().message));
    // Left for the engine's resume to remove once it has closed the attempt.
    ORCH_TRY(mark_snapshot_put_back(a.snapshot_dir));
    if (context.on_note)
      context.on_note(
          fmt::format("{}: kept as they are now (--keep-edits): {}", context.who, join(names, ", ")));
  }
  return {};
}

}  // namespace orch
