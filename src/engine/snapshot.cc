// engine/snapshot.cc — see snapshot.h.
//
// The manifest (manifest.json, written last and renamed into place):
//   {"version": 2, "workspace": REAL_PATH, "roots": [ROOT...]}
//   ROOT: {"path": REAL_PATH, "existed": bool, "above": the nearest folder above it
//          that existed (when it did not), "nodes": [NODE...] (the root first, then
//          what a folder holds, each folder before its entries)}
//   NODE: {"rel": path below the root ("" the root), "type": file | dir | symlink |
//          fifo | other, "mode", "uid", "gid", "mtime_s", "mtime_ns", "dev", "ino",
//          file: "saved" (its content under files/) or "link_to" (the path of an
//          earlier node it is a hard link of); symlink: "target"}
// Every path, name and symlink target in it is hex: a file name is bytes, not
// text, and one that is not UTF-8 would be rewritten by the JSON writer (U+FFFD),
// so a restore would recreate it under another name and lose the original.
// A version 1 manifest (a bare array of {path, existed, saved}) is still restored
// the way it was written, for a resume of an attempt an older orch started.
#include "engine/snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "util/chmod_at.h"
#include "util/fd.h"
#include "util/json_text.h"

namespace orch {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kManifest = "manifest.json";
constexpr const char* kPutBack = "put-back.json";  // the manifest of one put back (mark_snapshot_put_back)

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    out += kDigits[u >> 4];
    out += kDigits[u & 15];
  }
  return out;
}

