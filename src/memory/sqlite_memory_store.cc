#include "memory/sqlite_memory_store.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "memory/memory_db.h"
#include "sqlite/sqlite_statement.h"
#include "util/json_text.h"

namespace orch::memory {

Expected<std::unique_ptr<MemoryStore>> open_memory_store(const MemoryPaths& paths) {
  return ORCH_TRY(SqliteMemoryStore::open(paths));
}

Expected<std::unique_ptr<SqliteMemoryStore>> SqliteMemoryStore::open(const MemoryPaths& paths) {
  auto db = ORCH_TRY(open_memory_db(paths));
  return std::make_unique<SqliteMemoryStore>(std::move(db));
}

Expected<void> SqliteLessonStore::put_lesson(const LessonInput& lesson, std::string_view note_path,
                                             std::int64_t now_ms) {
  auto record = [&]() -> Expected<void> {
    auto upsert = ORCH_TRY(Statement::prepare(db_, R"sql(
      INSERT INTO lessons (trace_id, request, intent, result, verify_failures, fix, summary, note_path,
                           closed_at, created_at, updated_at)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
      ON CONFLICT (trace_id) DO UPDATE SET
        request = excluded.request, intent = excluded.intent, result = excluded.result,
        verify_failures = excluded.verify_failures, fix = excluded.fix, summary = excluded.summary,
        note_path = excluded.note_path, closed_at = excluded.closed_at, updated_at = excluded.updated_at)sql"));
    const std::string failures = json_text(nlohmann::json(lesson.verify_failures));
    upsert.bind_text(1, lesson.trace_id);
    upsert.bind_text(2, lesson.request);
    upsert.bind_text(3, lesson.intent);
    upsert.bind_text(4, lesson.result);
    upsert.bind_text(5, failures);
    upsert.bind_text(6, lesson.fix);
    upsert.bind_text(7, lesson.summary);
    upsert.bind_text(8, note_path);
    upsert.bind_int(9, lesson.closed_at_ms);
    upsert.bind_int(10, now_ms);
    ORCH_TRY(upsert.run([&] { return fmt::format("recording the lesson of trace '{}'", lesson.trace_id); }));
    // The index's signature includes this counter, so the next reindex sees the change.
    return db_.exec(
        "INSERT INTO meta (key, value) VALUES ('lessons_generation', '1') "
        "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        "counting lesson writes");
  };
  return in_write_transaction(db_, "recording a lesson", record);
}

Expected<bool> SqliteLessonStore::has_lesson(std::string_view trace_id) {
  auto query = ORCH_TRY(Statement::prepare(db_, "SELECT 1 FROM lessons WHERE trace_id = ?1"));
  ResetOnExit reset(query);
  query.bind_text(1, trace_id);
  return query.step([&] { return fmt::format("looking up the lesson of trace '{}'", trace_id); });
}

Expected<std::vector<StoredLesson>> SqliteLessonStore::read_lessons() {
  auto query = ORCH_TRY(Statement::prepare(db_, R"sql(
    SELECT trace_id, request, intent, result, verify_failures, fix, summary, note_path, closed_at, created_at
    FROM lessons ORDER BY created_at, trace_id)sql"));
  ResetOnExit reset(query);
  std::vector<StoredLesson> out;
  while (ORCH_TRY(query.step([] { return "reading the lessons"; }))) {
    StoredLesson s;
    s.lesson.trace_id = query.column_text(0);
    s.lesson.request = query.column_text(1);
    s.lesson.intent = query.column_text(2);
    s.lesson.result = query.column_text(3);
    const auto failures = nlohmann::json::parse(query.column_text(4), nullptr, false);
    if (failures.is_array())
      for (const auto& f : failures)
        if (f.is_string()) s.lesson.verify_failures.push_back(f.get<std::string>());
    s.lesson.fix = query.column_text(5);
    s.lesson.summary = query.column_text(6);
    s.note_path = query.column_text(7);
    s.lesson.closed_at_ms = query.column_int(8);
    s.created_at_ms = query.column_int(9);
    out.push_back(std::move(s));
  }
  return out;
}

Expected<std::string> SqliteLessonStore::generation() {
  return read_meta(db_, "lessons_generation");
}

Expected<bool> SqliteFaultLedger::record(const FaultReport& report) {
  if (report.sightings.empty()) return false;
  return in_write_transaction(db_, "updating the fault ledger", [&]() -> Expected<bool> {
    auto sight = ORCH_TRY(Statement::prepare(
        db_, "INSERT OR IGNORE INTO fault_sightings (pattern, trace_id, seen_at) VALUES (?1, ?2, ?3)"));
    auto count = ORCH_TRY(Statement::prepare(db_, R"sql(
      INSERT INTO faults (pattern, description, count, first_seen, last_seen, last_trace_id, example)
      VALUES (?1, ?2, 1, ?3, ?3, ?4, ?5)
      ON CONFLICT (pattern) DO UPDATE SET
        count = count + 1,
        first_seen = min(first_seen, excluded.first_seen),
        last_trace_id = CASE WHEN excluded.last_seen >= last_seen THEN excluded.last_trace_id ELSE last_trace_id END,
        example = CASE WHEN excluded.last_seen >= last_seen THEN excluded.example ELSE example END,
        last_seen = max(last_seen, excluded.last_seen))sql"));
    bool changed = false;
    for (const auto& s : report.sightings) {
      auto describe = [&] {
        return fmt::format("recording fault '{}' of trace '{}'", s.pattern, report.trace_id);
      };
      sight.bind_text(1, s.pattern);
      sight.bind_text(2, report.trace_id);
      sight.bind_int(3, report.seen_at_ms);
      ORCH_TRY(sight.run(describe));
      if (db_.changes() == 0) continue;  // this trace was already counted for this pattern
      count.bind_text(1, s.pattern);
      count.bind_text(2, s.description);
      count.bind_int(3, report.seen_at_ms);
      count.bind_text(4, report.trace_id);
      count.bind_text(5, report.request);
      ORCH_TRY(count.run(describe));
      changed = true;
    }
    return changed;
  });
}

Expected<std::vector<Fault>> SqliteFaultLedger::read_faults() {
  auto query = ORCH_TRY(Statement::prepare(db_, R"sql(
    SELECT pattern, description, count, first_seen, last_seen, last_trace_id, example
    FROM faults ORDER BY count DESC, last_seen DESC, pattern)sql"));
  ResetOnExit reset(query);
  std::vector<Fault> out;
  while (ORCH_TRY(query.step([] { return "reading the fault ledger"; }))) {
    out.push_back(Fault{query.column_text(0), query.column_text(1), query.column_int(2), query.column_int(3),
                        query.column_int(4), query.column_text(5), query.column_text(6)});
  }
  return out;
}

}  // namespace orch::memory
