// memory/trace_facts.h — what the memory reads from a trace document.
//
// Traces are written by `orch task` (flows/task_trace.h; .orch/traces/<id>.json).
// The memory reads only these fields, and tolerates the rest being absent:
//   id, request                 text, required
//   result                      "pass" | "fail" | "escalated" | "abandoned"; null while open
//   intent, project, complexity, strategy, state, summary, fix    text or null
//   transitions                 [{t, state, note}]
//   verifications               [{verdict, items: [{check, status}]}]  (also accepted:
//   verify_results               the same items, or records holding `items`)
//   closed_at                   ISO-8601 text or ms; else the last transition's t
// A failed VERIFY item is one whose status is failed, fail, refuted or error, or
// whose passed / pass / ok is false (an unattested or not_run item is no
// evidence either way, so not a failure); its text is `check` (or item, name,
// text). "What fixed it" is the `fix` field, else — for a trace that passed after a
// FAIL verdict — the note of its last EXECUTE transition (the retry that worked).
// The summary is `summary`, else the SUMMARIZE note, else the last transition's note.
//
// Pure functions (read_trace_file reads the file); thread-safe.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "memory/lessons.h"
#include "orch/error.h"

namespace orch::memory {

struct TraceFacts {
  LessonInput lesson;  // lesson.result is "" while the trace is open
  std::string project, complexity, strategy, state;
  std::vector<std::string> notes;  // the transitions' notes, in order, empty ones left out
  bool closed() const { return !lesson.result.empty(); }
};

// InvalidInput naming the field that is missing or of the wrong type.
Expected<TraceFacts> read_trace_facts(const nlohmann::json& doc);
// The file read and parsed; errors read "<file>: <why>". Files over 8 MiB are refused.
Expected<TraceFacts> read_trace_file(const std::filesystem::path& file);

// The lesson of a closed trace (InvalidInput for an open one). What `orch task
// close` hands to harvest_lesson and update_fault_ledger.
Expected<LessonInput> lesson_from_trace(const nlohmann::json& doc);

}  // namespace orch::memory
