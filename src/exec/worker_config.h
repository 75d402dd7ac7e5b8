// exec/worker_config.h — the agent CLIs `worker:NAME` steps run, from a workers
// file (docs/workers.md; `orch run --workers FILE`, default .orch/workers.yaml
// when it exists; shipped templates in templates/workers/):
//
//   workers:
//     claude:
//       argv: [claude, -p, "{prompt}", --output-format, json, --model, "{model}"]
//       stdin: none              # none (default: /dev/null) | prompt (the prompt on stdin)
//       model: sonnet            # fills {model}; a step's inputs.model overrides it
//       output: json             # text (default) | json | jsonl
//       result: result           # json/jsonl: the dotted path to the result text
//       usage:                   # json/jsonl, optional: dotted paths to what it spent
//         tokens_in: usage.input_tokens
//         tokens_out: usage.output_tokens
//         cost_usd: total_cost_usd
//         cache_read: usage.cache_read_input_tokens       # input tokens the CLI counts apart
//         cache_write: usage.cache_creation_input_tokens  # from tokens_in: orch adds them to it
//       error: is_error          # json/jsonl, optional: a path whose value, when true or a
//                                # non-empty string, makes the answer a failed attempt
//       error_message: result    # optional: the path of that failure's text (default: the
//                                # error value when it is a string, else the result path)
//       timeout: 30m             # per attempt (a step's timeout, if shorter, wins)
//       stall_after: 5m          # no output and no file change for this long: stalled
//       reserve_tokens: 20000    # reserved from the budget before each call (see below)
//       env: {CLAUDE_CODE_DISABLE_TELEMETRY: "1"}
//
// Slots {prompt}, {prompt_file}, {workspace} and {model} are filled inside argv
// elements; each element stays one argument (never re-parsed by a shell).
// {prompt_file} is the path of a file holding the prompt (made for the attempt,
// removed after it): for prompts longer than Linux lets one argument be (128
// KiB), as is `stdin: prompt`. The worker must be told its task one way or
// another: argv has {prompt} or {prompt_file}, or stdin is prompt.
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
  bool prompt_on_stdin = false;  // stdin: prompt
  std::string model;
  WorkerOutput output = WorkerOutput::Text;
  std::string result_path;                                 // json/jsonl
  std::string tokens_in_path, tokens_out_path, cost_path;  // optional
  // Prompt-cache tokens reported apart from tokens_in (claude): added to it, and
  // kept apart as AttemptOutcome::cache_read_tokens / cache_write_tokens.
  std::string cache_read_path, cache_write_path;  // optional
  // An answer that says it is an error (claude's "is_error": true, gemini's
  // "error": {...}) even though the CLI exited 0: the attempt fails with the
  // error's text as its reason, and is retried as a provider error (transient).
  std::string error_path;          // optional; json/jsonl only
  std::string error_message_path;  // optional; needs error_path
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
