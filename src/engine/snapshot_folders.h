// engine/snapshot_folders.h — going through the workspace folder by folder,
// never by a path a process could have changed (snapshot_restore.cc, and the
// scope revert of `orch cycle`: flows/cycle_scope_revert.cc).
//
// A process left over from the attempt may still be changing the workspace
// while the restore runs: a folder checked to be a folder could be a symlink to
// outside the workspace a moment later. So the restore never resolves a path
// the attempt could have changed. It opens the workspace once, goes down one
// folder at a time with O_NOFOLLOW, and does everything relative to a folder it
// holds open: a swap meanwhile can make an open fail (reported), never send a
// write or a removal outside the workspace.
//
// Not part of liborch's API; one restore at a time, one thread.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/fd.h"

namespace orch::snapshot_detail {

inline constexpr int kOpenFolder = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// A folder the restore holds open, with its path for messages. When orch had
// to open it up (give its owner rwx) it gets its mode back as the Folder goes,
// unless the restore set the mode itself (mode_before back to -1).
struct Folder {
  Fd fd;
  std::filesystem::path path;
  int mode_before = -1;

  Folder(Fd f, std::filesystem::path p) : fd(std::move(f)), path(std::move(p)) {}
  Folder(Folder&&) = default;
  ~Folder() {
    if (fd.ok() && mode_before >= 0) ::fchmod(fd.get(), static_cast<mode_t>(mode_before));
  }
};

// The workspace, reached only from the descriptor `workspace_fd` it was opened
// as (held by the caller for as long as this is used). What could not be done
// is collected in `problems` rather than stopping at the first.
struct WorkspaceFolders {
  WorkspaceFolders(std::filesystem::path workspace_path, int workspace_folder)
      : workspace(std::move(workspace_path)), workspace_fd(workspace_folder) {}

  std::filesystem::path workspace;
  int workspace_fd;
  std::vector<std::string> problems;

  void problem(std::string text) { problems.push_back(std::move(text)); }

  // The names from the workspace down to `path` (none for the workspace
  // itself), or nullopt when `path` is not inside it.
  std::optional<std::vector<std::string>> below_workspace(const std::filesystem::path& path) const;

  // Lets orch add and remove entries in `folder` (one an attempt made
  // read-only); the mode comes back when `folder` goes.
  static void open_up(Folder& folder);

  // Opens the folder `name` in `parent`, never through a symlink: if one (or a
  // file) was put there meanwhile, the open fails and that is reported. A
  // folder orch's user owns but may not read is opened up to be read.
  Folder open_folder(int parent, const std::string& name, std::filesystem::path path);

  // The names in `folder` ("." and ".." aside), read through a copy of its
  // descriptor (closedir closes the one it is given).
  std::optional<std::vector<std::string>> list(const Folder& folder);

  // Removes `name` from `parent`, a folder with all it holds; never follows a
  // symlink (removes the link).
  bool remove(int parent, const std::string& name, const std::filesystem::path& path);

  // Makes `name` in `parent` a real folder: what the attempt put in its place
  // (a symlink, which a restore must never follow, or a file) goes.
  bool real_folder(int parent, const std::string& name, const std::filesystem::path& path);

  // Opens every folder from the workspace (chain[0]) down to the one that
  // holds the last of `names`, each made a real folder on the way.
  bool walk_down(const std::vector<std::string>& names, std::vector<Folder>& chain);
};

}  // namespace orch::snapshot_detail
