// memory/skills.h — which skills fit a request.
//
// A skill is a markdown file in .orch/memory/skills/: NAME.md, or NAME/SKILL.md,
// with front matter giving its `description` (what it is for, when to use it)
// and optionally `name` (default: the file's, or the folder's, name) and `tags`.
// A file without a description, or one that cannot be read, is not a skill and
// is left out.
//
// discover_skills ranks the skills against the request with BM25 over name
// (weight 3), description (2) and tags (1), using the index's tokenizer and query
// rules (an in-memory FTS5 table, so skills need no reindex): a skill must share
// at least one content word with the request. score = -bm25, higher is better.
//
// Thread-safe (each call has its own in-memory database).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memory/memory_paths.h"
#include "orch/error.h"

namespace orch::memory {

struct Skill {
  std::string name;
  std::string description;
  std::string path;  // relative to the workspace
  double score = 0;
};

Expected<std::vector<Skill>> discover_skills(const MemoryPaths& paths, std::string_view request, int limit);

}  // namespace orch::memory
