// cli/output_style.h — how much orch says, and whether in colour: the global
// flags every command takes (`orch [--color WHEN] [-q] [-v]... COMMAND`, also
// after the command).
//
//   --color auto|always|never   statuses in colour (done green, failed red, ...).
//                               auto (default): only on a terminal, and never when
//                               NO_COLOR is set to anything but "" (no-color.org)
//                               or TERM is dumb; always and never win over NO_COLOR.
//   -q, --quiet                 orch run and resume: errors and --json documents
//                               only (no progress, no table or summary, no note on
//                               stderr); the exit code says how the run ended.
//   -v, --verbose               more: -v says each attempt as it starts; -vv
//                               (debug) also the ledger orch opens and each file
//                               it reads its set-up from (models, registry, workers).
//
// One process-wide setting, written once by orch_main before the command runs.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "orch/report.h"

namespace orch::cli {

enum class ColorMode { Auto, Always, Never };

// The level a message needs: Error always shows; Note unless --quiet; Verbose
// with -v; Debug with -vv.
enum class LogLevel { Error = 0, Note = 1, Verbose = 2, Debug = 3 };

struct OutputStyle {
  ColorMode color = ColorMode::Auto;
  LogLevel level = LogLevel::Note;
};

OutputStyle& output_style();

bool quiet();                      // --quiet
bool shows(LogLevel level);        // the level is on
bool color_on(std::FILE* stream);  // colour for what goes to `stream`

// "orch: " + text + "\n" on stderr when `level` is on.
void log(LogLevel level, const std::string& text);

// A run, step or attempt status word in its colour (when `color`): green for
// succeeded/done, red for failed/budget_exhausted/timed_out/stalled, yellow for
// what waits for a person or was stopped (skipped, cancelled, interrupted,
// awaiting_approval, escalated), cyan for running/pending. `text` is what is
// printed (the word, padded to its column): the padding stays outside no code.
std::string colored_status(std::string_view status, std::string_view text, bool color);

// The StatusStyle (orch/report.h) of a table or summary printed to `stream`:
// colours when color_on(stream), else none.
StatusStyle status_style(std::FILE* stream);

}  // namespace orch::cli
