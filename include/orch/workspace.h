// orch/workspace.h — keeping paths inside the workspace.
//
// Every path a plan names (postconditions, writes, output) is relative to the
// workspace and must stay inside it after `..` and symlinks are resolved. Paths
// that do not exist yet are resolved through their deepest existing parent.
#pragma once

#include <filesystem>
#include <string_view>

#include "orch/error.h"

namespace orch {

// Resolves `path` (relative to `workspace`, or absolute) to an absolute canonical
// path inside `workspace`. Fails (InvalidInput) naming the path when it escapes.
Expected<std::filesystem::path> resolve_in_workspace(const std::filesystem::path& workspace,
                                                     std::string_view path);

// `path` made absolute, with every symlink on it that exists followed (dangling
// ones too, as the kernel would when creating the file), and "." and ".."
// applied: the file an open of `path` would reach. Fails (InvalidInput) on a
// symlink loop, naming `path`.
Expected<std::filesystem::path> resolve_symlinks(const std::filesystem::path& path);

}  // namespace orch
