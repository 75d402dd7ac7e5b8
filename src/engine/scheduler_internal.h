// engine/scheduler_internal.h — small helpers the scheduler's files share and
// nothing else needs: scheduler.cc (the loop: settle, dispatch, commit, start),
// scheduler_start.cc (how an attempt starts), scheduler_settle.cc (how it
// ends), ready_set.cc and check_runner.cc. Not part of liborch's API.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <iterator>
#include <string>

namespace orch::detail {

// The output tail an attempt's row keeps (and the next attempt is told).
inline constexpr std::size_t kTailBytes = 2048;

// Whether `path` is `folder` or inside it (both absolute, normalised).
inline bool within(const std::filesystem::path& path, const std::filesystem::path& folder) {
  auto p = path.lexically_normal();
  auto f = folder.lexically_normal();
  auto [fi, pi] = std::mismatch(f.begin(), f.end(), p.begin(), p.end());
  if (fi == f.end()) return true;
  // "a/b/" normalises with an empty last element: a trailing separator still matches.
  return std::next(fi) == f.end() && fi->empty();
}

// The plan's path as the run records it: absolute, its folder's `.`, `..` and
// symlinks resolved as the kernel did to open it (`ws/../p.yaml` is
// `/abs/p.yaml`). The file's own name is kept: a plan named through a symlink
// keeps the link's folder as its folder (its relative paths), as the run had.
// (engine_setup.cc)
std::string stored_plan_path(const std::filesystem::path& path);

// The last `n` bytes of `s`.
inline std::string tail_of(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

}  // namespace orch::detail
