// What differs now from a snapshot, without changing anything. See snapshot.h;
// the folder's format is in snapshot_manifest.h.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "engine/snapshot.h"
#include "engine/snapshot_manifest.h"
#include "util/fd.h"

namespace orch {

namespace fs = std::filesystem;
using nlohmann::json;
using snapshot_detail::field;
using snapshot_detail::read_manifest;

namespace {

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
  const std::optional<json> read = read_manifest(snapshot_dir);
  if (!read) return fail(ErrorCode::NotFound, fmt::format("{}: no complete snapshot", snapshot_dir.string()));
  const json& manifest = *read;
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

}  // namespace orch
