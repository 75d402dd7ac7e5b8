// memory/lessons.h — the lessons store: what a closed trace taught.
//
// The first step of the learning loop (docs/memory.md). harvest_lesson writes,
// for one closed trace:
//   1. the lesson's markdown note, .orch/memory/lessons/<trace-id>.md, atomically
//      (temporary file, fsync, rename), and then
//   2. its row in memory.db's `lessons` table (upserted: harvesting a trace again
//      rewrites its one lesson, never adds a second).
// The row comes last: it is what marks the trace as harvested, so a failure
// between the two leaves the trace to be harvested again by `orch memory harvest`.
//
// A trace id becomes a file name, so it must be 1 to 200 bytes of letters, digits,
// '-', '_' and '.', not starting with '.'; anything else is InvalidInput.
//
// The row goes to a LessonStore (memory_store.h): the workspace's, opened by
// the function itself, or one the caller has open (for batches). The workspace's
// memory may be used by several processes at once. Not thread-safe on one store.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "memory/memory_paths.h"
#include "orch/error.h"

namespace orch::memory {

class LessonStore;  // memory_store.h

struct LessonInput {
  std::string trace_id;
  std::string request;
  std::string intent;
  std::string result;  // pass | fail | escalated | abandoned
  std::string summary;
  std::string fix;                           // what fixed it, if anything did
  std::vector<std::string> verify_failures;  // the VERIFY checklist items that failed
  std::int64_t closed_at_ms = 0;             // 0: now
};

// A lesson as stored.
struct StoredLesson {
  LessonInput lesson;
  std::string note_path;  // relative to the workspace
  std::int64_t created_at_ms = 0;
};

Expected<void> check_trace_id(std::string_view id);
// check_trace_id, and a result that is pass, fail, escalated or abandoned (InvalidInput).
Expected<void> check_lesson(const LessonInput& lesson);

// The lesson note's markdown: YAML front matter (title, trace, intent, result,
// tags, closed_at) and the body (lesson_body).
std::string lesson_markdown(const LessonInput& lesson);
// The body alone: "# Lesson: <request>", the request, intent and result, then the
// sections "What VERIFY failed on", "What fixed it" and "Summary". This is what
// the index searches and what a context pack carries.
std::string lesson_body(const LessonInput& lesson);
// A lesson body as the index holds it: lesson_body's own words only, without its
// headings, labels and placeholders ("What fixed it", "Not recorded.", ...), which
// every lesson shares: indexed, they matched every request that says "fix" or
// "fail" to every lesson. Lines a person added to a lesson file are kept.
std::string lesson_index_body(std::string_view body);

// Writes the note and the row (see above); returns the note's path. The first
// opens the workspace's store (open_memory_store), after checking the lesson.
Expected<std::filesystem::path> harvest_lesson(const MemoryPaths& paths, const LessonInput& lesson);
Expected<std::filesystem::path> harvest_lesson(LessonStore& store, const MemoryPaths& paths,
                                               const LessonInput& lesson);

}  // namespace orch::memory
