// engine/snapshot.h — saving and restoring a step's `writes:` files.
//
// Before each attempt of a step that declares `writes:`, the listed workspace
// paths (files or folders) are saved into a snapshot folder under the store: each
// file's content (holes kept: a sparse file stays sparse), and for every entry
// its type, mode, owner, modification time and inode, in a manifest. When the
// attempt fails its checks or is interrupted, restore() puts the paths back:
//   - a file changed in place gets its old content in place, so other hard links
//     to it see the old content too; one that was replaced or removed is made
//     again; files and folders the attempt created are removed, and so are
//     folders it created to hold a new file;
//   - modes, owners (when orch may set them) and modification times are put back,
//     folders' after their contents;
//   - a folder that is still a folder is kept (a shell sitting in it stays in it),
//     its entries brought back in line;
//   - symlinks and FIFOs are made again; sockets and devices are left as found.
// It never follows a symlink the attempt may have planted, not even one a
// process left over from the attempt swaps in while the restore runs: it opens
// the workspace once and goes down one folder at a time on open descriptors
// (O_NOFOLLOW), doing everything relative to the folder it holds. A folder the
// attempt replaced with a symlink or a file is made a folder again; one swapped
// meanwhile makes that open fail, which is reported. Folders the attempt made
// read-only or unreadable are opened up for the restore and get their modes
// back. A restore that cannot put an entry back goes on with the others and
// reports every failure at the end.
//
// The snapshot folder is recorded in the attempt row before the attempt starts,
// so a resume after kill -9 can restore what the dead process left half-done.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "orch/error.h"

namespace orch {

// Saves `paths` (already resolved inside `workspace`) into `snapshot_dir`.
Expected<void> take_snapshot(const std::vector<std::filesystem::path>& paths,
                             const std::filesystem::path& snapshot_dir,
                             const std::filesystem::path& workspace);

// Puts every path of the snapshot back as it was. A missing or incomplete
// snapshot is an error and nothing is changed; otherwise every entry is tried,
// and the error (if any) lists each one that could not be put back. `leave`:
// paths saved (as the snapshot names them: SnapshotChange::path) to leave as
// they are now.
Expected<void> restore_snapshot(const std::filesystem::path& snapshot_dir,
                                const std::vector<std::filesystem::path>& leave = {});

// Says of a snapshot that it was put back outside the engine (the review
// runtime's --keep-edits restores a killed fix's files itself): its manifest is
// renamed, so the resume that closes the attempt has nothing left to restore and
// records it restored, where a snapshot that is simply gone is a failure.
Expected<void> mark_snapshot_put_back(const std::filesystem::path& snapshot_dir);
bool snapshot_put_back(const std::filesystem::path& snapshot_dir);

// A path of a snapshot that is not now what the snapshot saved.
struct SnapshotChange {
  std::filesystem::path path;  // absolute, as the snapshot names it
  bool exists = false;         // false: it is gone
  std::int64_t mtime_ms = 0;   // its modification time now (0 when gone)
};

// What differs now from the snapshot, without changing anything: each saved path
// (a root of `writes:` or an entry of a saved folder) that is gone, of another
// type, or — a file — of other content, and each root that did not exist and
// does now. What a saved folder gained is not listed. A missing or incomplete
// snapshot, or one an older orch wrote (manifest version 1), is an error.
Expected<std::vector<SnapshotChange>> snapshot_changes(const std::filesystem::path& snapshot_dir);

}  // namespace orch
