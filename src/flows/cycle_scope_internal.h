// flows/cycle_scope_internal.h — what the parts of the scope snapshot share
// (cycle_scope.cc: taking and comparing; cycle_scope_walk.cc: walking the
// workspace; cycle_scope_ignore.cc: the ignore patterns; cycle_scope_revert.cc:
// putting changes back); not for other files. See cycle_scope.h.
//
// A snapshot folder holds:
//   files/N         the content of each saved regular file (N: 0, 1, ...)
//   manifest.json   {"version": 1, "workspace": HEX, "ignore": [PATTERN...],
//                    "folders": [{"path": HEX, "mode": N}...],
//                    "entries": [ENTRY...]}
//   ENTRY: {"path": HEX, "type": "file" | "symlink" | "other", "mode": N,
//           file: "size", "hash", "saved" (its name under files/);
//           symlink: "target": HEX}
// Paths and symlink targets are hex (engine/snapshot_manifest.h's hex()): a file
// name is bytes, and one that is not UTF-8 would be rewritten by the JSON writer,
// so a revert would make it again under another name. "folders" lists every
// folder the walk went into (the workspace itself aside): a revert removes the
// folders a job created (they are not listed) once they are empty, and makes a
// removed one again with its mode. "other" is a FIFO, socket or device: its
// type and mode are compared, but a revert cannot make it again.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch::flows::scope_detail {

inline constexpr int kScopeManifestVersion = 1;
inline constexpr const char* kScopeManifest = "manifest.json";
inline constexpr const char* kScopeFiles = "files";

enum class EntryType { File, Symlink, Other };
const char* entry_type_name(EntryType type);  // file, symlink, other

// A file, symlink or other non-folder the walk found.
struct ScopeEntry {
  std::string rel;  // workspace-relative, '/'-separated
  EntryType type = EntryType::File;
  mode_t mode = 0;            // permission bits (07777)
  std::int64_t size = 0;      // a file's, as hashed
  std::int64_t mtime_ms = 0;  // its own (a symlink's, not its target's)
  std::string hash;           // a file's content hash; "" when the walk was told not to hash it
  std::string target;         // a symlink's
  std::string saved;          // a file's copy under files/ (in a snapshot)
};

// The ignore patterns of a snapshot (cycle_scope_ignore.cc), with orch's own:
// `.git` (a folder, or the file a submodule or worktree has) and `.orch/` at any
// depth, and `own` (workspace-relative paths: the snapshot folder and its
// temporary one when they lie in the workspace).
//
// A pattern is matched like a .gitignore line, on workspace-relative paths:
//   - a trailing `/` or `/**` makes it match folders only (and so everything
//     under them: the walk does not go into an ignored folder);
//   - one with no other `/` matches the last name at any depth (`*.o`,
//     `docs/`); one with a `/` (a leading one is dropped) matches the whole
//     path from the workspace (`build/**`, `src/gen/*.c`);
//   - each `/`-separated part is matched with fnmatch (so `*`, `?` and `[...]`
//     never match a `/`, as FNM_PATHNAME has it, and match a leading `.`),
//     except `**`, which matches any number of folders, none included
//     (`**/gen`, `src/**/*.tmp`). fnmatch has no `**` of its own, hence the
//     split.
// A folder matched is ignored with all it holds. Empty patterns are dropped.
class IgnoreRules {
 public:
  IgnoreRules(const std::vector<std::string>& patterns, std::vector<std::string> own);
  bool ignored(std::string_view rel, bool folder) const;

 private:
  struct Pattern {
    std::vector<std::string> parts;  // anchored: the path's names; otherwise one, the last name's
    bool anchored = false;
    bool folders_only = false;
  };
  static bool parts_match(const std::vector<std::string>& parts, std::size_t p,
                          const std::vector<std::string_view>& names, std::size_t n);
  void add(std::string_view pattern);

  std::vector<Pattern> patterns_;
  std::vector<std::string> own_;
};

// What a walk of the workspace found: its files, symlinks and others by path,
// and its folders ("" the workspace itself) with their mode and mtime.
struct ScopeFolder {
  mode_t mode = 0;
  std::int64_t mtime_ms = 0;
};
struct WalkResult {
  std::map<std::string, ScopeEntry> entries;
  std::map<std::string, ScopeFolder> folders;
};

// Called for each regular file the walk finds, with the file open for reading
// (never through a symlink) and `entry` filled from that open file (rel, mode,
// size, mtime): it sets what else it needs (the hash, the saved copy).
using FileVisitor = std::function<Expected<void>(int fd, ScopeEntry& entry)>;

// Walks `workspace` (canonical) on open folder descriptors, never following a
// symlink, going into no ignored folder (cycle_scope_walk.cc). A path that
// disappears while the walk reads it is left out; anything else it cannot read
// is an error.
Expected<WalkResult> walk_scope(const std::filesystem::path& workspace, const IgnoreRules& rules,
                                const FileVisitor& on_file);

// The content hash of the open file `fd`, read from where it is to its end:
// 64-bit FNV-1a as 16 hex digits, the value engine's fingerprint_of gives the
// content (a change detector, as everywhere in orch: a job that wanted to hide
// a write could as well have written outside the workspace). Streamed, so a
// large file is never held in memory. With `copy_to` >= 0 each byte read is
// also written there. `size`: the bytes read. `shown`: the file, for messages.
Expected<std::string> hash_content(int fd, int copy_to, const std::filesystem::path& shown,
                                   std::int64_t& size);

// The snapshot's manifest, read back.
struct ScopeManifest {
  std::filesystem::path workspace;
  std::vector<std::string> ignore;
  std::map<std::string, ScopeEntry> entries;
  std::map<std::string, mode_t> folders;
};

// NotFound when `snapshot_dir` holds no complete snapshot; Io when its manifest
// is unreadable, corrupt or of another version.
Expected<ScopeManifest> read_scope_manifest(const std::filesystem::path& snapshot_dir);

// The ignore rules of a snapshot of `workspace` (canonical) in `snapshot_dir`.
IgnoreRules scope_rules(const std::filesystem::path& workspace, const std::filesystem::path& snapshot_dir,
                        const std::vector<std::string>& ignore);

// A path's names ("a/b" → a, b).
std::vector<std::string> split_rel(std::string_view rel);

// The modification time of `st` in milliseconds since the epoch.
std::int64_t stat_mtime_ms(const struct stat& st);

}  // namespace orch::flows::scope_detail
