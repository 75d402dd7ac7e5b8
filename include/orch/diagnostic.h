// orch/diagnostic.h — one problem found in a plan, with where it was written.
#pragma once

#include <string>
#include <vector>

namespace orch {

struct Diagnostic {
  std::string file;
  int line = 0;         // 0 when unknown
  std::string step_id;  // "" for plan-level problems
  std::string message;

  // "FILE:LINE: step 'ID': message" (parts that are unknown are left out).
  std::string to_string() const;
};

using Diagnostics = std::vector<Diagnostic>;

}  // namespace orch
