#include "memory/lessons.h"

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "memory/memory_store.h"
#include "orch/clock.h"
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
  auto store = ORCH_TRY(open_memory_store(paths));
  return harvest_lesson(store->lessons(), paths, lesson);
}

Expected<void> check_lesson(const LessonInput& lesson) {
  ORCH_TRY(check_trace_id(lesson.trace_id));
  if (!valid_result(lesson.result))
    return fail(ErrorCode::InvalidInput,
                fmt::format("lesson for trace '{}': result '{}' is not pass, fail, escalated or abandoned",
                            lesson.trace_id, lesson.result));
  return {};
}

Expected<fs::path> harvest_lesson(LessonStore& store, const MemoryPaths& paths, const LessonInput& input) {
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
  ORCH_TRY(store.put_lesson(lesson, workspace_relative(paths, note), now));
  return note;
}

}  // namespace orch::memory
