#include "memory/trace_facts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "util/iso_time.h"
#include "util/read_file.h"

namespace orch::memory {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxTraceBytes = std::size_t{8} << 20;

Expected<std::string> trace_text_field(const json& doc, const char* key, bool required) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) {
    if (required) return fail(ErrorCode::InvalidInput, fmt::format("trace: field '{}' is missing", key));
    return std::string();
  }
  if (!it->is_string())
    return fail(ErrorCode::InvalidInput, fmt::format("trace: field '{}' is not text", key));
  return it->get<std::string>();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool item_failed(const json& item) {
  for (const char* key : {"status", "result", "verdict"}) {
    const auto it = item.find(key);
    if (it != item.end() && it->is_string()) {
      const std::string s = lower(it->get<std::string>());
      if (s == "failed" || s == "fail" || s == "refuted" || s == "error") return true;
    }
  }
  for (const char* key : {"passed", "pass", "ok"}) {
    const auto it = item.find(key);
    if (it != item.end() && it->is_boolean() && !it->get<bool>()) return true;
  }
  return false;
}

std::string item_label(const json& item) {
  for (const char* key : {"check", "item", "name", "text"}) {
    const auto it = item.find(key);
    if (it != item.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  }
  return {};
}

// Adds the failed items of `list` (items, or records holding items) to `out`, each once.
void collect_failures(const json& list, std::vector<std::string>& out) {
  if (!list.is_array()) return;
  for (const auto& entry : list) {
    if (!entry.is_object()) continue;
    if (const auto items = entry.find("items"); items != entry.end()) {
      collect_failures(*items, out);
      continue;
    }
    if (!item_failed(entry)) continue;
    std::string label = item_label(entry);
    if (!label.empty() && std::find(out.begin(), out.end(), label) == out.end())
      out.push_back(std::move(label));
  }
}

bool any_fail_verdict(const json& doc) {
  const auto list = doc.find("verifications");
  if (list == doc.end() || !list->is_array()) return false;
  return std::any_of(list->begin(), list->end(), [](const json& v) {
    return v.is_object() && v.contains("verdict") && v["verdict"].is_string() &&
           lower(v["verdict"].get<std::string>()) == "fail";
  });
}

std::int64_t time_of(const json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_string()) return parse_iso8601_ms(value.get<std::string>()).value_or(0);
  return 0;
}

}  // namespace

Expected<TraceFacts> read_trace_facts(const json& doc) {
  if (!doc.is_object()) return fail(ErrorCode::InvalidInput, "trace: not a JSON object");
  TraceFacts f;
  LessonInput& l = f.lesson;
  l.trace_id = ORCH_TRY(trace_text_field(doc, "id", true));
  l.request = ORCH_TRY(trace_text_field(doc, "request", true));
  l.intent = ORCH_TRY(trace_text_field(doc, "intent", false));
  l.result = ORCH_TRY(trace_text_field(doc, "result", false));
  if (!l.result.empty() && l.result != "pass" && l.result != "fail" && l.result != "escalated" &&
      l.result != "abandoned")
    return fail(ErrorCode::InvalidInput,
                fmt::format("trace: result '{}' is not pass, fail, escalated, abandoned or null", l.result));
  f.project = ORCH_TRY(trace_text_field(doc, "project", false));
  f.complexity = ORCH_TRY(trace_text_field(doc, "complexity", false));
  f.strategy = ORCH_TRY(trace_text_field(doc, "strategy", false));
  f.state = ORCH_TRY(trace_text_field(doc, "state", false));
  l.summary = ORCH_TRY(trace_text_field(doc, "summary", false));
  l.fix = ORCH_TRY(trace_text_field(doc, "fix", false));

  std::string summarize_note, last_note, last_execute_note;
  std::int64_t last_t = 0;
  if (const auto transitions = doc.find("transitions"); transitions != doc.end()) {
    if (!transitions->is_array())
      return fail(ErrorCode::InvalidInput, "trace: field 'transitions' is not a list");
    for (const auto& t : *transitions) {
      if (!t.is_object()) return fail(ErrorCode::InvalidInput, "trace: a transition is not an object");
      const std::string state = ORCH_TRY(trace_text_field(t, "state", false));
      const std::string note = ORCH_TRY(trace_text_field(t, "note", false));
      if (const auto when = t.find("t"); when != t.end()) last_t = std::max(last_t, time_of(*when));
      if (note.empty()) continue;
      f.notes.push_back(note);
      last_note = note;
      if (state == "SUMMARIZE") summarize_note = note;
      if (state == "EXECUTE") last_execute_note = note;
    }
  }
  if (const auto v = doc.find("verifications"); v != doc.end()) collect_failures(*v, l.verify_failures);
  if (const auto v = doc.find("verify_results"); v != doc.end()) collect_failures(*v, l.verify_failures);
  if (l.fix.empty() && l.result == "pass" && any_fail_verdict(doc)) l.fix = last_execute_note;
  if (l.summary.empty()) l.summary = !summarize_note.empty() ? summarize_note : last_note;
  if (const auto closed = doc.find("closed_at"); closed != doc.end()) l.closed_at_ms = time_of(*closed);
  if (l.closed_at_ms == 0) l.closed_at_ms = last_t;
  return f;
}

Expected<TraceFacts> read_trace_file(const std::filesystem::path& file) {
  const std::string text = ORCH_TRY(read_file_text(file, kMaxTraceBytes));
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    std::string why = e.what();  // "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    if (const auto end = why.find("] "); why.starts_with("[json.exception") && end != std::string::npos)
      why = why.substr(end + 2);
    return fail(ErrorCode::InvalidInput, fmt::format("{}: not valid JSON: {}", file.string(), why));
  }
  auto facts = read_trace_facts(doc);
  if (!facts) return fail(facts.error().code, fmt::format("{}: {}", file.string(), facts.error().message));
  return facts;
}

Expected<LessonInput> lesson_from_trace(const json& doc) {
  TraceFacts facts = ORCH_TRY(read_trace_facts(doc));
  if (!facts.closed())
    return fail(ErrorCode::InvalidInput,
                fmt::format("trace '{}' is still open: no lesson yet", facts.lesson.trace_id));
  return std::move(facts.lesson);
}

}  // namespace orch::memory
