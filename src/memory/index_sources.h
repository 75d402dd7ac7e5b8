// memory/index_sources.h — what the full-text index is built from.
//
// Three kinds of document (docs/memory.md, "The index"):
//   note    .orch/memory/notes/**/*.md (names starting with '.' are left out)
//   lesson  each row of the lessons table; and a lessons/<id>.md file with no row
//           (a memory.db that was lost and re-made) is read as its own lesson
//   trace   .orch/traces/*.json whose result is set (closed traces only)
// A file that cannot be read or parsed is skipped and reported as
// "<path relative to the workspace>: <why>".
//
// The signature of the sources — each file's path, size, modification time
// (ns) and inode, the lessons table's write counter and the index format — is
// what lets reindex() do nothing when nothing changed: a directory walk and a
// stat per file.
//
// Pure functions of the file system; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "memory/lessons.h"
#include "memory/memory_paths.h"
#include "orch/error.h"

namespace orch::memory {

enum class SourceKind { Note, LessonFile, Trace };

struct SourceFile {
  std::filesystem::path path;
  SourceKind kind = SourceKind::Note;
  std::uintmax_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t inode = 0;
};

// One row of the FTS table (memory_db.cc documents the columns).
struct IndexDocument {
  std::string kind;  // note | lesson | trace
  std::string id;
  std::string title;
  std::string body;
  std::string tags;
  std::string path;
  std::string subject;
};

// The source files, sorted by path. Folders that cannot be read are reported in `problems`.
std::vector<SourceFile> list_sources(const MemoryPaths& paths, std::vector<std::string>& problems);

// A hex hash of the sources and the lessons table's write counter.
std::string sources_signature(const std::vector<SourceFile>& sources, std::string_view lessons_generation);

// Errors read "<relative path>: <why>".
Expected<IndexDocument> note_document(const MemoryPaths& paths, const SourceFile& file);
Expected<IndexDocument> lesson_file_document(const MemoryPaths& paths, const SourceFile& file);
// nullopt for a trace that is still open.
Expected<std::optional<IndexDocument>> trace_document(const MemoryPaths& paths, const SourceFile& file);
IndexDocument lesson_document(const StoredLesson& stored);

}  // namespace orch::memory