std::string unhex(std::string_view text) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
    const int hi = digit(text[i]), lo = digit(text[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

// A hex field of a manifest entry, as bytes ("" when absent).
std::string field(const json& entry, const char* name) {
  auto it = entry.find(name);
  return it != entry.end() && it->is_string() ? unhex(it->get<std::string>()) : std::string();
}

std::string os_error(const fs::path& path, const char* what) {
  return fmt::format("cannot {} {}: {}", what, path.string(), std::strerror(errno));
}

// Whether `path` is `folder` or inside it (both absolute and normal).
bool in_folder(const fs::path& path, const fs::path& folder) {
  auto [f, p] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return f == folder.end() || (std::next(f) == folder.end() && f->empty());
}

// Copies `size` bytes of `from` into `to` (open, empty or truncated), leaving
// the holes of a sparse file as holes.
Expected<void> copy_content(int from, int to, off_t size, const fs::path& shown) {
  std::vector<char> buffer(static_cast<std::size_t>(std::clamp<off_t>(size, 1, 1 << 20)));
  auto copy_range = [&](off_t begin, off_t end) -> Expected<void> {
    while (begin < end) {
      const auto want =
          static_cast<std::size_t>(std::min<off_t>(end - begin, static_cast<off_t>(buffer.size())));
      const ssize_t got = ::pread(from, buffer.data(), want, begin);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return fail(ErrorCode::Io, os_error(shown, "read"));
      if (got == 0) break;  // it shrank meanwhile: what was there is what is kept
      for (ssize_t put = 0; put < got;) {
        const ssize_t n = ::pwrite(to, buffer.data() + put, static_cast<std::size_t>(got - put), begin + put);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(ErrorCode::Io, os_error(shown, "write a copy of"));
        put += n;
      }
      begin += got;
    }
    return {};
  };
  for (off_t at = 0; at < size;) {
    const off_t data = ::lseek(from, at, SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // a hole up to the end
    if (data < 0) {                         // no SEEK_DATA here: all of it is data
      ORCH_TRY(copy_range(at, size));
      break;
    }
    off_t hole = ::lseek(from, data, SEEK_HOLE);
    if (hole < 0 || hole > size) hole = size;
    ORCH_TRY(copy_range(data, hole));
    at = hole;
  }
  if (::ftruncate(to, size) != 0) return fail(ErrorCode::Io, os_error(shown, "size a copy of"));
  return {};
}

// ---- taking ----------------------------------------------------------------

struct Taker {
  fs::path files;
  int next_file = 0;
  std::map<std::pair<dev_t, ino_t>, std::string> linked;  // a multiply-linked file's first path

  Expected<void> walk(const fs::path& path, const std::string& rel, json& nodes) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return fail(ErrorCode::Io, os_error(path, "read"));
    json node = {{"rel", hex(rel)},
                 {"mode", st.st_mode & 07777},
                 {"uid", st.st_uid},
                 {"gid", st.st_gid},
                 {"mtime_s", st.st_mtim.tv_sec},
                 {"mtime_ns", st.st_mtim.tv_nsec},
                 {"dev", st.st_dev},
                 {"ino", st.st_ino}};
    if (S_ISREG(st.st_mode)) {
      node["type"] = "file";
      if (st.st_nlink > 1) {
        auto [it, first] = linked.try_emplace({st.st_dev, st.st_ino}, path.string());
        if (!first) {
          node["link_to"] = hex(it->second);
          nodes.push_back(std::move(node));
          return {};
        }
      }
      const std::string name = std::to_string(next_file++);
      Fd in(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      if (!in.ok()) return fail(ErrorCode::Io, os_error(path, "read"));
      Fd out(::open((files / name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!out.ok()) return fail(ErrorCode::Io, os_error(files / name, "create"));
      ORCH_TRY(copy_content(in.get(), out.get(), st.st_size, path));
      node["saved"] = name;
    } else if (S_ISDIR(st.st_mode)) {
      node["type"] = "dir";
      nodes.push_back(std::move(node));
      std::error_code ec;
      std::vector<std::string> names;
      for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
        names.push_back(it->path().filename().string());
      if (ec) return fail(ErrorCode::Io, fmt::format("cannot list {}: {}", path.string(), ec.message()));
      std::sort(names.begin(), names.end());
      for (const std::string& name : names)
        ORCH_TRY(walk(path / name, rel.empty() ? name : rel + "/" + name, nodes));
      return {};
    } else if (S_ISLNK(st.st_mode)) {
      node["type"] = "symlink";
      std::error_code ec;
      node["target"] = hex(fs::read_symlink(path, ec).string());
      if (ec)
        return fail(ErrorCode::Io,
                    fmt::format("cannot read the symlink {}: {}", path.string(), ec.message()));
    } else if (S_ISFIFO(st.st_mode)) {
      node["type"] = "fifo";
    } else {
      node["type"] = "other";  // a socket or a device: left as found on restore
    }
    nodes.push_back(std::move(node));
    return {};
  }
};

// ---- restoring -------------------------------------------------------------
//
// A process left over from the attempt may still be changing the workspace
// while the restore runs: a folder checked to be a folder could be a symlink to
// outside the workspace a moment later. So the restore never resolves a path
// the attempt could have changed. It opens the workspace once, goes down one
// folder at a time with O_NOFOLLOW, and does everything relative to a folder it
// holds open: a swap meanwhile can make an open fail (reported), never send a
// write or a removal outside the workspace.

constexpr int kOpenFolder = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// A folder the restore holds open, with its path for messages. When orch had
// to open it up (give its owner rwx) it gets its mode back as the Folder goes,
// unless the restore set the mode itself (mode_before back to -1).
struct Folder {
  Fd fd;
  fs::path path;
  int mode_before = -1;

  Folder(Fd f, fs::path p) : fd(std::move(f)), path(std::move(p)) {}
  Folder(Folder&&) = default;
  ~Folder() {
    if (fd.ok() && mode_before >= 0) ::fchmod(fd.get(), static_cast<mode_t>(mode_before));
  }
};

// A root's manifest nodes by their path below it, and each folder's entries.
struct Tree {
  std::map<std::string, const json*> nodes;
  std::map<std::string, std::vector<std::string>> children;
};

std::string child_rel(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

struct Restorer {
  fs::path snapshot;
  fs::path workspace;
  int workspace_fd;  // held open by restore_snapshot for the whole restore
  std::vector<std::string> problems;
  std::vector<fs::path> leave;  // roots left as they are

  void problem(std::string text) { problems.push_back(std::move(text)); }

  // The names from the workspace down to `path` (none for the workspace
  // itself), or nullopt when `path` is not inside it.
  std::optional<std::vector<std::string>> below_workspace(const fs::path& path) const {
    if (!path.is_absolute() || !in_folder(path, workspace)) return std::nullopt;
    std::vector<std::string> names;
    for (const fs::path& part : path.lexically_relative(workspace)) {
      if (part == "..") return std::nullopt;  // openat would take it up and out
      if (!part.empty() && part != ".") names.push_back(part.string());
    }
    return names;
  }

  // Lets orch add and remove entries in `folder` (one an attempt made
  // read-only); the mode comes back when `folder` goes.
  static void open_up(Folder& folder) {
    struct stat st {};
    if (::fstat(folder.fd.get(), &st) != 0) return;
    const mode_t mode = st.st_mode & 07777;
    if ((mode & S_IRWXU) == S_IRWXU || geteuid() == 0) return;
    if (::fchmod(folder.fd.get(), mode | S_IRWXU) == 0 && folder.mode_before < 0)
      folder.mode_before = static_cast<int>(mode);
  }

  // Opens the folder `name` in `parent`, never through a symlink: if one (or a
  // file) was put there meanwhile, the open fails and that is reported. A
  // folder orch's user owns but may not read is opened up to be read.
  Folder open_folder(int parent, const std::string& name, fs::path path) {
    Fd fd(::openat(parent, name.c_str(), kOpenFolder));
    int error = errno;
    Folder folder(std::move(fd), std::move(path));
    struct stat st {};
    if (!folder.fd.ok() && error == EACCES &&
        ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == geteuid() &&
        chmod_at_nofollow(parent, name.c_str(), (st.st_mode & 07777) | S_IRWXU) == 0) {
      folder.fd = Fd(::openat(parent, name.c_str(), kOpenFolder));
      error = errno;
      if (folder.fd.ok())
        folder.mode_before = static_cast<int>(st.st_mode & 07777);
      else
        chmod_at_nofollow(parent, name.c_str(), st.st_mode & 07777);
    }
    if (!folder.fd.ok()) {
      errno = error;
      problem(error == ELOOP || error == ENOTDIR
                  ? fmt::format("{} is no folder any more (replaced during the restore): left as it is",
                                folder.path.string())
                  : os_error(folder.path, "open the folder"));
    }
    return folder;
  }

  // The names in `folder` ("." and ".." aside), read through a copy of its
  // descriptor (closedir closes the one it is given).
  std::optional<std::vector<std::string>> list(const Folder& folder) {
    const int copy = ::fcntl(folder.fd.get(), F_DUPFD_CLOEXEC, 0);
    DIR* dir = copy < 0 ? nullptr : ::fdopendir(copy);
    if (dir == nullptr) {
      problem(os_error(folder.path, "list"));
      if (copy >= 0) ::close(copy);
      return std::nullopt;
    }
    ::rewinddir(dir);  // the copy shares its position with `folder`, which may have been listed before
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* e = ::readdir(dir)) {
      const std::string_view name = e->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    const int error = errno;
    ::closedir(dir);
    if (error != 0) {
      errno = error;
      problem(os_error(folder.path, "list"));
      return std::nullopt;
    }
    return names;
  }

  // Removes `name` from `parent`, a folder with all it holds; never follows a
  // symlink (removes the link).
  bool remove(int parent, const std::string& name, const fs::path& path) {
    struct stat st {};
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) return true;
      problem(os_error(path, "remove"));
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      Folder folder = open_folder(parent, name, path);
      if (!folder.fd.ok()) return false;
      open_up(folder);
      const auto names = list(folder);
      if (!names) return false;
      bool emptied = true;
      for (const std::string& n : *names) emptied = remove(folder.fd.get(), n, path / n) && emptied;
      if (!emptied) return false;
    }
    if (::unlinkat(parent, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT) {
      problem(os_error(path, "remove"));
      return false;
    }
    return true;
  }

  // Makes `name` in `parent` a real folder: what the attempt put in its place
  // (a symlink, which a restore must never follow, or a file) goes.
  bool real_folder(int parent, const std::string& name, const fs::path& path) {
    struct stat st {};
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISDIR(st.st_mode)) return true;
      if (!remove(parent, name, path)) return false;
    } else if (errno != ENOENT) {
      problem(os_error(path, "read"));
      return false;
    }
    if (::mkdirat(parent, name.c_str(), 0755) != 0 && errno != EEXIST) {
      problem(os_error(path, "make the folder"));
      return false;
    }
    return true;
  }

  // Opens every folder from the workspace (chain[0]) down to the one that
  // holds the last of `names`, each made a real folder on the way.
  bool walk_down(const std::vector<std::string>& names, std::vector<Folder>& chain) {
    for (std::size_t i = 0; i + 1 < names.size(); ++i) {
      const int parent = chain.back().fd.get();
      fs::path path = chain.back().path / names[i];
      if (!real_folder(parent, names[i], path)) return false;
      Folder next = open_folder(parent, names[i], std::move(path));
      if (!next.fd.ok()) return false;
      chain.push_back(std::move(next));
    }
    return true;
  }

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

// Whether the regular file `path` holds exactly what `saved` does.
bool same_content(const fs::path& path, const fs::path& saved) {
  Fd a(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  Fd b(::open(saved.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat sa {
  }, sb{};
  if (!a.ok() || !b.ok() || ::fstat(a.get(), &sa) != 0 || ::fstat(b.get(), &sb) != 0 ||
      !S_ISREG(sa.st_mode) || sa.st_size != sb.st_size)
    return false;
  std::vector<char> x(1 << 16), y(1 << 16);
  for (;;) {
    const ssize_t n = ::read(a.get(), x.data(), x.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 && ::read(b.get(), y.data(), 1) == 0;
    for (ssize_t got = 0; got < n;) {
      const ssize_t m = ::read(b.get(), y.data() + got, static_cast<std::size_t>(n - got));
      if (m < 0 && errno == EINTR) continue;
      if (m <= 0) return false;
      got += m;
    }
    if (std::memcmp(x.data(), y.data(), static_cast<std::size_t>(n)) != 0) return false;
  }
}

std::string type_of(mode_t mode) {
  return S_ISREG(mode)    ? "file"
         : S_ISDIR(mode)  ? "dir"
         : S_ISLNK(mode)  ? "symlink"
         : S_ISFIFO(mode) ? "fifo"
                          : "other";
}

}  // namespace

Expected<std::vector<SnapshotChange>> snapshot_changes(const fs::path& snapshot_dir) {
  std::ifstream in(snapshot_dir / kManifest, std::ios::binary);
  if (!in) return fail(ErrorCode::NotFound, fmt::format("{}: no complete snapshot", snapshot_dir.string()));
  const json manifest = json::parse(in, nullptr, false);
  if (!manifest.is_object() || !manifest.contains("roots") || !manifest["roots"].is_array())
    return fail(ErrorCode::Io,
                fmt::format("{}: snapshot manifest is corrupt or of an older orch", snapshot_dir.string()));
  std::vector<SnapshotChange> changes;
  auto now = [&](const fs::path& path, const char* saved_type, const json* node) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      if (saved_type != nullptr) changes.push_back({path, false, 0});
      return;
    }
    const std::int64_t mtime_ms =
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    bool same = saved_type != nullptr && type_of(st.st_mode) == saved_type;
    if (same && node != nullptr && S_ISREG(st.st_mode) && node->contains("saved"))
      same = same_content(path, snapshot_dir / "files" / node->value("saved", ""));
    if (!same) changes.push_back({path, true, mtime_ms});
  };
  try {
    for (const json& root : manifest["roots"]) {
      const fs::path path = field(root, "path");
      if (!root.value("existed", false)) {
        now(path, nullptr, nullptr);
        continue;
      }
      for (const json& node : root.value("nodes", json::array())) {
        const std::string rel = field(node, "rel");
        const std::string type = node.value("type", "");
        now(rel.empty() ? path : path / rel, type.c_str(), node.contains("link_to") ? nullptr : &node);
      }
    }
  } catch (const json::exception& e) {
    return fail(ErrorCode::Io,
                fmt::format("{}: snapshot manifest is corrupt ({})", snapshot_dir.string(), e.what()));
  }
  return changes;
}

Expected<void> take_snapshot(const std::vector<fs::path>& paths, const fs::path& snapshot_dir,
                             const fs::path& workspace) {
  std::error_code ec;
  fs::remove_all(snapshot_dir, ec);
  fs::create_directories(snapshot_dir / "files", ec);
  if (ec)
    return fail(ErrorCode::Io,
                fmt::format("{}: cannot create snapshot folder: {}", snapshot_dir.string(), ec.message()));
  const fs::path ws = fs::canonical(workspace, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("workspace {}: {}", workspace.string(), ec.message()));
  Taker taker{snapshot_dir / "files", 0, {}};
  json roots = json::array();
  for (const fs::path& p : paths) {
    json root = {{"path", hex(p.string())}};
    struct stat st {};
    const bool existed = ::lstat(p.c_str(), &st) == 0;
    if (!existed && errno != ENOENT) return fail(ErrorCode::Io, os_error(p, "read"));
    root["existed"] = existed;
    if (existed) {
      json nodes = json::array();
      ORCH_TRY(taker.walk(p, "", nodes));
      root["nodes"] = std::move(nodes);
    } else {
      fs::path above = p.parent_path();
      while (above != ws && in_folder(above, ws) && !fs::exists(fs::symlink_status(above, ec)))
        above = above.parent_path();
      root["above"] = hex(above.string());
    }
    roots.push_back(std::move(root));
  }
  const json manifest = {{"version", 2}, {"workspace", hex(ws.string())}, {"roots", std::move(roots)}};
  // The manifest is written last and renamed into place: a snapshot without a
  // manifest is incomplete and restore() refuses it rather than deleting files.
  fs::path tmp = snapshot_dir / (std::string(kManifest) + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << json_text(manifest);
    if (!out) return fail(ErrorCode::Io, fmt::format("{}: cannot write snapshot manifest", tmp.string()));
  }
  fs::rename(tmp, snapshot_dir / kManifest, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("{}: {}", tmp.string(), ec.message()));
  return {};
}

Expected<void> mark_snapshot_put_back(const fs::path& snapshot_dir) {
  std::error_code ec;
  fs::rename(snapshot_dir / kManifest, snapshot_dir / kPutBack, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("{}: {}", snapshot_dir.string(), ec.message()));
  return {};
}

bool snapshot_put_back(const fs::path& snapshot_dir) {
  std::error_code ec;
  return fs::exists(snapshot_dir / kPutBack, ec);
}

Expected<void> restore_snapshot(const fs::path& snapshot_dir, const std::vector<fs::path>& leave) {
  std::ifstream in(snapshot_dir / kManifest, std::ios::binary);
  if (!in)
    return fail(ErrorCode::NotFound,
                fmt::format("{}: no complete snapshot to restore", snapshot_dir.string()));
  json manifest = json::parse(in, nullptr, false);
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
  Restorer r{snapshot_dir, workspace, workspace_fd.get(), {}, leave};
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
