// MemoryIndex::reindex: rebuilding the FTS table from the sources (index_sources.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "memory/index_sources.h"
#include "memory/memory_db.h"
#include "memory/memory_index.h"
#include "memory/sqlite_memory_store.h"
#include "sqlite/sqlite_statement.h"
#include "util/json_text.h"

namespace orch::memory {

namespace {

struct Build {
  std::vector<IndexDocument> documents;
  MemoryIndex::ReindexStats stats;
};

Expected<void> set_meta(SqliteDb& db, std::string_view key, std::string_view value) {
  auto write = ORCH_TRY(Statement::prepare(db,
                                           "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) "
                                           "DO UPDATE SET value = excluded.value"));
  write.bind_text(1, key);
  write.bind_text(2, value);
  return write.run([&] { return fmt::format("writing '{}' to meta", key); });
}

nlohmann::json stats_json(const MemoryIndex::ReindexStats& s) {
  return {{"notes", s.notes}, {"lessons", s.lessons}, {"traces", s.traces}, {"skipped", s.skipped}};
}

MemoryIndex::ReindexStats stats_from_json(const std::string& text) {
  MemoryIndex::ReindexStats s;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return s;
  s.notes = j.value("notes", 0);
  s.lessons = j.value("lessons", 0);
  s.traces = j.value("traces", 0);
  if (j.contains("skipped") && j["skipped"].is_array())
    for (const auto& line : j["skipped"])
      if (line.is_string()) s.skipped.push_back(line.get<std::string>());
  return s;
}

// Reads every source into documents; broken files become `skipped` lines.
Expected<Build> read_sources(LessonStore& lessons, const MemoryPaths& paths,
                             const std::vector<SourceFile>& sources, std::vector<std::string> problems) {
  Build build;
  build.stats.skipped = std::move(problems);
  std::set<std::string> lesson_ids;
  for (const auto& stored : ORCH_TRY(lessons.read_lessons())) {
    lesson_ids.insert(stored.lesson.trace_id);
    build.documents.push_back(lesson_document(stored));
    ++build.stats.lessons;
  }
  for (const auto& file : sources) {
    Expected<std::optional<IndexDocument>> document = std::nullopt;
    switch (file.kind) {
      case SourceKind::Note:
        document = note_document(paths, file);
        break;
      case SourceKind::LessonFile:
        if (lesson_ids.contains(file.path.stem().string())) continue;  // the row is the lesson
        document = lesson_file_document(paths, file);
        break;
      case SourceKind::Trace:
        document = trace_document(paths, file);
        break;
    }
    if (!document) {
      build.stats.skipped.push_back(document.error().message);
      continue;
    }
    if (!*document) continue;  // an open trace
    const std::string& kind = (*document)->kind;
    if (kind == "note") ++build.stats.notes;
    if (kind == "lesson") ++build.stats.lessons;
    if (kind == "trace") ++build.stats.traces;
    build.documents.push_back(std::move(**document));
  }
  return build;
}

}  // namespace

Expected<MemoryIndex::ReindexStats> MemoryIndex::reindex(bool force) {
  // The signature is taken before any source is read: a file that changes while
  // it is read changes the signature again, so the next reindex rebuilds.
  std::vector<std::string> problems;
  const std::vector<SourceFile> sources = list_sources(paths_, problems);
  LessonStore& lessons = store_->lessons();
  SqliteDb& db = store_->db();
  const std::string signature = sources_signature(sources, ORCH_TRY(lessons.generation()));
  if (!force && signature == ORCH_TRY(read_meta(db, "index_signature"))) {
    ReindexStats stats = stats_from_json(ORCH_TRY(read_meta(db, "index_stats")));
    stats.rebuilt = false;
    return stats;
  }
  Build build = ORCH_TRY(read_sources(lessons, paths_, sources, std::move(problems)));
  build.stats.rebuilt = true;
  auto rebuild = [&]() -> Expected<void> {
    ORCH_TRY(db.exec("DELETE FROM documents", "emptying the memory index"));
    auto insert = ORCH_TRY(Statement::prepare(db,
                                              "INSERT INTO documents (kind, id, title, body, tags, path, "
                                              "subject) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    for (const auto& d : build.documents) {
      insert.bind_text(1, d.kind);
      insert.bind_text(2, d.id);
      insert.bind_text(3, d.title);
      insert.bind_text(4, d.body);
      insert.bind_text(5, d.tags);
      insert.bind_text(6, d.path);
      insert.bind_text(7, d.subject);
      ORCH_TRY(insert.run([&] { return fmt::format("indexing {} '{}'", d.kind, d.id); }));
    }
    ORCH_TRY(set_meta(db, "index_signature", signature));
    return set_meta(db, "index_stats", json_text(stats_json(build.stats)));
  };
  ORCH_TRY(in_write_transaction(db, "rebuilding the memory index", rebuild));
  return build.stats;
}

}  // namespace orch::memory
