#include "cli/output_style.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace orch::cli {

OutputStyle& output_style() {
  static OutputStyle style;
  return style;
}

bool quiet() {
  return output_style().level == LogLevel::Error;
}

bool shows(LogLevel level) {
  return static_cast<int>(level) <= static_cast<int>(output_style().level);
}

bool color_on(std::FILE* stream) {
  switch (output_style().color) {
    case ColorMode::Always:
      return true;
    case ColorMode::Never:
      return false;
    case ColorMode::Auto:
      break;
  }
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term == nullptr || *term == '\0' || std::strcmp(term, "dumb") == 0) return false;
  return ::isatty(::fileno(stream)) == 1;
}

void log(LogLevel level, const std::string& text) {
  if (!shows(level)) return;
  std::fprintf(stderr, "orch: %s\n", text.c_str());
}

std::string colored_status(std::string_view status, std::string_view text, bool color) {
  if (!color) return std::string(text);
  const char* code = nullptr;
  if (status == "succeeded" || status == "done" || status == "PASS") {
    code = "32";  // green
  } else if (status == "failed" || status == "budget_exhausted" || status == "timed_out" ||
             status == "stalled" || status == "BLOCK") {
    code = "31";  // red
  } else if (status == "skipped" || status == "cancelled" || status == "interrupted" ||
             status == "awaiting_approval" || status == "escalated" || status == "REVISE" ||
             status == "INCOMPLETE") {
    code = "33";  // yellow
  } else if (status == "running" || status == "pending") {
    code = "36";  // cyan
  }
  if (code == nullptr) return std::string(text);
  // The colour covers the word, not the padding after it.
  const std::size_t end = text.find_last_not_of(' ') + 1;
  return std::string("\033[") + code + "m" + std::string(text.substr(0, end)) + "\033[0m" +
         std::string(text.substr(end));
}

StatusStyle status_style(std::FILE* stream) {
  if (!color_on(stream)) return {};
  return [](std::string_view status, std::string_view text) { return colored_status(status, text, true); };
}

}  // namespace orch::cli
