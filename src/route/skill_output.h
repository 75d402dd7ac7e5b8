// route/skill_output.h — the skill-output contract (schemas/skill-output.schema.json, seed 004).
//
// The JSON document `orch chain --json` and `orch route --json` print: the same
// envelope (schema, status, skill_name, skill_version, run_id, timestamp,
// duration_ms, tokens_used, cost_usd, output {summary, data}, error) around what
// each skill puts in output.data (and a chain's own fields). skill_output_skeleton
// builds the envelope with every field at its "nothing happened" value: no run,
// no tokens (tokens are never estimated here), no cost, no error.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace orch::route {

constexpr const char* kSkillOutputSchemaId = "orch.skill-output/1";

// `timestamp`: ISO 8601 UTC with milliseconds ("2026-11-30T09:45:12.301Z").
nlohmann::ordered_json skill_output_skeleton(std::string_view skill_name, std::string_view status,
                                             std::string_view timestamp);

nlohmann::ordered_json skill_output_tokens(std::int64_t input, std::int64_t output);

// The `error` object: code, message, recoverable, step (1-based, or null).
nlohmann::ordered_json skill_output_error(std::string_view code, std::string_view message, bool recoverable,
                                          std::optional<int> step);

}  // namespace orch::route
