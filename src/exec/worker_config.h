// exec/worker_config.h — the agent CLIs `worker:NAME` steps run, from a workers
// file (docs/workers.md; `orch run --workers FILE`, default .orch/workers.yaml
// when it exists; shipped templates in templates/workers/):
//
//   workers:
//     claude:
//       argv: [claude, -p, "{prompt}", --output-format, json, --model, "{model}"]
//       model: sonnet            # fills {model}; a step's inputs.model overrides it
//       output: json             # text (default) | json | jsonl
//       result: result           # json/jsonl: the dotted path to the result text
//       usage:                   # json/jsonl, optional: dotted paths to what it spent
//         tokens_in: usage.input_tokens
//         tokens_out: usage.output_tokens
//         cost_usd: total_cost_usd
//       timeout: 30m             # per attempt (a step's timeout, if shorter, wins)
//       stall_after: 5m          # no output and no file change for this long: stalled
//       reserve_tokens: 20000    # reserved from the budget before each call (see below)
//       env: {CLAUDE_CODE_DISABLE_TELEMETRY: "1"}
//
// Slots {prompt}, {workspace} and {model} are filled inside argv elements; each
// element stays one argument (never re-parsed by a shell).
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orch/error.h"

namespace orch {

enum class WorkerOutput { Text, Json, JsonLines };

struct WorkerConfig {
  std::string name;
  std::vector<std::string> argv;
  std::string model;
  WorkerOutput output = WorkerOutput::Text;
  std::string result_path;                                 // json/jsonl
  std::string tokens_in_path, tokens_out_path, cost_path;  // optional
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<std::chrono::milliseconds> stall_after;
  std::map<std::string, std::string> env;
  // What one call may spend, reserved from the run's token budget before the
  // call starts (the engine starts no call the budget cannot cover). Unset: the
  // size of the step's goal and inputs / 4, a floor (the prompt alone costs
  // that); 0 for a worker that reports no usage.
  std::optional<std::int64_t> reserve_tokens;
};

struct WorkerCatalog {
  std::map<std::string, WorkerConfig> workers;
  // The worker `executor` names ("worker:NAME"), or nullptr.
  const WorkerConfig* find(const std::string& executor) const;
};

// Every problem is reported, one per line, as "FILE: FIELD: message"
// (ErrorCode::InvalidInput); an unreadable file is NotFound.
Expected<WorkerCatalog> parse_worker_catalog(const std::string& text, const std::string& file);
Expected<WorkerCatalog> load_worker_catalog(const std::filesystem::path& file);

}  // namespace orch
