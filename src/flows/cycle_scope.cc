// Taking a scope snapshot and telling what changed since. See cycle_scope.h;
// the snapshot folder's format is in cycle_scope_internal.h, putting changes
// back in cycle_scope_revert.cc.
#include "flows/cycle_scope.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "engine/snapshot_manifest.h"
#include "flows/cycle_scope_internal.h"
#include "util/atomic_file.h"
#include "util/fd.h"
#include "util/json_text.h"
#include "util/read_file.h"

namespace orch::flows {

namespace fs = std::filesystem;
using nlohmann::json;

const char* scope_change_kind_name(ScopeChangeKind kind) {
  switch (kind) {
    case ScopeChangeKind::Created:
      return "created";
    case ScopeChangeKind::Modified:
      return "modified";
    case ScopeChangeKind::Removed:
      return "removed";
  }
  return "modified";
}

namespace scope_detail {

IgnoreRules scope_rules(const fs::path& workspace, const fs::path& snapshot_dir,
                        const std::vector<std::string>& ignore) {
  // The snapshot folder (and the temporary one it is written in) may lie in
  // the workspace: it is orch's, never a change, and never walked into. Its
  // folder is resolved, its own name not: it may not exist yet.
  std::error_code ec;
  const fs::path normal = snapshot_dir.lexically_normal();
  const fs::path named = normal.has_filename() ? normal : normal.parent_path();
  fs::path parent = fs::weakly_canonical(fs::absolute(named).parent_path(), ec);
  if (ec) parent = fs::absolute(named).parent_path();
  std::vector<std::string> own;
  for (const std::string& name : {named.filename().string(), named.filename().string() + ".tmp"}) {
    const fs::path path = parent / name;
    if (path != workspace && snapshot_detail::in_folder(path, workspace))
      own.push_back(path.lexically_relative(workspace).generic_string());
  }
  return IgnoreRules(ignore, std::move(own));
}

Expected<ScopeManifest> read_scope_manifest(const fs::path& snapshot_dir) {
  auto text = read_file_text(snapshot_dir / kScopeManifest);
  if (!text)
    return fail(
        text.error().code == ErrorCode::NotFound ? ErrorCode::NotFound : ErrorCode::Io,
        fmt::format("{}: no complete scope snapshot ({})", snapshot_dir.string(), text.error().message));
  const json m = json::parse(*text, nullptr, false);
  auto corrupt = [&](const std::string& why) {
    return fail(ErrorCode::Io, fmt::format("{}: scope snapshot manifest {}", snapshot_dir.string(), why));
  };
  if (!m.is_object()) return corrupt("is not a JSON object");
  try {
    const int version = m.value("version", 0);
    if (version != kScopeManifestVersion)
      return corrupt(
          fmt::format("is version {}; this orch reads version {}", version, kScopeManifestVersion));
    ScopeManifest out;
    out.workspace = snapshot_detail::field(m, "workspace");
    out.ignore = m.at("ignore").get<std::vector<std::string>>();
    for (const json& f : m.at("folders"))
      out.folders[snapshot_detail::field(f, "path")] = f.at("mode").get<mode_t>();
    for (const json& e : m.at("entries")) {
      ScopeEntry entry;
      entry.rel = snapshot_detail::field(e, "path");
      const std::string type = e.at("type").get<std::string>();
      entry.type = type == "file"      ? EntryType::File
                   : type == "symlink" ? EntryType::Symlink
                                       : EntryType::Other;
      entry.mode = e.value("mode", mode_t{0});
      entry.size = e.value("size", std::int64_t{0});
      entry.hash = e.value("hash", "");
      entry.saved = e.value("saved", "");
      entry.target = snapshot_detail::field(e, "target");
      if (entry.rel.empty() || (entry.type == EntryType::File && entry.saved.empty()))
        return corrupt("has an entry with no path or no saved copy");
      out.entries[entry.rel] = std::move(entry);
    }
    return out;
  } catch (const json::exception& e) {
    return corrupt(fmt::format("is corrupt ({})", e.what()));
  }
}

}  // namespace scope_detail

using scope_detail::EntryType;
using scope_detail::ScopeEntry;

namespace {

// The snapshot folder as named, without a trailing '/' (whose "filename" is empty).
fs::path scope_dir_named(const fs::path& snapshot_dir) {
  const fs::path normal = snapshot_dir.lexically_normal();
  return normal.has_filename() ? normal : normal.parent_path();
}

Expected<fs::path> scope_workspace(const fs::path& workspace) {
  std::error_code ec;
  fs::path real = fs::canonical(workspace, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("workspace {}: {}", workspace.string(), ec.message()));
  return real;
}

Expected<void> scope_sync_folder(const fs::path& folder) {
  Fd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.ok() || ::fsync(fd.get()) != 0)
    return fail(ErrorCode::Io, snapshot_detail::os_error(folder, "sync"));
  return {};
}

json scope_manifest_json(const fs::path& workspace, const std::vector<std::string>& ignore,
                         const scope_detail::WalkResult& walk) {
  json folders = json::array();
  for (const auto& [rel, folder] : walk.folders)
    if (!rel.empty()) folders.push_back({{"path", snapshot_detail::hex(rel)}, {"mode", folder.mode}});
  json entries = json::array();
  for (const auto& [rel, e] : walk.entries) {
    json j = {{"path", snapshot_detail::hex(rel)}, {"type", scope_detail::entry_type_name(e.type)}};
    if (e.type != EntryType::Symlink) j["mode"] = e.mode;
    if (e.type == EntryType::File) {
      j["size"] = e.size;
      j["hash"] = e.hash;
      j["saved"] = e.saved;
    }
    if (e.type == EntryType::Symlink) j["target"] = snapshot_detail::hex(e.target);
    entries.push_back(std::move(j));
  }
  return {{"version", scope_detail::kScopeManifestVersion},
          {"workspace", snapshot_detail::hex(workspace.string())},
          {"ignore", ignore},
          {"folders", std::move(folders)},
          {"entries", std::move(entries)}};
}

// Whether `now` is what the snapshot saved as `was` (the same path).
bool scope_same_entry(const ScopeEntry& was, const ScopeEntry& now) {
  if (was.type != now.type) return false;
  switch (now.type) {
    case EntryType::File:
      return was.mode == now.mode && was.size == now.size && was.hash == now.hash;
    case EntryType::Symlink:
      return was.target == now.target;  // a symlink has no mode of its own on Linux
    case EntryType::Other:
      return was.mode == now.mode;
  }
  return false;
}

}  // namespace

