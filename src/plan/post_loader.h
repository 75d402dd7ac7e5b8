// plan/post_loader.h — reading a step's `post:` list (postconditions).
//
// Accepted item forms (docs/plan-format.md, "Postconditions"):
//   - exit_zero                           a bare kind
//   - {kind: file_contains, path: x, text: y}
//   - result_contains: PASS               the kind as the only key, its main field as value
//   - file_contains: {path: x, text: y}   the kind as the only key, fields as value
//   - result_json: {type: object}         an inline schema as value
// `post:` may also be a single item instead of a list. Unknown kinds and keys are
// reported with a did-you-mean; whether the fields suit the kind is validate's job.
#pragma once

#include <vector>

#include "orch/plan.h"
#include "plan/fields.h"

namespace orch::detail {

std::vector<Postcondition> read_postconditions(const ReadContext& ctx, const Field& post);

// Reads one postcondition; nullopt (with a diagnostic) when it cannot be read.
// `fallback_line` is used when the node has no line of its own.
std::optional<Postcondition> read_postcondition(const ReadContext& ctx, const DocNode& node,
                                                int fallback_line);

}  // namespace orch::detail
