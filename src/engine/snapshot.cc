#include "engine/snapshot.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include "util/json_text.h"

namespace orch {

namespace fs = std::filesystem;

namespace {
constexpr const char* kManifest = "manifest.json";

Expected<void> copy_entry(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  auto status = fs::symlink_status(from, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("{}: {}", from.string(), ec.message()));
  if (fs::is_symlink(status)) {
    fs::copy_symlink(from, to, ec);
  } else if (fs::is_directory(status)) {
    fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  } else {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  }
  if (ec) return fail(ErrorCode::Io, fmt::format("cannot copy {} to {}: {}", from.string(), to.string(), ec.message()));
  return {};
}
}  // namespace

Expected<void> take_snapshot(const std::vector<fs::path>& paths, const fs::path& snapshot_dir) {
  std::error_code ec;
  fs::remove_all(snapshot_dir, ec);
  fs::create_directories(snapshot_dir / "files", ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("{}: cannot create snapshot folder: {}", snapshot_dir.string(), ec.message()));
  nlohmann::json manifest = nlohmann::json::array();
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const fs::path& p = paths[i];
    bool existed = fs::exists(fs::symlink_status(p, ec));
    std::string saved = std::to_string(i);
    if (existed) ORCH_TRY(copy_entry(p, snapshot_dir / "files" / saved));
    manifest.push_back({{"path", p.string()}, {"existed", existed}, {"saved", saved}});
  }
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
  if (!in) return fail(ErrorCode::NotFound, fmt::format("{}: no complete snapshot to restore", snapshot_dir.string()));
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_array())
    return fail(ErrorCode::Io, fmt::format("{}: snapshot manifest is corrupt", snapshot_dir.string()));
  for (const auto& entry : manifest) {
    fs::path p = entry.value("path", "");
    if (p.empty()) continue;
    std::error_code ec;
    fs::remove_all(p, ec);
    if (ec) return fail(ErrorCode::Io, fmt::format("cannot remove {} to restore it: {}", p.string(), ec.message()));
    if (entry.value("existed", false))
      ORCH_TRY(copy_entry(snapshot_dir / "files" / entry.value("saved", ""), p));
  }
  return {};
}

}  // namespace orch
