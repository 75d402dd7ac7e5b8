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
#include <string_view>
#include <vector>

#include "orch/attempt_outcome.h"
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

// "; output: LAST" — the end of what a failed attempt printed, for its reason,
// so that the step's own error text is never masked behind "exited with code 1"
// (seed 004): the last 300 bytes of `output_tail` (stdout's tail, then stderr's),
// from a line's start when one begins there, on one line as valid UTF-8; "" when
// it printed nothing. exit_zero adds it to a failed exit's reason, and the engine
// to the reason of an attempt killed by a signal or failed by its executor after
// a non-zero exit.
std::string failure_output_suffix(std::string_view output_tail);

}  // namespace orch
