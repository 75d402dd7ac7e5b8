#include "memory/lessons.h"

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "memory/memory_db.h"
#include "orch/clock.h"
#include "sqlite/sqlite_statement.h"
#include "util/atomic_file.h"
#include "util/iso_time.h"
#include "util/json_text.h"

namespace orch::memory {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxTraceIdBytes = 200;

bool valid_result(std::string_view result) {
  return result == "pass" || result == "fail" || result == "escalated" || result == "abandoned";
}

// `text` on one line: newlines and tabs become spaces.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return out;
}

std::string headline(std::string_view request) {
  std::string line = one_line(request);
  if (line.size() > 120) line = line.substr(0, 117) + "...";
  return line.empty() ? "(no request)" : line;
}

std::string yaml_string(std::string_view s) {
  return json_text(nlohmann::json(std::string(s)));
}

}  // namespace

Expected<void> check_trace_id(std::string_view id) {
  bool ok = !id.empty() && id.size() <= kMaxTraceIdBytes && id.front() != '.';
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.')) ok = false;
  if (!ok)
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("trace id '{}' cannot name a lesson file: use 1 to {} letters, digits, '-', '_' or '.', "
                    "not starting with '.'",
                    id.substr(0, 80), kMaxTraceIdBytes));
  return {};
}

std::string lesson_body(const LessonInput& l) {
  std::string out = fmt::format("# Lesson: {}\n\n- Request: {}\n- Intent: {}\n- Result: {}\n- Trace: {}\n",
                                headline(l.request), one_line(l.request),
                                l.intent.empty() ? "(none)" : l.intent, l.result, l.trace_id);
  out += "\n## What VERIFY failed on\n\n";
  if (l.verify_failures.empty()) out += "No VERIFY item failed.\n";
  for (const auto& item : l.verify_failures) out += fmt::format("- {}\n", one_line(item));
  out += fmt::format("\n## What fixed it\n\n{}\n", l.fix.empty() ? "Not recorded." : l.fix);
  out += fmt::format("\n## Summary\n\n{}\n", l.summary.empty() ? "None." : l.summary);
  return out;
}

std::string lesson_index_body(std::string_view body) {
  static constexpr std::string_view kDropped[] = {
      "## What VERIFY failed on", "## What fixed it", "## Summary",
      "No VERIFY item failed.",   "Not recorded.",    "None."};
  // Intent, result and trace are the document's tags and id; the title is its own column.
  static constexpr std::string_view kDroppedPrefixes[] = {
      "# Lesson: ", "- Intent: ", "- Result: ", "- Trace: "};
  std::string out;
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t end = body.find('\n', start);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    bool drop = line.empty();
    for (std::string_view d : kDropped) drop = drop || line == d;
    for (std::string_view p : kDroppedPrefixes) drop = drop || line.starts_with(p);
    if (drop) continue;
    if (line.starts_with("- Request: ")) line.remove_prefix(11);
    out.append(line);
    out.push_back('\n');
  }
  return out;
}

std::string lesson_markdown(const LessonInput& l) {
  nlohmann::json tags = nlohmann::json::array({"lesson"});
  if (!l.intent.empty()) tags.push_back(l.intent);
  tags.push_back(l.result);
  return fmt::format("---\ntitle: {}\ntrace: {}\nintent: {}\nresult: {}\ntags: {}\nclosed_at: {}\n---\n{}",
                     yaml_string("Lesson: " + headline(l.request)), yaml_string(l.trace_id),
                     yaml_string(l.intent), yaml_string(l.result), json_text(tags),
                     yaml_string(iso8601_utc(l.closed_at_ms, TimePrecision::Seconds)), lesson_body(l));
}

Expected<fs::path> harvest_lesson(const MemoryPaths& paths, const LessonInput& lesson) {
  ORCH_TRY(check_lesson(lesson));  // before the database is made
  auto db = ORCH_TRY(open_memory_db(paths));
  return harvest_lesson(db, paths, lesson);
}

Expected<void> check_lesson(const LessonInput& lesson) {
  ORCH_TRY(check_trace_id(lesson.trace_id));
  if (!valid_result(lesson.result))
    return fail(ErrorCode::InvalidInput,
                fmt::format("lesson for trace '{}': result '{}' is not pass, fail, escalated or abandoned",
                            lesson.trace_id, lesson.result));
  return {};
}

Expected<fs::path> harvest_lesson(SqliteDb& db, const MemoryPaths& paths, const LessonInput& input) {
  ORCH_TRY(check_lesson(input));
  const std::int64_t now = Clock::system().wall_ms();
  LessonInput lesson = input;
  if (lesson.closed_at_ms == 0) lesson.closed_at_ms = now;

  std::error_code ec;
  fs::create_directories(paths.lessons, ec);
  if (ec)
    return fail(ErrorCode::Io,
                fmt::format("{}: cannot create the folder: {}", paths.lessons.string(), ec.message()));
  const fs::path note = paths.lessons / (lesson.trace_id + ".md");
  ORCH_TRY(write_file_atomically(note, lesson_markdown(lesson)));

  auto record = [&]() -> Expected<void> {
    auto upsert = ORCH_TRY(Statement::prepare(db, R"sql(
      INSERT INTO lessons (trace_id, request, intent, result, verify_failures, fix, summary, note_path,
                           closed_at, created_at, updated_at)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
      ON CONFLICT (trace_id) DO UPDATE SET
        request = excluded.request, intent = excluded.intent, result = excluded.result,
        verify_failures = excluded.verify_failures, fix = excluded.fix, summary = excluded.summary,
        note_path = excluded.note_path, closed_at = excluded.closed_at, updated_at = excluded.updated_at)sql"));
    const std::string failures = json_text(nlohmann::json(lesson.verify_failures));
    const std::string note_path = workspace_relative(paths, note);
    upsert.bind_text(1, lesson.trace_id);
    upsert.bind_text(2, lesson.request);
    upsert.bind_text(3, lesson.intent);
    upsert.bind_text(4, lesson.result);
    upsert.bind_text(5, failures);
    upsert.bind_text(6, lesson.fix);
    upsert.bind_text(7, lesson.summary);
    upsert.bind_text(8, note_path);
    upsert.bind_int(9, lesson.closed_at_ms);
    upsert.bind_int(10, now);
    ORCH_TRY(upsert.run([&] { return fmt::format("recording the lesson of trace '{}'", lesson.trace_id); }));
    // The index's signature includes this counter, so the next reindex sees the change.
    return db.exec(
        "INSERT INTO meta (key, value) VALUES ('lessons_generation', '1') "
        "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        "counting lesson writes");
  };
  ORCH_TRY(in_write_transaction(db, "recording a lesson", record));
  return note;
}

Expected<bool> has_lesson(SqliteDb& db, std::string_view trace_id) {
  auto query = ORCH_TRY(Statement::prepare(db, "SELECT 1 FROM lessons WHERE trace_id = ?1"));
  ResetOnExit reset(query);
  query.bind_text(1, trace_id);
  return query.step([&] { return fmt::format("looking up the lesson of trace '{}'", trace_id); });
}

Expected<std::vector<StoredLesson>> read_lessons(SqliteDb& db) {
  auto query = ORCH_TRY(Statement::prepare(db, R"sql(
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

}  // namespace orch::memory
