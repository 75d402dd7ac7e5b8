// engine/snapshot.h — saving and restoring a step's `writes:` files.
//
// Before each attempt of a step that declares `writes:`, the listed workspace
// paths (files or folders) are copied into a snapshot folder under the store,
// with a manifest saying which existed. When the attempt fails its checks or is
// interrupted, restore() puts the workspace back exactly: changed files get their
// old content, files the attempt created are removed. The snapshot folder is
// recorded in the attempt row before the attempt starts, so a resume after
// kill -9 can restore what the dead process left half-done.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "orch/error.h"

namespace orch {

// Saves `paths` (already resolved inside the workspace) into `snapshot_dir`.
Expected<void> take_snapshot(const std::vector<std::filesystem::path>& paths,
                             const std::filesystem::path& snapshot_dir);

// Puts every path of the snapshot back as it was. A missing snapshot folder is
// an error (nothing is changed).
Expected<void> restore_snapshot(const std::filesystem::path& snapshot_dir);

}  // namespace orch
