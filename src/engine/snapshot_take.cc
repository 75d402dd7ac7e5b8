// Taking a snapshot of a step's `writes:` before an attempt. See snapshot.h;
// the folder's format is in snapshot_manifest.h.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/snapshot.h"
#include "engine/snapshot_manifest.h"
#include "util/fd.h"
#include "util/json_text.h"

namespace orch {

namespace fs = std::filesystem;
using nlohmann::json;
using snapshot_detail::copy_content;
using snapshot_detail::hex;
using snapshot_detail::in_folder;
using snapshot_detail::kManifest;
using snapshot_detail::os_error;

namespace {

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

}  // namespace orch
