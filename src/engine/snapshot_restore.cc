// Restoring a snapshot: a step's `writes:` put back as they were before its
// attempt. See snapshot.h; the folder's format is in snapshot_manifest.h.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "engine/snapshot.h"
#include "engine/snapshot_folders.h"
#include "engine/snapshot_manifest.h"
#include "util/chmod_at.h"
#include "util/fd.h"

namespace orch {

namespace fs = std::filesystem;
using nlohmann::json;
using snapshot_detail::copy_content;
using snapshot_detail::field;
using snapshot_detail::Folder;
using snapshot_detail::in_folder;
using snapshot_detail::kOpenFolder;
using snapshot_detail::os_error;
using snapshot_detail::read_manifest;
using snapshot_detail::unhex;
using snapshot_detail::WorkspaceFolders;

namespace {

// A root's manifest nodes by their path below it, and each folder's entries.
struct Tree {
  std::map<std::string, const json*> nodes;
  std::map<std::string, std::vector<std::string>> children;
};

std::string child_rel(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

struct Restorer : WorkspaceFolders {
  Restorer(fs::path snapshot_dir, fs::path workspace_path, int workspace_folder, std::vector<fs::path> left)
      : WorkspaceFolders(std::move(workspace_path), workspace_folder),
        snapshot(std::move(snapshot_dir)),
        leave(std::move(left)) {}

  fs::path snapshot;
  std::vector<fs::path> leave;  // roots left as they are

  // Gives back the owner, mode and modification time of `name` in `at` or,
  // with no name, of the folder `at` itself.
  void metadata(int at, const char* name, const fs::path& path, const json& node, bool symlink) {
    struct stat st {};
    if ((name != nullptr ? ::fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) : ::fstat(at, &st)) != 0) return;
    const auto uid = node.value("uid", static_cast<uid_t>(st.st_uid));
    const auto gid = node.value("gid", static_cast<gid_t>(st.st_gid));
    // Only root may give a file away: for anyone else the owner is theirs already.
    if ((st.st_uid != uid || st.st_gid != gid) &&
        (name != nullptr ? ::fchownat(at, name, uid, gid, AT_SYMLINK_NOFOLLOW) : ::fchown(at, uid, gid)) !=
            0 &&
        errno != EPERM)
      problem(os_error(path, "give back the owner of"));
    // A symlink has no mode of its own; chmod_at_nofollow fails on one (rather
    // than following it) should a file have become one meanwhile.
    const mode_t mode = node.value("mode", 0644u);
    if (!symlink && (name != nullptr ? chmod_at_nofollow(at, name, mode) : ::fchmod(at, mode)) != 0)
      problem(os_error(path, "give back the mode of"));
    timespec times[2] = {{0, UTIME_OMIT},
                         {node.value("mtime_s", time_t{0}), node.value("mtime_ns", long{0})}};
    if ((name != nullptr ? ::utimensat(at, name, times, AT_SYMLINK_NOFOLLOW) : ::futimens(at, times)) != 0)
      problem(os_error(path, "give back the modification time of"));
  }

  // Makes `name` in `at` a hard link of `target` again (an earlier node of the
  // snapshot, put back already). The target's folder is reached the same way,
  // folder by folder, but not mended: if one on the way is no real folder now,
  // that is reported and nothing is linked.
  void link_again(int at, const std::string& name, const fs::path& path, const fs::path& target,
                  const struct stat* now) {
    const auto names = below_workspace(target);
    if (!names || names->empty()) {
      problem(fmt::format("{}: its hard link {} is not inside the workspace {}", path.string(),
                          target.string(), workspace.string()));
      return;
    }
    // O_PATH: a folder on the way needs no read permission to be passed through.
    Fd held(-1);
    int target_at = workspace_fd;
    fs::path shown = workspace;
    for (std::size_t i = 0; i + 1 < names->size(); ++i) {
      shown /= (*names)[i];
      held = Fd(::openat(target_at, (*names)[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!held.ok()) {
        problem(
            fmt::format("cannot link {} again to {}: {}: {}", path.string(), target.string(), shown.string(),
                        errno == ELOOP || errno == ENOTDIR ? "no folder any more" : std::strerror(errno)));
        return;
      }
      target_at = held.get();
    }
    const std::string& target_name = names->back();
    struct stat t {};
    if (now != nullptr && ::fstatat(target_at, target_name.c_str(), &t, AT_SYMLINK_NOFOLLOW) == 0 &&
        t.st_ino == now->st_ino && t.st_dev == now->st_dev)
      return;  // still the same file
    if (now != nullptr && !remove(at, name, path)) return;
    // Flags 0: should the target be a symlink now, the link is to the symlink, not where it points.
    if (::linkat(target_at, target_name.c_str(), at, name.c_str(), 0) != 0)
      problem(os_error(path, "link again"));
  }

  void file(int at, const std::string& name, const fs::path& path, const json& node, const struct stat* now) {
    if (node.contains("link_to")) {
      link_again(at, name, path, field(node, "link_to"), now);
      return;
    }
    const fs::path saved = snapshot / "files" / node.value("saved", "");
    Fd in(::open(saved.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat kept {};
    if (!in.ok() || ::fstat(in.get(), &kept) != 0) {
      problem(os_error(saved, "read the snapshot's copy"));
      return;
    }
    // Changed in place: put the content back in place, so that its other hard
    // links (even outside `writes:`) see it too. Replaced or gone: made again.
    int fd = -1;
    if (now != nullptr && S_ISREG(now->st_mode) && now->st_ino == node.value("ino", ino_t{0}) &&
        now->st_dev == node.value("dev", dev_t{0})) {
      // O_NONBLOCK: should it have become a FIFO meanwhile, the open fails rather than waits.
      const int flags = O_WRONLY | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
      fd = ::openat(at, name.c_str(), flags);
      // Made read-only by the attempt (or always so): opened for writing by its
      // owner for a moment, so that its other hard links still get the content;
      // its mode comes back with the rest of its metadata.
      if (fd < 0 && errno == EACCES && now->st_uid == geteuid() &&
          chmod_at_nofollow(at, name.c_str(), (now->st_mode & 07777) | S_IWUSR) == 0)
        fd = ::openat(at, name.c_str(), flags);
      struct stat opened {};
      if (fd >= 0 &&
          (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_ino != now->st_ino)) {
        ::close(fd);
        fd = -1;
      }
    }
    if (fd < 0) {
      if (now != nullptr && !remove(at, name, path)) return;
      fd = ::openat(at, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    }
    Fd out(fd);
    if (!out.ok()) {
      problem(os_error(path, "write"));
      return;
    }
    if (auto copied = copy_content(in.get(), out.get(), kept.st_size, path); !copied)
      problem(copied.error().message);
  }

  // Brings the open `folder` (the node `rel`) back in line: what the attempt
  // added goes, each saved entry is put back, then the folder's own metadata.
  // The folder itself is kept (a shell sitting in it stays in it).
  void folder_entries(Folder& folder, const std::string& rel, const Tree& tree) {
    open_up(folder);  // its own mode comes back with its metadata below
    const auto kids = tree.children.find(rel);
    std::set<std::string> keep;
    if (kids != tree.children.end()) keep.insert(kids->second.begin(), kids->second.end());
    if (const auto names = list(folder))
      for (const std::string& name : *names)
        if (!keep.contains(name)) remove(folder.fd.get(), name, folder.path / name);
    if (kids != tree.children.end())
      for (const std::string& name : kids->second) entry(folder, name, child_rel(rel, name), tree);
    metadata(folder.fd.get(), nullptr, folder.path, *tree.nodes.at(rel), false);
    folder.mode_before = -1;  // the mode is the saved one now
  }

  void entry(const Folder& parent, const std::string& name, const std::string& rel, const Tree& tree) {
    const int at = parent.fd.get();
    const fs::path path = parent.path / name;
    const json& node = *tree.nodes.at(rel);
    const std::string type = node.value("type", "");
    struct stat st {};
    const bool exists = ::fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (type == "dir") {
      if (exists && !S_ISDIR(st.st_mode) && !remove(at, name, path)) return;
      if ((!exists || !S_ISDIR(st.st_mode)) && ::mkdirat(at, name.c_str(), 0700) != 0) {
        problem(os_error(path, "make the folder"));
        return;
      }
      Folder folder = open_folder(at, name, path);
      if (folder.fd.ok()) folder_entries(folder, rel, tree);
      return;
    }
    if (type == "file") {
      file(at, name, path, node, exists ? &st : nullptr);
      if (node.contains("link_to")) return;  // the first link's metadata is the file's
    } else if (type == "symlink") {
      const std::string target = field(node, "target");
      if (!(exists && S_ISLNK(st.st_mode) && read_link(at, name) == target)) {
        if (exists && !remove(at, name, path)) return;
        if (::symlinkat(target.c_str(), at, name.c_str()) != 0) {
          problem(os_error(path, "make the symlink"));
          return;
        }
      }
    } else if (type == "fifo") {
      if (!(exists && S_ISFIFO(st.st_mode))) {
        if (exists && !remove(at, name, path)) return;
        if (::mkfifoat(at, name.c_str(), 0600) != 0) {
          problem(os_error(path, "make the FIFO"));
          return;
        }
      }
    } else {
      if (!exists) problem(fmt::format("{}: a socket or device cannot be made again", path.string()));
      return;
    }
    metadata(at, name.c_str(), path, node, type == "symlink");
  }

  // Where the symlink `name` in `at` points ("" when it cannot be read).
  static std::string read_link(int at, const std::string& name) {
    std::string target(256, '\0');
    for (;;) {
      const ssize_t n = ::readlinkat(at, name.c_str(), target.data(), target.size());
      if (n < 0) return {};
      if (static_cast<std::size_t>(n) < target.size()) return target.substr(0, static_cast<std::size_t>(n));
      target.resize(target.size() * 2);  // it may have been cut short
    }
  }

  void root(const json& r) {
    const fs::path path = field(r, "path");
    if (std::find(leave.begin(), leave.end(), path) != leave.end()) return;
    const auto names = below_workspace(path);
    if (!names) {
      problem(fmt::format("{} is not inside the workspace {}", path.string(), workspace.string()));
      return;
    }
    Tree tree;
    static const json kNone = json::array();
    const auto list = r.find("nodes");
    for (const json& n : list != r.end() && list->is_array() ? *list : kNone) {
      const std::string rel = field(n, "rel");
      tree.nodes[rel] = &n;
      if (rel.empty()) continue;
      const auto slash = rel.rfind('/');
      tree.children[slash == std::string::npos ? "" : rel.substr(0, slash)].push_back(
          slash == std::string::npos ? rel : rel.substr(slash + 1));
    }
    const bool existed = r.value("existed", false);
    if (existed && !tree.nodes.contains("")) {
      problem(fmt::format("{}: the snapshot holds nothing for it", path.string()));
      return;
    }
    std::vector<Folder> chain;  // the workspace, then each folder down to the root's parent
    chain.emplace_back(Fd(::fcntl(workspace_fd, F_DUPFD_CLOEXEC, 0)), workspace);
    if (!chain.back().fd.ok()) {
      problem(os_error(workspace, "open the workspace"));
      return;
    }
    if (names->empty()) {  // `writes: [.]`: the workspace folder itself is kept
      if (!existed || tree.nodes.at("")->value("type", "") != "dir") {
        problem(fmt::format("{}: the snapshot does not hold it as a folder", path.string()));
        return;
      }
      folder_entries(chain.back(), "", tree);
      return;
    }
    if (!walk_down(*names, chain)) return;
    Folder& parent = chain.back();
    open_up(parent);  // its mode comes back as `chain` goes
    if (existed) {
      entry(parent, names->back(), "", tree);
      return;
    }
    remove(parent.fd.get(), names->back(), path);
    // The folders the attempt made to hold it go too, if nothing else is in
    // them: each removed through the folder above it, which is held open.
    const fs::path above = r.contains("above") ? fs::path(field(r, "above")) : workspace;
    for (std::size_t i = chain.size() - 1; i >= 1; --i) {
      if (chain[i].path == above || !in_folder(chain[i].path, above)) break;
      if (::unlinkat(chain[i - 1].fd.get(), (*names)[i - 1].c_str(), AT_REMOVEDIR) != 0) break;
    }
  }
};

// What orch before manifest version 2 wrote: whole copies, put back over the paths.
Expected<void> restore_v1(const fs::path& snapshot_dir, const json& manifest) {
  for (const auto& entry : manifest) {
    fs::path p = entry.value("path", "");
    if (p.empty()) continue;
    std::error_code ec;
    fs::remove_all(p, ec);
    if (ec)
      return fail(ErrorCode::Io, fmt::format("cannot remove {} to restore it: {}", p.string(), ec.message()));
    if (!entry.value("existed", false)) continue;
    const fs::path from = snapshot_dir / "files" / entry.value("saved", "");
    fs::create_directories(p.parent_path(), ec);
    fs::copy(from, p, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec)
      return fail(ErrorCode::Io,
                  fmt::format("cannot copy {} to {}: {}", from.string(), p.string(), ec.message()));
  }
  return {};
}

}  // namespace

Expected<void> restore_snapshot(const fs::path& snapshot_dir, const std::vector<fs::path>& leave) {
  const std::optional<json> read = read_manifest(snapshot_dir);
  if (!read)
    return fail(ErrorCode::NotFound,
                fmt::format("{}: no complete snapshot to restore", snapshot_dir.string()));
  const json& manifest = *read;
  try {
    if (manifest.is_array()) return restore_v1(snapshot_dir, manifest);
  } catch (const json::exception& e) {
    return fail(ErrorCode::Io,
                fmt::format("{}: snapshot manifest is corrupt ({})", snapshot_dir.string(), e.what()));
  }
  if (!manifest.is_object() || !manifest.contains("roots") || !manifest["roots"].is_array() ||
      !manifest.contains("workspace") || !manifest["workspace"].is_string())
    return fail(ErrorCode::Io, fmt::format("{}: snapshot manifest is corrupt", snapshot_dir.string()));
  const fs::path workspace = unhex(manifest["workspace"].get<std::string>());
  // The one path the restore resolves: everything else is reached from here, folder by folder.
  Fd workspace_fd(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!workspace_fd.ok())
    return fail(
        ErrorCode::Io,
        errno == ENOENT || errno == ENOTDIR || errno == ELOOP
            ? fmt::format("workspace {} is not a folder any more: nothing was restored", workspace.string())
            : fmt::format("cannot open the workspace {}: {}: nothing was restored", workspace.string(),
                          std::strerror(errno)));
  Restorer r(snapshot_dir, workspace, workspace_fd.get(), leave);
  try {
    for (const json& root : manifest["roots"]) r.root(root);
  } catch (const json::exception& e) {  // orch wrote it; one edited by hand may not hold what it should
    r.problem(fmt::format("{}: snapshot manifest is corrupt ({})", snapshot_dir.string(), e.what()));
  }
  if (r.problems.empty()) return {};
  std::string all;
  for (const std::string& p : r.problems) all += (all.empty() ? "" : "; ") + p;
  return fail(ErrorCode::Io, all);
}

}  // namespace orch
