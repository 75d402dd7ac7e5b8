// memory/memory_paths.h — where a workspace keeps its memory (docs/memory.md).
//
//   <workspace>/.orch/memory/notes/**/*.md      knowledge notes, written by people
//   <workspace>/.orch/memory/lessons/<id>.md    one harvested lesson per closed trace
//   <workspace>/.orch/memory/skills/*.md        skills (also skills/<name>/SKILL.md)
//   <workspace>/.orch/memory/memory.db          lessons, fault ledger, full-text index
//   <workspace>/.orch/memory/FAULT_LEDGER.md    the fault ledger, for people
//   <workspace>/.orch/traces/<id>.json          traces, written by `orch task`
//
// Pure; thread-safe.
#pragma once

#include <filesystem>
#include <string>

namespace orch::memory {

struct MemoryPaths {
  std::filesystem::path workspace;
  std::filesystem::path root;  // .orch/memory
  std::filesystem::path notes;
  std::filesystem::path lessons;
  std::filesystem::path skills;
  std::filesystem::path traces;  // .orch/traces
  std::filesystem::path db;
  std::filesystem::path fault_ledger;  // FAULT_LEDGER.md
};

MemoryPaths memory_paths(const std::filesystem::path& workspace);

// `file` relative to the workspace ("/"-separated) when it is inside it, else as given.
// This is how paths are shown and stored in the index.
std::string workspace_relative(const MemoryPaths& paths, const std::filesystem::path& file);

}  // namespace orch::memory
