// exec/llm_inputs.h — the inputs an `llm` step may have, checked at validation
// and put into the request.
//
//   prompt            the user message (required)
//   system            the system message
//   response_format   a JSON Schema the reply must validate against (llm_executor.h)
//   temperature       a number, 0..2 (0..1 on the Anthropic Messages API)
//   top_p             a number, above 0 and at most 1
//   max_tokens        a whole number above 0: the reply's cap for this step (the
//                     model's max_tokens from the models file otherwise); it is
//                     what the budget reserves for the reply
//   stop              a string or a list of 1..4 non-empty strings (Anthropic:
//                     stop_sequences)
//   seed              a whole number (OpenAI-compatible APIs only: the Anthropic
//                     Messages API has none, and a step that asks for one there is
//                     refused rather than silently not seeded)
//
// Any other input is refused at validation with this list (an input orch does
// not send would be silently dropped). `tools` is refused with its own reason:
// an llm step is one call, and orch runs tools as `tool:NAME` steps.
// The sampling inputs must be literal values, not placeholders: they are part
// of the request's shape, checked before anything runs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "exec/llm_models.h"
#include "orch/diagnostic.h"
#include "orch/plan.h"

namespace orch {

// Adds a diagnostic for each input of `step` that is unknown or of the wrong
// kind; `api` is the step's model's API (nullopt: no model was found).
void check_llm_inputs(const Step& step, std::optional<LlmApi> api, Diagnostics& out);

// The reply's token cap for a step with these inputs: its max_tokens, else the model's.
std::int64_t llm_reply_tokens(const LlmModel& model, const nlohmann::ordered_json& inputs);

// Puts the step's temperature, top_p, stop and seed into a request body of `api`.
void add_sampling_inputs(nlohmann::json& body, LlmApi api, const nlohmann::ordered_json& inputs);

}  // namespace orch
