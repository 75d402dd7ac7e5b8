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
#include <set>

#include "util/fd.h"
#include "util/json_text.h"

namespace orch {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kManifest = "manifest.json";

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

struct Restorer {
  fs::path snapshot;
  fs::path workspace;
  std::vector<std::string> problems;

  void problem(std::string text) { problems.push_back(std::move(text)); }

  bool remove(const fs::path& path) {
    std::error_code ec;
    fs::remove_all(path, ec);  // never follows a symlink: removes the link
    if (ec && ec != std::errc::no_such_file_or_directory) {
      problem(fmt::format("cannot remove {}: {}", path.string(), ec.message()));
      return false;
    }
    return true;
  }

  // Lets orch add and remove entries in `folder` (a folder an attempt made
  // read-only); returns the mode to give back afterwards, or -1.
  static int open_up(const fs::path& folder) {
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return -1;
    const mode_t mode = st.st_mode & 07777;
    if ((mode & S_IRWXU) == S_IRWXU || geteuid() == 0) return -1;
    if (::chmod(folder.c_str(), mode | S_IRWXU) != 0) return -1;
    return static_cast<int>(mode);
  }

  // Makes `path` (inside the workspace) a real folder: what the attempt put in
  // its place (a symlink, which a restore must never follow, or a file) goes.
  bool real_folder(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) return true;
      if (!remove(path)) return false;
    } else if (errno != ENOENT) {
      problem(os_error(path, "read"));
      return false;
    }
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      problem(os_error(path, "make the folder"));
      return false;
    }
    return true;
  }

  // Every folder from the workspace down to `path`'s parent, real.
  bool real_parents(const fs::path& path) {
    const fs::path rel = path.parent_path().lexically_relative(workspace);
    if (rel.empty() || *rel.begin() == "..") {
      problem(fmt::format("{} is not inside the workspace {}", path.string(), workspace.string()));
      return false;
    }
    fs::path at = workspace;
    for (const fs::path& part : rel) {
      if (part == ".") continue;
      at /= part;
      if (!real_folder(at)) return false;
    }
    return true;
  }

  void metadata(const fs::path& path, const json& node, bool symlink) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;
    const auto uid = node.value("uid", static_cast<uid_t>(st.st_uid));
    const auto gid = node.value("gid", static_cast<gid_t>(st.st_gid));
    // Only root may give a file away: for anyone else the owner is theirs already.
    if ((st.st_uid != uid || st.st_gid != gid) &&
        ::fchownat(AT_FDCWD, path.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0 && errno != EPERM)
      problem(os_error(path, "give back the owner of"));
    if (!symlink && ::chmod(path.c_str(), node.value("mode", 0644u)) != 0)
      problem(os_error(path, "give back the mode of"));
    timespec times[2] = {{0, UTIME_OMIT},
                         {node.value("mtime_s", time_t{0}), node.value("mtime_ns", long{0})}};
    if (::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
      problem(os_error(path, "give back the modification time of"));
  }

  void file(const fs::path& path, const json& node, const struct stat* now) {
    if (node.contains("link_to")) {
      const fs::path target = field(node, "link_to");
      struct stat t {};
      if (now != nullptr && ::stat(target.c_str(), &t) == 0 && t.st_ino == now->st_ino &&
          t.st_dev == now->st_dev)
        return;  // still the same file
      if (now != nullptr && !remove(path)) return;
      if (::link(target.c_str(), path.c_str()) != 0) problem(os_error(path, "link again"));
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
      fd = ::open(path.c_str(), flags);
      // Made read-only by the attempt (or always so): opened for writing by its
      // owner for a moment, so that its other hard links still get the content;
      // its mode comes back with the rest of its metadata.
      if (fd < 0 && errno == EACCES && now->st_uid == geteuid() &&
          ::chmod(path.c_str(), (now->st_mode & 07777) | S_IWUSR) == 0)
        fd = ::open(path.c_str(), flags);
      struct stat opened {};
      if (fd >= 0 &&
          (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_ino != now->st_ino)) {
        ::close(fd);
        fd = -1;
      }
    }
    if (fd < 0) {
      if (now != nullptr && !remove(path)) return;
      fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    }
    Fd out(fd);
    if (!out.ok()) {
      problem(os_error(path, "write"));
      return;
    }
    if (auto copied = copy_content(in.get(), out.get(), kept.st_size, path); !copied)
      problem(copied.error().message);
  }

  void entry(const fs::path& path, const std::string& rel, const std::map<std::string, const json*>& nodes,
             const std::map<std::string, std::vector<std::string>>& children) {
    const json& node = *nodes.at(rel);
    const std::string type = node.value("type", "");
    struct stat st {};
    const bool exists = ::lstat(path.c_str(), &st) == 0;
    if (type == "dir") {
      if (exists && !S_ISDIR(st.st_mode) && !remove(path)) return;
      if (!exists || !S_ISDIR(st.st_mode)) {
        if (::mkdir(path.c_str(), 0700) != 0) {
          problem(os_error(path, "make the folder"));
          return;
        }
      }
      open_up(path);  // its own mode comes back with its metadata below
      auto kids = children.find(rel);
      std::set<std::string> keep;
      if (kids != children.end()) keep.insert(kids->second.begin(), kids->second.end());
      std::error_code ec;
      std::vector<fs::path> extra;
      for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
        if (!keep.contains(it->path().filename().string())) extra.push_back(it->path());
      if (ec) problem(fmt::format("cannot list {}: {}", path.string(), ec.message()));
      for (const fs::path& p : extra) remove(p);
      if (kids != children.end())
        for (const std::string& name : kids->second)
          entry(path / name, rel.empty() ? name : rel + "/" + name, nodes, children);
    } else if (type == "file") {
      file(path, node, exists ? &st : nullptr);
      if (node.contains("link_to")) return;  // the first link's metadata is the file's
    } else if (type == "symlink") {
      const std::string target = field(node, "target");
      std::error_code ec;
      const bool same = exists && S_ISLNK(st.st_mode) && fs::read_symlink(path, ec).string() == target;
      if (!same) {
        if (exists && !remove(path)) return;
        if (::symlink(target.c_str(), path.c_str()) != 0) {
          problem(os_error(path, "make the symlink"));
          return;
        }
      }
    } else if (type == "fifo") {
      if (!(exists && S_ISFIFO(st.st_mode))) {
        if (exists && !remove(path)) return;
        if (::mkfifo(path.c_str(), 0600) != 0) {
          problem(os_error(path, "make the FIFO"));
          return;
        }
      }
    } else {
      if (!exists) problem(fmt::format("{}: a socket or device cannot be made again", path.string()));
      return;
    }
    metadata(path, node, type == "symlink");
  }

  void root(const json& r) {
    const fs::path path = field(r, "path");
    if (path.empty() || !in_folder(path, workspace)) {
      problem(fmt::format("{} is not inside the workspace {}", path.string(), workspace.string()));
      return;
    }
    if (path != workspace && !real_parents(path)) return;
    const int parent_mode = path == workspace ? -1 : open_up(path.parent_path());
    if (!r.value("existed", false)) {
      remove(path);
      // The folders the attempt made to hold it go too, if nothing else is in them.
      const fs::path above = r.contains("above") ? fs::path(field(r, "above")) : workspace;
      for (fs::path d = path.parent_path(); d != above && d != workspace && in_folder(d, above);
           d = d.parent_path())
        if (::rmdir(d.c_str()) != 0) break;
    } else {
      std::map<std::string, const json*> nodes;
      std::map<std::string, std::vector<std::string>> children;
      static const json kNone = json::array();
      const auto list = r.find("nodes");
      for (const json& n : list != r.end() && list->is_array() ? *list : kNone) {
        const std::string rel = field(n, "rel");
        nodes[rel] = &n;
        if (rel.empty()) continue;
        const auto slash = rel.rfind('/');
        children[slash == std::string::npos ? "" : rel.substr(0, slash)].push_back(
            slash == std::string::npos ? rel : rel.substr(slash + 1));
      }
      if (!nodes.contains("")) {
        problem(fmt::format("{}: the snapshot holds nothing for it", path.string()));
      } else {
        entry(path, "", nodes, children);
      }
    }
    if (parent_mode >= 0) ::chmod(path.parent_path().c_str(), static_cast<mode_t>(parent_mode));
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

Expected<void> restore_snapshot(const fs::path& snapshot_dir) {
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
  Restorer r{snapshot_dir, unhex(manifest["workspace"].get<std::string>()), {}};
  struct stat st {};
  if (::lstat(r.workspace.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail(ErrorCode::Io, fmt::format("workspace {} is not a folder any more: nothing was restored",
                                           r.workspace.string()));
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
