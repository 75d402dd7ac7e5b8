#include "memory/memory_paths.h"

namespace orch::memory {

namespace fs = std::filesystem;

MemoryPaths memory_paths(const fs::path& workspace) {
  MemoryPaths p;
  p.workspace = workspace;
  p.root = workspace / ".orch" / "memory";
  p.notes = p.root / "notes";
  p.lessons = p.root / "lessons";
  p.skills = p.root / "skills";
  p.traces = workspace / ".orch" / "traces";
  p.db = p.root / "memory.db";
  p.fault_ledger = p.root / "FAULT_LEDGER.md";
  return p;
}

std::string workspace_relative(const MemoryPaths& paths, const fs::path& file) {
  const fs::path relative = file.lexically_relative(paths.workspace);
  if (relative.empty() || *relative.begin() == "..") return file.generic_string();
  return relative.generic_string();
}

}  // namespace orch::memory
