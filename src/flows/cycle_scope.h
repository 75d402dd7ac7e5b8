// flows/cycle_scope.h — what a cycle's jobs wrote outside their own files,
// told by snapshotting the workspace, not by trusting the agents (seed 003:
// scope-violation).
//
// Before a cycle's work phase starts, take_scope_snapshot saves every regular
// file and symlink of the workspace (their content, mode and hash) into a
// snapshot folder, except what is ignored: orch's own folders (`.orch/`, and the
// snapshot folder itself), `.git/`, and the cycle's `scope.ignore` patterns
// (build outputs a gate writes: `.lake/**`, `*.o`). The snapshot is written
// into a temporary folder and renamed when complete, so a half-taken one (kill
// -9) is never read as a snapshot.
//
// After the phase, scope_changes lists every path created, modified (content,
// type or mode) or removed since; the caller leaves out the jobs' own files,
// and what is left are stray writes. revert_scope_changes puts each back as the
// snapshot has it (a created path removed, with folders it created that are
// now empty). Neither follows a symlink planted in the workspace.
//
// Which job wrote a stray path: the jobs whose worker attempts were running
// when it changed (its modification time, or its folder's for a removed path),
// with a little slack (50 ms) for coarse file-system clocks. When the time fits no job's window, or
// when jobs ran in parallel over it, every job that could have written it is
// named: a cycle never lets a stray write go unblamed because it cannot tell
// which of two jobs did it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "orch/error.h"

namespace orch::flows {

enum class ScopeChangeKind { Created, Modified, Removed };
const char* scope_change_kind_name(ScopeChangeKind kind);  // created, modified, removed

struct ScopeChange {
  std::string path;  // workspace-relative, '/'-separated
  ScopeChangeKind kind = ScopeChangeKind::Modified;
  std::int64_t mtime_ms = 0;  // when it changed: its modification time (its folder's when removed)
};

// Saves the workspace into `snapshot_dir` (which must not exist; its parent
// must), written as `<snapshot_dir>.tmp` and renamed when complete (a `.tmp`
// left by a killed take is removed). `ignore`: glob patterns over
// workspace-relative paths, read like .gitignore lines (fnmatch with
// FNM_PATHNAME for each `/`-separated part; `**` matches any number of
// folders; a pattern ending in `/` or `/**` ignores a folder and everything
// under it; one with no other `/` matches the name at any depth: `*.o`). The
// exact rules: IgnoreRules in cycle_scope_internal.h. Folders are not saved as
// entries, only their files and symlinks; their names and modes are kept so a
// revert can tell the folders a job made from those it found.
Expected<void> take_scope_snapshot(const std::filesystem::path& workspace,
                                   const std::vector<std::string>& ignore,
                                   const std::filesystem::path& snapshot_dir);

// Whether `snapshot_dir` holds a complete snapshot.
bool scope_snapshot_exists(const std::filesystem::path& snapshot_dir);

// Every change since the snapshot, sorted by path, with the same ignore
// patterns: a file or symlink created, modified (content, type or mode; a file
// rewritten with the same bytes is not modified) or removed. Folders are not
// listed: a new folder shows as the files created in it. mtime_ms of a removed
// path is its folder's (the nearest one left above it when that went too).
// NotFound when `snapshot_dir` holds no complete snapshot.
Expected<std::vector<ScopeChange>> scope_changes(const std::filesystem::path& workspace,
                                                 const std::filesystem::path& snapshot_dir);

// Puts `changes` back as the snapshot has them, whatever their kind says: a
// path the snapshot has gets its content (or target) and mode back, written
// to a temporary file in its folder and renamed over it (folders missing on
// the way are made again); one it does not have is removed, with the folders
// above it that the snapshot does not have once they are empty. Every change
// is tried; the error (if any) names each that could not be put back. A path
// the snapshot ignores is never touched (an error).
Expected<void> revert_scope_changes(const std::filesystem::path& workspace,
                                    const std::filesystem::path& snapshot_dir,
                                    const std::vector<ScopeChange>& changes);

// When a job's workers ran: from its first worker attempt's start to its last's
// end (milliseconds since the epoch).
struct JobWindow {
  std::string job;
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
};

// The jobs that may have written `change`: those whose window holds its time
// (give or take `slack_ms`); all of them when none does.
std::vector<std::string> jobs_for_change(const ScopeChange& change, const std::vector<JobWindow>& windows,
                                         std::int64_t slack_ms = 50);

}  // namespace orch::flows
