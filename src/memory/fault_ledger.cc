#include "memory/fault_ledger.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

#include "memory/memory_db.h"
#include "orch/clock.h"
#include "sqlite/sqlite_statement.h"
#include "util/atomic_file.h"
#include "util/iso_time.h"

namespace orch::memory {

namespace {

constexpr std::size_t kMaxPatternBytes = 200;

// A cell of a markdown table: one line, '|' escaped, at most `max` bytes.
std::string cell(std::string_view text, std::size_t max = 100) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string day_and_minute(std::int64_t ms) {
  std::string iso = iso8601_utc(ms);  // 2026-07-11T09:30:00.000Z
  return iso.substr(0, 10) + " " + iso.substr(11, 5) + " UTC";
}

struct Sighting {
  std::string pattern;
  std::string description;
};

// The patterns a lesson contributes, each once.
std::vector<Sighting> sightings_of(const LessonInput& lesson) {
  std::vector<Sighting> out;
  std::set<std::string> seen;
  for (const auto& failure : lesson.verify_failures) {
    std::string pattern = fault_pattern(failure);
    if (pattern.empty() || !seen.insert(pattern).second) continue;
    out.push_back({std::move(pattern), failure});
  }
  if (out.empty() && lesson.result != "pass") {
    const std::string intent = lesson.intent.empty() ? "none" : lesson.intent;
    out.push_back({fmt::format("result:{} intent:{}", lesson.result, intent),
                   fmt::format("{} with no failed VERIFY item (intent {})", lesson.result, intent)});
  }
  return out;
}

}  // namespace

std::string fault_pattern(std::string_view failure) {
  std::string out;
  bool pending_space = false;
  for (std::size_t i = 0; i < failure.size() && out.size() < kMaxPatternBytes; ++i) {
    const auto c = static_cast<unsigned char>(failure[i]);
    std::string piece;
    if (std::isdigit(c) != 0) {
      while (i + 1 < failure.size() && std::isdigit(static_cast<unsigned char>(failure[i + 1])) != 0) ++i;
      piece = "#";
    } else if (std::isalpha(c) != 0 || c >= 0x80) {
      piece = static_cast<char>(std::tolower(c));
    } else {
      pending_space = true;
      continue;
    }
    // A number is a word of its own: "3failed" and "3 failed" are one pattern.
    const bool boundary = pending_space || piece == "#" || (!out.empty() && out.back() == '#');
    if (boundary && !out.empty()) out += ' ';
    pending_space = false;
    out += piece;
  }
  return out;
}

Expected<bool> record_faults(SqliteDb& db, const LessonInput& lesson) {
  ORCH_TRY(check_lesson(lesson));
  const std::vector<Sighting> sightings = sightings_of(lesson);
  if (sightings.empty()) return false;
  const std::int64_t seen_at = lesson.closed_at_ms != 0 ? lesson.closed_at_ms : Clock::system().wall_ms();
  return in_write_transaction(db, "updating the fault ledger", [&]() -> Expected<bool> {
    auto sight = ORCH_TRY(Statement::prepare(
        db, "INSERT OR IGNORE INTO fault_sightings (pattern, trace_id, seen_at) VALUES (?1, ?2, ?3)"));
    auto count = ORCH_TRY(Statement::prepare(db, R"sql(
      INSERT INTO faults (pattern, description, count, first_seen, last_seen, last_trace_id, example)
      VALUES (?1, ?2, 1, ?3, ?3, ?4, ?5)
      ON CONFLICT (pattern) DO UPDATE SET
        count = count + 1,
        first_seen = min(first_seen, excluded.first_seen),
        last_trace_id = CASE WHEN excluded.last_seen >= last_seen THEN excluded.last_trace_id ELSE last_trace_id END,
        example = CASE WHEN excluded.last_seen >= last_seen THEN excluded.example ELSE example END,
        last_seen = max(last_seen, excluded.last_seen))sql"));
    bool changed = false;
    for (const auto& s : sightings) {
      auto describe = [&] {
        return fmt::format("recording fault '{}' of trace '{}'", s.pattern, lesson.trace_id);
      };
      sight.bind_text(1, s.pattern);
      sight.bind_text(2, lesson.trace_id);
      sight.bind_int(3, seen_at);
      ORCH_TRY(sight.run(describe));
      if (db.changes() == 0) continue;  // this trace was already counted for this pattern
      count.bind_text(1, s.pattern);
      count.bind_text(2, s.description);
      count.bind_int(3, seen_at);
      count.bind_text(4, lesson.trace_id);
      count.bind_text(5, lesson.request);
      ORCH_TRY(count.run(describe));
      changed = true;
    }
    return changed;
  });
}

Expected<std::vector<Fault>> read_faults(SqliteDb& db) {
  auto query = ORCH_TRY(Statement::prepare(db, R"sql(
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

Expected<std::vector<Fault>> list_faults(const MemoryPaths& paths) {
  auto db = ORCH_TRY(open_memory_db(paths));
  return read_faults(db);
}

std::string fault_ledger_markdown(const std::vector<Fault>& faults) {
  std::string out =
      "# Fault ledger\n\n"
      "Recurring failure patterns of closed traces, most frequent first: each VERIFY checklist item\n"
      "that failed, and failures with no failed item by result and intent. Generated by orch from\n"
      ".orch/memory/memory.db (table `faults`) after every update: edits here are overwritten.\n\n";
  if (faults.empty()) return out + "No failures recorded yet.\n";
  out += "| count | pattern | first seen | last seen | last trace | example |\n";
  out += "|---:|---|---|---|---|---|\n";
  for (const auto& f : faults) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", f.count, cell(f.description),
                       day_and_minute(f.first_seen_ms), day_and_minute(f.last_seen_ms), cell(f.last_trace_id),
                       cell(f.example));
  }
  return out;
}

Expected<void> export_fault_ledger(SqliteDb& db, const MemoryPaths& paths) {
  const auto faults = ORCH_TRY(read_faults(db));
  return write_file_atomically(paths.fault_ledger, fault_ledger_markdown(faults));
}

Expected<void> update_fault_ledger(const MemoryPaths& paths, const LessonInput& lesson) {
  ORCH_TRY(check_lesson(lesson));
  if (lesson.result == "pass" && lesson.verify_failures.empty())
    return {};  // a clean pass: nothing to learn here
  auto db = ORCH_TRY(open_memory_db(paths));
  const bool changed = ORCH_TRY(record_faults(db, lesson));
  std::error_code ec;
  if (changed || !std::filesystem::exists(paths.fault_ledger, ec)) ORCH_TRY(export_fault_ledger(db, paths));
  return {};
}

}  // namespace orch::memory
