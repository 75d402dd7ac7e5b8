// util/atomic_file.h — writing a file so that readers see the old or the new
// content, never a mix, and a crash never leaves it half-written.
//
// write_file_atomically writes `content` to a temporary file in the target's own
// folder (so the rename stays on one file system), fsyncs it, renames it over
// the target and fsyncs the folder, so the new name survives a crash too. The
// folder is created when missing. On failure the target is unchanged and the
// temporary file removed; the error names the path and the system's reason.
// Safe to call from several processes at once: the last rename wins, whole.
//
// With Durability::RenameOnly the fsyncs are skipped: readers still never see a
// half-written file, but after a power loss the file may hold its old content
// (or, on some file systems, be empty). For exports of what a durable store
// already holds (the traces orch rewrites from its ledger on every change).
#pragma once

#include <filesystem>
#include <string_view>

#include "orch/error.h"

namespace orch {

enum class Durability { Synced, RenameOnly };

Expected<void> write_file_atomically(const std::filesystem::path& path, std::string_view content,
                                     Durability durability = Durability::Synced);

// Like write_file_atomically, but only when `path` does not exist yet: the whole
// file gets the name (a hard link from the temporary file), or nothing happens
// and the answer is false. Of several processes creating one name at once,
// exactly one gets true. For claiming a name: a new trace's id in its workspace.
Expected<bool> create_file_atomically(const std::filesystem::path& path, std::string_view content,
                                      Durability durability = Durability::Synced);

}  // namespace orch
