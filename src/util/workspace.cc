// util/workspace.cc — resolve_in_workspace (include/orch/workspace.h).
//
// Resolution is done component by component rather than with
// std::filesystem::weakly_canonical, because weakly_canonical treats a dangling
// symlink as "does not exist" and keeps its name: ws/link -> /etc/new would look
// inside the workspace although writing to it creates /etc/new. Here every
// symlink that exists is followed, dangling or not, like the kernel would.
#include "orch/workspace.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <iterator>
#include <string>
#include <system_error>

namespace orch {

namespace fs = std::filesystem;

namespace {

// The kernel's limit (MAXSYMLINKS) on symlinks followed in one lookup.
constexpr int kMaxSymlinks = 40;

// Resolves an absolute path through every symlink that exists on it; components
// past the deepest existing one are appended, and "." and ".." applied, lexically.
Expected<fs::path> resolve_real(const fs::path& absolute, std::string_view shown) {
  std::deque<fs::path> pending(absolute.begin(), absolute.end());
  fs::path result = "/";
  int links_followed = 0;
  bool exists_so_far = true;
  while (!pending.empty()) {
    fs::path part = std::move(pending.front());
    pending.pop_front();
    if (part.empty() || part == "." || part == "/") continue;
    if (part == "..") {
      // `result` holds no symlinks, so its parent is the real parent.
      result = result.parent_path();
      continue;
    }
    fs::path candidate = result / part;
    if (exists_so_far) {
      std::error_code ec;
      fs::file_status status = fs::symlink_status(candidate, ec);
      if (status.type() == fs::file_type::symlink) {
        if (++links_followed > kMaxSymlinks) {
          return fail(ErrorCode::InvalidInput, fmt::format("path '{}': too many levels of symbolic links", shown));
        }
        fs::path target = fs::read_symlink(candidate, ec);
        if (ec) {
          return fail(ErrorCode::Io, fmt::format("path '{}': cannot read symlink {}: {}", shown, candidate.string(), ec.message()));
        }
        if (target.is_absolute()) result = "/";
        pending.insert(pending.begin(), target.begin(), target.end());
        continue;
      }
      // Nothing below a missing (or unreadable) entry can be a symlink.
      if (ec || status.type() == fs::file_type::not_found) exists_so_far = false;
    }
    result = std::move(candidate);
  }
  return result;
}

bool is_within(const fs::path& inner, const fs::path& outer) {
  auto [outer_end, inner_it] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  if (outer_end == outer.end()) return true;
  // "/abs/ws/" iterates with a trailing empty element; it matches anything.
  return std::next(outer_end) == outer.end() && outer_end->empty();
}

}  // namespace

Expected<fs::path> resolve_symlinks(const fs::path& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("path '{}': {}", path.string(), ec.message()));
  return resolve_real(absolute, path.string());
}

Expected<fs::path> resolve_in_workspace(const fs::path& workspace, std::string_view path) {
  if (path.empty()) return fail(ErrorCode::InvalidInput, "empty path: a workspace path must name a file or folder");
  if (workspace.empty()) return fail(ErrorCode::InvalidInput, fmt::format("path '{}': no workspace given", path));
  std::error_code ec;
  fs::path ws_abs = fs::absolute(workspace, ec);
  if (ec) return fail(ErrorCode::Io, fmt::format("workspace {}: {}", workspace.string(), ec.message()));
  fs::path ws = ORCH_TRY(resolve_real(ws_abs, workspace.string()));

  fs::path given(path);
  fs::path joined = given.is_absolute() ? given : ws / given;
  fs::path resolved = ORCH_TRY(resolve_real(joined, path));
  if (is_within(resolved, ws)) return resolved;
  // Say whether the path itself points outside or a symlink on it does.
  fs::path lexical = joined.lexically_normal();
  if (is_within(lexical, ws) || is_within(lexical, ws_abs.lexically_normal())) {
    return fail(ErrorCode::InvalidInput, fmt::format("path '{}' resolves to '{}', outside the workspace {}", path,
                                                     resolved.string(), ws.string()));
  }
  return fail(ErrorCode::InvalidInput, fmt::format("path '{}' escapes the workspace {}", path, ws.string()));
}

}  // namespace orch
