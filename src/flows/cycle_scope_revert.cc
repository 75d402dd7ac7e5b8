// Putting a workspace's changes back as a scope snapshot has them. See
// cycle_scope.h; the snapshot folder's format is in cycle_scope_internal.h.
//
// A job's process may still be running while the revert runs, and the job may
// have planted symlinks: a folder could be a symlink to outside the workspace by
// the time a file is written into it. So, as engine's restore does
// (engine/snapshot_folders.h, whose helpers this uses), the revert opens the
// workspace once, goes down one folder at a time with O_NOFOLLOW, and does
// everything relative to a folder it holds open. A file is put back by writing
// a temporary file in its folder and renaming it over the name: rename replaces
// a symlink there rather than following it, and a reader never sees half a file.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>

#include "engine/snapshot_folders.h"
#include "engine/snapshot_manifest.h"
#include "flows/cycle_scope.h"
#include "flows/cycle_scope_internal.h"
#include "util/chmod_at.h"
#include "util/fd.h"

namespace orch::flows {

namespace fs = std::filesystem;

namespace {

using scope_detail::EntryType;
using scope_detail::ScopeEntry;
using snapshot_detail::Folder;
using snapshot_detail::os_error;

// The first `count` of `names`, joined: the path of a folder on the way.
std::string scope_prefix(const std::vector<std::string>& names, std::size_t count) {
  std::string rel;
  for (std::size_t i = 0; i < count; ++i) rel += (i == 0 ? "" : "/") + names[i];
  return rel;
}

struct ScopeReverter : snapshot_detail::WorkspaceFolders {
  ScopeReverter(fs::path workspace_path, int workspace_folder, const scope_detail::ScopeManifest& manifest,
                fs::path saved_files)
      : WorkspaceFolders(std::move(workspace_path), workspace_folder),
        saved(manifest),
        files(std::move(saved_files)) {}

  const scope_detail::ScopeManifest& saved;
  fs::path files;  // the snapshot's copies
  int next_temp = 0;

  // Starts `chain` with (a copy of the descriptor of) the workspace.
  bool start(std::vector<Folder>& chain) {
    chain.emplace_back(Fd(::fcntl(workspace_fd, F_DUPFD_CLOEXEC, 0)), workspace);
    if (chain.back().fd.ok()) return true;
    problem(os_error(workspace, "open the workspace"));
    return false;
  }

