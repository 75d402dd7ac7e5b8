// cli/progress.h — what `orch run` and `orch resume` print while a run goes.
//
// On a terminal that can redraw (stderr is a TTY, TERM set and not dumb): one
// live progress line, redrawn in place and cut to the terminal's width
// (done/running/failed/total, elapsed, tokens), with failed steps printed above it.
// Otherwise: one plain line per finished step on stdout, nothing redrawn. With
// -v, a line for each attempt as it starts too ("started   build  (attempt 2)").
#pragma once

#include <chrono>
#include <string>

#include "orch/engine.h"

namespace orch::cli {

class ProgressPrinter {
 public:
  enum class Mode { Live, Lines, Quiet };
  // `color`: status words in colour (cli/output_style.h); `verbose`: a line for
  // each attempt as it starts, besides each step as it finishes.
  explicit ProgressPrinter(Mode mode, bool color = false, bool verbose = false);
  void on_event(const ProgressEvent& e);
  // Clears the live line (before the summary is printed).
  void finish();

 private:
  void draw(const ProgressEvent& e);
  Mode mode_;
  bool color_ = false;
  bool verbose_ = false;
  bool drawn_ = false;
  std::string uncommitted_;  // step lines waiting for their transaction's commit
  ProgressEvent last_;       // what the live line shows
  std::chrono::steady_clock::time_point start_;
};

}  // namespace orch::cli
