#include "cli/progress.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/common.h"
#include "orch/report.h"
#include "util/strings.h"

namespace orch::cli {

ProgressPrinter::ProgressPrinter(Mode mode) : mode_(mode), start_(std::chrono::steady_clock::now()) {}

namespace {
// A reason's first line, safe for the terminal (a reason may quote a plan or a process).
std::string first_line(const std::string& s) {
  return terminal_text(s.substr(0, s.find('\n')));
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
}

void ProgressPrinter::on_event(const ProgressEvent& e) {
  if (mode_ == Mode::Quiet) return;
  if (mode_ == Mode::Lines) {
    // The lines of one engine transaction go out together, once it is committed:
    // one write per turn instead of one per step.
    if (e.kind == ProgressEvent::Kind::Committed) std::fflush(stdout);
    if (e.kind != ProgressEvent::Kind::StepFinished) return;
    std::string status = step_status_name(e.step_status);
    std::string detail = e.reason.empty() ? "" : "  " + first_line(e.reason);
    if (e.attempt > 0) {
      std::printf("%-9s %s  (attempt %d, %s)%s\n", status.c_str(), e.step_id.c_str(), e.attempt,
                  human_duration(e.duration_ms).c_str(), detail.c_str());
    } else {  // never attempted: skipped before it started
      std::printf("%-9s %s%s\n", status.c_str(), e.step_id.c_str(), detail.c_str());
    }
    return;
  }
  if (e.kind == ProgressEvent::Kind::Committed) return;
  if (e.kind == ProgressEvent::Kind::StepFinished && e.step_status == StepStatus::Failed) {
    std::fprintf(stderr, "\r\033[Kfailed    %s: %s\n", e.step_id.c_str(), first_line(e.reason).c_str());
  }
  draw(e);
}

void ProgressPrinter::finish() {
  if (mode_ == Mode::Lines) std::fflush(stdout);
  if (mode_ == Mode::Live && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace orch::cli
