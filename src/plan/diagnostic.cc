#include "orch/diagnostic.h"

#include <fmt/format.h>

namespace orch {

std::string Diagnostic::to_string() const {
  std::string out = file;
  if (line > 0) out += file.empty() ? fmt::format("line {}", line) : fmt::format(":{}", line);
  if (!out.empty()) out += ": ";
  if (!step_id.empty()) out += fmt::format("step '{}': ", step_id);
  out += message;
  return out;
}

}  // namespace orch
