#include "cli/progress.h"

#include <fmt/format.h>

#include <cstdio>
#include <string_view>
#include <vector>

#include "cli/common.h"
#include "cli/output_style.h"
#include "orch/report.h"
#include "util/strings.h"

namespace orch::cli {

ProgressPrinter::ProgressPrinter(Mode mode, bool color, bool verbose)
    : mode_(mode), color_(color), verbose_(verbose), start_(std::chrono::steady_clock::now()) {}

namespace {
// A reason's first line, safe for the terminal (a reason may quote a plan or a process).
std::string first_line(const std::string& s) {
  return terminal_text(s.substr(0, s.find('\n')));
}

// The last lines a failed attempt printed, indented under its line (at most
// kOutputLines, each made safe for the terminal), as ninja shows the output of a
// failed command; "" when it printed nothing.
constexpr std::size_t kOutputLines = 10;
std::string output_lines(std::string_view tail) {
  std::vector<std::string_view> lines;
  for (std::size_t from = 0; from < tail.size();) {
    std::size_t to = tail.find('\n', from);
    if (to == std::string_view::npos) to = tail.size();
    lines.push_back(tail.substr(from, to - from));
    from = to + 1;
  }
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  std::string out;
  const std::size_t first = lines.size() > kOutputLines ? lines.size() - kOutputLines : 0;
  for (std::size_t i = first; i < lines.size(); ++i) out += "  | " + terminal_text(lines[i]) + "\n";
  return out;
}
}  // namespace

void ProgressPrinter::draw(const ProgressEvent& e) {
  auto elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start_);
  std::string line = fmt::format("[{}/{}] {} running, {} failed, {} skipped  {}  tokens {}", e.done, e.total,
                                 e.running, e.failed, e.skipped, human_duration(elapsed.count()), e.tokens);
  // A line as wide as the terminal would wrap, and the next redraw would start
  // on the wrapped part: kept one column short (it is ASCII: a byte a column).
  if (const int columns = stderr_columns(); columns > 1 && line.size() >= static_cast<std::size_t>(columns))
    line.resize(static_cast<std::size_t>(columns - 1));
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
  last_ = e;
}

void ProgressPrinter::on_event(const ProgressEvent& e) {
  if (mode_ == Mode::Quiet) return;
  // A step's line says what the ledger holds: it is kept until the engine's
  // transaction that records the outcome is committed, then the turn's lines go
  // out together (one write per turn instead of one per step).
  if (e.kind == ProgressEvent::Kind::Committed) {
    if (uncommitted_.empty()) return;
    if (mode_ == Mode::Lines) {
      std::fwrite(uncommitted_.data(), 1, uncommitted_.size(), stdout);
      std::fflush(stdout);
    } else {
      // Above the live line, which is drawn again below them.
      std::fprintf(stderr, "\r\033[K%s", uncommitted_.c_str());
      if (drawn_)
        draw(last_);
      else
        std::fflush(stderr);
    }
    uncommitted_.clear();
    return;
  }
  if (verbose_ && e.kind == ProgressEvent::Kind::AttemptStarted) {
    uncommitted_ += fmt::format("{} {}  (attempt {})\n", colored_status("running", "started  ", color_),
                                e.step_id, e.attempt);
    if (mode_ == Mode::Lines) return;
  }
  if (mode_ == Mode::Lines) {
    if (e.kind != ProgressEvent::Kind::StepFinished) return;
    const std::string_view name = step_status_name(e.step_status);
    const std::string status = colored_status(name, fmt::format("{:<9}", name), color_);
    std::string detail = e.reason.empty() ? "" : "  " + first_line(e.reason);
    if (e.attempt > 0 && !e.attempt_ran_now) {
      // Ended by this process without an attempt of its own (a budget spent by the
      // attempts an earlier one made): not to be read as a new attempt.
      uncommitted_ +=
          fmt::format("{} {}  (not run again; {} attempt{} before, {}){}\n", status, e.step_id, e.attempt,
                      e.attempt == 1 ? "" : "s", human_duration(e.duration_ms), detail);
    } else if (e.attempt > 0) {
      // The attempt's own time, and the step's when earlier attempts (a retry, one
      // a resume started again) add to it.
      std::string took = e.attempt_duration_ms >= 0 && e.attempt_duration_ms != e.duration_ms
                             ? fmt::format("{}; {} in all", human_duration(e.attempt_duration_ms),
                                           human_duration(e.duration_ms))
                             : human_duration(e.duration_ms);
      uncommitted_ += fmt::format("{} {}  (attempt {}, {}){}\n", status, e.step_id, e.attempt, took, detail);
      uncommitted_ += output_lines(e.output_tail);
    } else {  // never attempted: skipped before it started
      uncommitted_ += fmt::format("{} {}{}\n", status, e.step_id, detail);
    }
    return;
  }
  if (e.kind == ProgressEvent::Kind::StepFinished && e.step_status == StepStatus::Failed)
    uncommitted_ += fmt::format("{} {}: {}\n", colored_status("failed", "failed   ", color_), e.step_id,
                                first_line(e.reason)) +
                    output_lines(e.output_tail);
  draw(e);
}

void ProgressPrinter::finish() {
  // Lines of a transaction that was never committed (the ledger could not be
  // written) are dropped: the ledger does not hold those outcomes.
  uncommitted_.clear();
  if (mode_ == Mode::Lines) std::fflush(stdout);
  if (mode_ == Mode::Live && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace orch::cli
