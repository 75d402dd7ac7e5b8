// orch/plan_loader.h — reading a plan from YAML or JSON text.
//
// Both formats go through one YAML parser (JSON is YAML), so every node has a
// line number. Accepted shapes:
//   * the orch plan format (a mapping with `steps:`; docs/plan-format.md);
//   * the seed StepSpec JSON: a top-level list of {goal, deps (indices), inputs,
//     executor, postcondition}; ids become "s0", "s1", ... (from_stepspec = true).
// Structural problems (unknown keys, wrong types, bad durations/sizes, unknown
// postcondition kinds) are all collected into Diagnostics rather than stopping at
// the first. Semantic checks (deps, cycles, placeholders) are validate_plan's job.
#pragma once

#include <string>
#include <string_view>

#include "orch/diagnostic.h"
#include "orch/error.h"
#include "orch/plan.h"

namespace orch {

struct LoadResult {
  Plan plan;               // as much of the plan as could be read
  Diagnostics diagnostics;  // empty when the text was well-formed
  // The text was well-formed and its step list (empty, perhaps) could be read, so
  // validate_plan's checks mean something even when some fields were not read;
  // false after a syntax error, for a document that is not a plan, or a `steps:`
  // that is not a list.
  bool checkable = false;
};

// Parses `text`; `file` is used in diagnostics and as Plan::source_path.
LoadResult parse_plan(std::string_view text, const std::string& file);

// The text of a plan file, whole (a run keeps it in the ledger as submitted).
// Refused, with "PATH: " and why: a missing file (NotFound); a folder, a socket,
// and more than kMaxPlanFileBytes (InvalidInput: a stream that never ends, such
// as /dev/zero, stops there); a read error (Io). A FIFO is read until its writer
// closes it (`orch validate <(gen)`); one that gives nothing (no writer had it
// open: the open does not wait for one) is refused (InvalidInput).
// PATH "-" is standard input (kStdinPlan), named "<stdin>" in messages.
inline constexpr std::int64_t kMaxPlanFileBytes = 256LL * 1024 * 1024;
inline constexpr const char* kStdinPlan = "-";
Expected<std::string> read_plan_file(const std::string& path);
// How a plan's PATH is named in messages and diagnostics: "<stdin>" for "-".
std::string plan_display_name(const std::string& path);

// Parses `text` read from `path` by read_plan_file. As parse_plan(text, path),
// but a plan from standard input ("-") is named "<stdin>" in diagnostics and has
// no source_path: it has no folder of its own, so its relative paths are the
// workspace's (validate_options_for, Engine::run), and a run records no path.
LoadResult parse_plan_from(std::string_view text, const std::string& path);

// Reads (read_plan_file) and parses (parse_plan_from) a file. Fails only when
// the file cannot be read.
Expected<LoadResult> load_plan_file(const std::string& path);

// Parses "250ms", "30s", "5m", "1h30m", "2h" (a bare number is seconds).
Expected<Millis> parse_duration(std::string_view text);
// Parses "512", "64KiB", "16MiB", "1GiB", "10KB", "1MB" (KB/MB = 1000-based).
Expected<std::int64_t> parse_size(std::string_view text);

}  // namespace orch
