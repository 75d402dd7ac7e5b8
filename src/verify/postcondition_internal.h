// verify/postcondition_internal.h — the checks evaluate_post() dispatches to
// (verify-internal). Each returns a CheckResult whose reason starts with the
// kind's name; evaluate_post() fills in `kind` and makes the reason one line.
#pragma once

#include "orch/postcondition.h"

namespace orch::detail {

// result_json: parses the result, validates it against `schema` and `schema_path`.
CheckResult check_result_json(const Postcondition& post, const CheckContext& ctx);

// file_exists and file_contains, with the path resolved inside ctx.workspace.
CheckResult check_file_exists(const Postcondition& post, const CheckContext& ctx);
CheckResult check_file_contains(const Postcondition& post, const CheckContext& ctx);

// " (stdout was cut at max_output)" when the result is incomplete, else "".
std::string truncation_note(const AttemptOutcome& outcome);

}  // namespace orch::detail
