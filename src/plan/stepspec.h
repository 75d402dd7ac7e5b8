// plan/stepspec.h — the seed's StepSpec JSON: a top-level list of
// {goal, deps (indices), inputs {str: str}, executor, postcondition {kind, path, text, cmd}}.
//
// Read unchanged into the orch model: step i gets id "s<i>", deps become those
// ids, an empty executor means "shell", and a shell step's script comes from
// inputs.cmd (it becomes `sh`). Go writes nil slices and maps as null, so null
// deps/inputs/postcondition are accepted. Unknown keys are reported.
#pragma once

#include "orch/plan.h"
#include "plan/fields.h"
#include "util/doc_node.h"

namespace orch::detail {

// `list` is the document's top-level sequence; steps are appended to plan.steps.
// Reads one StepSpec into `step`, a fresh Step whose `index` is already set.
void read_stepspec_step(ReadContext& ctx, const DocNode& node, Step& step);

// `list` is the document's top-level sequence: marks the plan as StepSpec and
// appends its steps (none when `list.streamed`: they came through
// read_stepspec_step already). The list's nodes are freed as they are read.
void read_stepspec_plan(ReadContext& ctx, DocNode& list, Plan& plan);

}  // namespace orch::detail
