#include "orch/diagnostic.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace orch {

std::string Diagnostic::to_string() const {
  std::string out = file;
  if (line > 0) out += file.empty() ? fmt::format("line {}", line) : fmt::format(":{}", line);
  if (!out.empty()) out += ": ";
  // An id is shown escaped: one that is not valid (an error says so) may hold a
  // line break or a NUL, which would forge or cut the line. Valid ids (at most
  // 128 characters) are shown whole.
  if (!step_id.empty()) out += fmt::format("step '{}': ", quote_for_message(step_id, 160));
  out += message;
  return out;
}

}  // namespace orch