Expected<void> take_scope_snapshot(const fs::path& workspace, const std::vector<std::string>& ignore,
                                   const fs::path& snapshot_dir) {
  const fs::path ws = ORCH_TRY(scope_workspace(workspace));
  const fs::path dir = scope_dir_named(snapshot_dir);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec)))
    return fail(ErrorCode::InvalidInput,
                fmt::format("{}: a scope snapshot cannot be taken into a folder that exists", dir.string()));
  // Written under another name and renamed when complete: a snapshot folder
  // always holds a whole snapshot. One left half-written by a killed orch goes.
  const fs::path tmp = dir.string() + ".tmp";
  fs::remove_all(tmp, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("{}: cannot remove: {}", tmp.string(), ec.message()));
  if (!fs::create_directory(tmp, ec) || !fs::create_directory(tmp / scope_detail::kScopeFiles, ec))
    return fail(ErrorCode::Io, fmt::format("{}: cannot create the scope snapshot folder: {}", tmp.string(),
                                           ec ? ec.message() : "it exists"));
  struct RemoveUnlessDone {
    fs::path path;
    bool done = false;
    ~RemoveUnlessDone() {
      std::error_code ignored;
      if (!done) fs::remove_all(path, ignored);
    }
  } cleanup{tmp};

  int next = 0;
  const fs::path files = tmp / scope_detail::kScopeFiles;
  const scope_detail::FileVisitor save = [&](int fd, ScopeEntry& e) -> Expected<void> {
    std::string name = std::to_string(next++);
    Fd out(::open((files / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!out.ok()) return fail(ErrorCode::Io, snapshot_detail::os_error(files / name, "create"));
    e.hash = ORCH_TRY(scope_detail::hash_content(fd, out.get(), ws / e.rel, e.size));
    e.saved = std::move(name);
    return {};
  };
  const scope_detail::WalkResult walk =
      ORCH_TRY(scope_detail::walk_scope(ws, scope_detail::scope_rules(ws, dir, ignore), save));
  ORCH_TRY(write_file_atomically(tmp / scope_detail::kScopeManifest,
                                 json_text(scope_manifest_json(ws, ignore, walk)), Durability::RenameOnly));
  // One syncfs for the whole snapshot rather than an fsync per saved file: a
  // workspace has thousands of files, and each fsync waits for the disk.
  {
    Fd fd(::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.ok() || ::syncfs(fd.get()) != 0)
      return fail(ErrorCode::Io, snapshot_detail::os_error(tmp, "sync"));
  }
  if (::rename(tmp.c_str(), dir.c_str()) != 0)
    return fail(ErrorCode::Io, snapshot_detail::os_error(dir, "rename the scope snapshot into"));
  cleanup.done = true;
  return scope_sync_folder(fs::absolute(dir).parent_path());
}

bool scope_snapshot_exists(const fs::path& snapshot_dir) {
  return scope_detail::read_scope_manifest(scope_dir_named(snapshot_dir)).has_value();
}

Expected<std::vector<ScopeChange>> scope_changes(const fs::path& workspace, const fs::path& snapshot_dir) {
  const fs::path ws = ORCH_TRY(scope_workspace(workspace));
  const fs::path dir = scope_dir_named(snapshot_dir);
  const scope_detail::ScopeManifest saved = ORCH_TRY(scope_detail::read_scope_manifest(dir));
  // A file is read only when its size leaves its content in doubt: one of
  // another size (or none saved) has changed whatever it holds. The mtime is
  // no proof of the contrary (`touch -d`, `cp -p` and tar set it back).
  const scope_detail::FileVisitor hash = [&](int fd, ScopeEntry& e) -> Expected<void> {
    const auto was = saved.entries.find(e.rel);
    if (was == saved.entries.end() || was->second.type != EntryType::File || was->second.size != e.size)
      return {};
    e.hash = ORCH_TRY(scope_detail::hash_content(fd, -1, ws / e.rel, e.size));
    return {};
  };
  const scope_detail::WalkResult now =
      ORCH_TRY(scope_detail::walk_scope(ws, scope_detail::scope_rules(ws, dir, saved.ignore), hash));
  std::vector<ScopeChange> changes;
  for (const auto& [rel, entry] : now.entries) {
    const auto was = saved.entries.find(rel);
    if (was == saved.entries.end())
      changes.push_back({rel, ScopeChangeKind::Created, entry.mtime_ms});
    else if (!scope_same_entry(was->second, entry))
      changes.push_back({rel, ScopeChangeKind::Modified, entry.mtime_ms});
  }
  for (const auto& [rel, entry] : saved.entries) {
    if (now.entries.contains(rel)) continue;
    if (const auto folder = now.folders.find(rel); folder != now.folders.end()) {
      changes.push_back({rel, ScopeChangeKind::Modified, folder->second.mtime_ms});  // a folder now
      continue;
    }
    // Removing a name changes its folder's mtime; when the folder went too, the
    // nearest one left above it is where the removal shows.
    std::string above = rel;
    do {
      const auto slash = above.rfind('/');
      above = slash == std::string::npos ? std::string() : above.substr(0, slash);
    } while (!above.empty() && !now.folders.contains(above));
    changes.push_back({rel, ScopeChangeKind::Removed, now.folders.at(above).mtime_ms});
  }
  std::sort(changes.begin(), changes.end(),
            [](const ScopeChange& a, const ScopeChange& b) { return a.path < b.path; });
  return changes;
}

std::vector<std::string> jobs_for_change(const ScopeChange& change, const std::vector<JobWindow>& windows,
                                         std::int64_t slack_ms) {
  std::vector<std::string> held, all;
  auto add = [](std::vector<std::string>& to, const std::string& job) {
    if (std::find(to.begin(), to.end(), job) == to.end()) to.push_back(job);
  };
  for (const JobWindow& w : windows) {
    add(all, w.job);
    if (w.start_ms - slack_ms <= change.mtime_ms && change.mtime_ms <= w.end_ms + slack_ms) add(held, w.job);
  }
  return held.empty() ? all : held;
}

}  // namespace orch::flows
