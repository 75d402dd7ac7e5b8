// engine/snapshot_manifest.h — the format of a snapshot folder, shared by
// taking (snapshot_take.cc), restoring (snapshot_restore.cc) and comparing
// (snapshot_diff.cc) one. Not part of liborch's API; see snapshot.h.
//
// The manifest (manifest.json, written last and renamed into place):
//   {"version": 2, "workspace": REAL_PATH, "roots": [ROOT...]}
//   ROOT: {"path": REAL_PATH, "existed": bool, "above": the nearest folder above it
//          that existed (when it did not), "nodes": [NODE...] (the root first, then
//          what a folder holds, each folder before its entries)}
//   NODE: {"rel": path below the root ("" the root), "type": file | dir | symlink |
//          fifo | other, "mode", "uid", "gid", "mtime_s", "mtime_ns", "dev", "ino",
//          file: "saved" (its content under files/) or "link_to" (the path of an
//          earlier node it is a hard link of); symlink: "target"}
// Every path, name and symlink target in it is hex: a file name is bytes, not
// text, and one that is not UTF-8 would be rewritten by the JSON writer (U+FFFD),
// so a restore would recreate it under another name and lose the original.
// A version 1 manifest (a bare array of {path, existed, saved}) is still restored
// the way it was written, for a resume of an attempt an older orch started.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "orch/error.h"

namespace orch::snapshot_detail {

inline constexpr const char* kManifest = "manifest.json";
// The manifest of a snapshot put back outside the engine (mark_snapshot_put_back).
inline constexpr const char* kPutBack = "put-back.json";

// Bytes as lowercase hex digits, and back ("" for text that is not hex).
std::string hex(std::string_view bytes);
std::string unhex(std::string_view text);

// A hex field of a manifest entry, as bytes ("" when absent).
std::string field(const nlohmann::json& entry, const char* name);

// The snapshot's manifest, parsed (a discarded value when it is not JSON), or
// nullopt when there is none: an incomplete snapshot (the manifest is written
// last), or one put back.
std::optional<nlohmann::json> read_manifest(const std::filesystem::path& snapshot_dir);

// "cannot WHAT PATH: strerror(errno)".
std::string os_error(const std::filesystem::path& path, const char* what);

// Whether `path` is `folder` or inside it (both absolute and normal).
bool in_folder(const std::filesystem::path& path, const std::filesystem::path& folder);

// Copies `size` bytes of `from` into `to` (open, empty or truncated), leaving
// the holes of a sparse file as holes. `shown`: the file, for messages.
Expected<void> copy_content(int from, int to, off_t size, const std::filesystem::path& shown);

}  // namespace orch::snapshot_detail
