// orch/postcondition.h — grounded success checks of a step.
//
// A step is done only when every postcondition holds. Each check returns whether
// it held and a one-line reason a person can act on ("result_contains 'PASS':
// not found in the result (212 bytes)"). File paths resolve inside the workspace
// (workspace.h); one that escapes is a failed check naming the path.
// shell_zero needs a process, so the engine runs it through the shell executor on
// the event loop; evaluate_post() handles every other kind in-process.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "orch/executor.h"
#include "orch/plan.h"

namespace orch {

struct CheckResult {
  PostKind kind = PostKind::None;
  bool held = false;
  std::string reason;  // why it failed; a short description when it held
};

struct CheckContext {
  std::filesystem::path workspace;
  std::filesystem::path plan_dir;  // for result_json schema_path
  const AttemptOutcome* outcome = nullptr;
};

// Evaluates any postcondition except shell_zero (which returns held=false, reason
// "shell_zero must be run by the engine").
CheckResult evaluate_post(const Postcondition& post, const CheckContext& ctx);

// Serialises check results as the JSON array stored in AttemptRecord::checks_json.
std::string checks_to_json(const std::vector<CheckResult>& checks);

}  // namespace orch