  // Opens the folders from the workspace down to the one holding the last of
  // `names`, as they are now: false, with nothing reported, when one on the
  // way is not a folder (there is then nothing at that path to remove).
  bool descend_as_is(const std::vector<std::string>& names, std::vector<Folder>& chain) {
    if (!start(chain)) return false;
    for (std::size_t i = 0; i + 1 < names.size(); ++i) {
      const int parent = chain.back().fd.get();
      struct stat st {};
      if (::fstatat(parent, names[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
        return false;
      Folder next = open_folder(parent, names[i], chain.back().path / names[i]);
      if (!next.fd.ok()) return false;
      chain.push_back(std::move(next));
    }
    return true;
  }

  // The same, each folder on the way made a real one: what stands in its place
  // (a symlink, never followed, or a file) goes, and one made again gets the
  // snapshot's mode once the revert is done with it (Folder's mode_before).
  bool descend_mending(const std::vector<std::string>& names, std::vector<Folder>& chain) {
    if (!start(chain)) return false;
    for (std::size_t i = 0; i + 1 < names.size(); ++i) {
      const int parent = chain.back().fd.get();
      fs::path path = chain.back().path / names[i];
      struct stat st {};
      const bool folder =
          ::fstatat(parent, names[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      if (!folder) {
        open_up(chain.back());
        if (!real_folder(parent, names[i], path)) return false;
      }
      Folder next = open_folder(parent, names[i], std::move(path));
      if (!next.fd.ok()) return false;
      if (const auto mode = saved.folders.find(scope_prefix(names, i + 1));
          !folder && mode != saved.folders.end())
        next.mode_before = static_cast<int>(mode->second);
      chain.push_back(std::move(next));
    }
    return true;
  }

  // A path the snapshot does not have: removed, and the folders above it that
  // the snapshot does not have either once they are empty.
  void remove_path(const std::string& rel, const std::vector<std::string>& names) {
    std::vector<Folder> chain;
    if (!descend_as_is(names, chain)) return;
    Folder& parent = chain.back();
    const std::string& name = names.back();
    const fs::path path = parent.path / name;
    struct stat st {};
    if (::fstatat(parent.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) {
        problem(os_error(path, "read"));
        return;
      }
    } else {
      if (S_ISDIR(st.st_mode) && saved.folders.contains(rel)) return;  // its own changes deal with it
      open_up(parent);
      if (!remove(parent.fd.get(), name, path)) return;
    }
    // A folder of the snapshot that the job had replaced with a file.
    if (const auto mode = saved.folders.find(rel); mode != saved.folders.end()) {
      if (::mkdirat(parent.fd.get(), name.c_str(), 0700) != 0 ||
          chmod_at_nofollow(parent.fd.get(), name.c_str(), mode->second) != 0)
        problem(os_error(path, "make the folder again"));
      return;
    }
    for (std::size_t i = chain.size() - 1; i >= 1; --i) {
      if (saved.folders.contains(scope_prefix(names, i))) break;
      open_up(chain[i - 1]);
      if (::unlinkat(chain[i - 1].fd.get(), names[i - 1].c_str(), AT_REMOVEDIR) != 0) break;  // not empty
      chain[i].mode_before = -1;  // gone: no mode to give back
    }
  }

  std::string temp_name() { return fmt::format(".orch-scope-{}-{}", ::getpid(), next_temp++); }

  // A temporary file in `at` holding the saved content of `was`, with its
  // mode, synced: its name, or "" (reported).
  std::string temp_file(int at, const fs::path& path, const ScopeEntry& was) {
    const fs::path copy = files / was.saved;
    Fd in(::open(copy.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat kept {};
    if (!in.ok() || ::fstat(in.get(), &kept) != 0) {
      problem(os_error(copy, "read the snapshot's copy"));
      return {};
    }
    for (;;) {
      std::string temp = temp_name();
      Fd out(::openat(at, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!out.ok() && errno == EEXIST) continue;  // a leftover of an earlier revert
      if (!out.ok()) {
        problem(os_error(path, "write"));
        return {};
      }
      auto copied = snapshot_detail::copy_content(in.get(), out.get(), kept.st_size, path);
      if (copied && ::fchmod(out.get(), was.mode) == 0 && ::fdatasync(out.get()) == 0) return temp;
      problem(copied ? os_error(path, "write") : copied.error().message);
      ::unlinkat(at, temp.c_str(), 0);
      return {};
    }
  }

  std::string temp_symlink(int at, const fs::path& path, const ScopeEntry& was) {
    for (;;) {
      std::string temp = temp_name();
      if (::symlinkat(was.target.c_str(), at, temp.c_str()) == 0) return temp;
      if (errno == EEXIST) continue;
      problem(os_error(path, "make the symlink"));
      return {};
    }
  }

  // A path the snapshot has: its content (or target) and mode put back.
  void put_back(const std::vector<std::string>& names, const ScopeEntry& was) {
    std::vector<Folder> chain;
    if (!descend_mending(names, chain)) return;
    Folder& parent = chain.back();
    open_up(parent);
    const int at = parent.fd.get();
    const std::string& name = names.back();
    const fs::path path = parent.path / name;
    struct stat st {};
    const bool exists = ::fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (was.type == EntryType::Other) {
      if (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
        if (chmod_at_nofollow(at, name.c_str(), was.mode) != 0)
          problem(os_error(path, "give back the mode of"));
      } else {
        problem(fmt::format("{}: a FIFO, socket or device cannot be made again", path.string()));
      }
      return;
    }
    // rename cannot put a file over a folder: the folder (not the snapshot's) goes first.
    if (exists && S_ISDIR(st.st_mode) && !remove(at, name, path)) return;
    const std::string temp =
        was.type == EntryType::File ? temp_file(at, path, was) : temp_symlink(at, path, was);
    if (temp.empty()) return;
    if (::renameat(at, temp.c_str(), at, name.c_str()) != 0) {
      problem(os_error(path, "put back"));
      ::unlinkat(at, temp.c_str(), 0);
      return;
    }
    if (::fsync(at) != 0) problem(os_error(parent.path, "sync"));
  }
};

}  // namespace

Expected<void> revert_scope_changes(const fs::path& workspace, const fs::path& snapshot_dir,
                                    const std::vector<ScopeChange>& changes) {
  std::error_code ec;
  const fs::path ws = fs::canonical(workspace, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("workspace {}: {}", workspace.string(), ec.message()));
  const fs::path normal = snapshot_dir.lexically_normal();
  const fs::path dir = normal.has_filename() ? normal : normal.parent_path();
  const scope_detail::ScopeManifest saved = ORCH_TRY(scope_detail::read_scope_manifest(dir));
  const scope_detail::IgnoreRules rules = scope_detail::scope_rules(ws, dir, saved.ignore);
  // The one path the revert resolves: everything else is reached from here.
  Fd top(::open(ws.c_str(), snapshot_detail::kOpenFolder));
  if (!top.ok()) return fail(ErrorCode::Io, os_error(ws, "open the workspace") + ": nothing was reverted");
  ScopeReverter r(ws, top.get(), saved, dir / scope_detail::kScopeFiles);

  // What the snapshot does not have is removed first, deepest first, and then
  // what it has is put back in path order: a folder of the snapshot that a job
  // replaced with a file is a folder again before its files come back into it.
  std::vector<std::string> removals, restores;
  for (const ScopeChange& change : changes) {
    const std::vector<std::string> names = scope_detail::split_rel(change.path);
    bool inside = !names.empty();
    bool ignored = false;
    for (std::size_t i = 0; inside && i < names.size(); ++i) {
      inside = names[i] != "." && names[i] != "..";  // openat would take ".." up and out
      const std::string rel = scope_prefix(names, i + 1);
      ignored = ignored || rules.ignored(rel, i + 1 < names.size());  // the last: a file or symlink
    }
    if (!inside)
      r.problem(fmt::format("{}: not a path inside the workspace", change.path));
    else if (ignored)  // the snapshot knows nothing of it: never touched
      r.problem(fmt::format("{}: ignored by the scope snapshot, left as it is", change.path));
    else
      (saved.entries.contains(scope_prefix(names, names.size())) ? restores : removals)
          .push_back(scope_prefix(names, names.size()));
  }
  std::sort(removals.begin(), removals.end(), std::greater<>());
  std::sort(restores.begin(), restores.end());
  for (const std::string& rel : removals) r.remove_path(rel, scope_detail::split_rel(rel));
  for (const std::string& rel : restores) r.put_back(scope_detail::split_rel(rel), saved.entries.at(rel));

  if (r.problems.empty()) return {};
  std::string all;
  for (const std::string& p : r.problems) all += (all.empty() ? "" : "; ") + p;
  return fail(ErrorCode::Io, all);
}

}  // namespace orch::flows
