// exec/worker_executor.h — `executor: worker:NAME`: an agent CLI, one process per attempt.
//
// The worker's command comes from the workers file (worker_config.h): its argv
// with the slots filled — {prompt} with the attempt's prompt, {prompt_file} with
// the path of a file holding it, {workspace} with the workspace, {model} with
// inputs.model or the worker's model. It runs exactly as the shell executor runs
// a command (it is the shell executor underneath: own process group, stdin
// /dev/null — or the prompt file with `stdin: prompt` — capped and masked output
// files, timeout, cancel), with the worker's env added. A prompt that would make
// one argument longer than Linux allows (128 KiB) is a set-up failure naming the
// two other ways.
//
// A clean context per attempt: the prompt holds only the step's goal, its
// rendered inputs (inputs.prompt first, then every other input under its name)
// and, on a retry, why the previous attempt failed (worker_prompt()).
//
// Output: `text` — the result is stdout. `json` — stdout is one JSON document;
// the result is the value at the worker's `result` path, tokens and cost come
// from its `usage` paths (never estimated: a path that is missing leaves 0).
// `jsonl` — one JSON object per line (an event stream); the last line that has
// the result path gives the result, and each usage path is read from the last
// line that has it. Usage is read from the output of every attempt, one that
// failed or was stopped included: what an attempt spent counts against the
// budgets however it ended. A worker that exits 0 with output that does not fit
// ends the attempt Error, naming the worker and the path; so does one whose
// answer its `error` path marks as an error (claude's "is_error": true), with the
// error's text as the reason, classed as a provider's answer is: an overload or
// a rate limit transient (retried with back-off), refused credentials a set-up
// failure (not retried), anything else an ordinary failure.
//
// Stall detection (`stall_after`): progress is a byte on stdout or stderr or a
// change anywhere in the workspace (inotify on its folders, new folders
// included, up to 8192 folders) but in orch's store folder, when it lies inside
// the workspace (.orch/: the ledger and other steps' output change there, and
// are not this worker's progress). A worker that makes no progress for
// stall_after is killed (SIGTERM to its group, SIGKILL after the grace) and the
// attempt ends Stalled — not TimedOut: a timeout bounds a busy worker, a stall
// catches a stuck one early.
#pragma once

#include <memory>
#include <string>

#include "exec/shell_executor.h"
#include "exec/worker_config.h"
#include "orch/executor.h"

namespace orch {

class WorkerExecutor final : public Executor {
 public:
  explicit WorkerExecutor(std::shared_ptr<const WorkerCatalog> catalog);

  // The worker must exist; the step needs a goal or inputs.prompt, and takes no run/sh.
  void check_step(const Step& step, Diagnostics& out) const override;
  // [exit_zero, result_nonempty]: an agent that exits 0 with nothing to show is not done.
  std::vector<Postcondition> default_post() const override;
  // The worker's program cannot be found or run (worker_not_runnable).
  std::optional<std::string> setup_problem(const Step& step) const override;
  // The filled argv (shell-quoted), then the prompt.
  std::string describe(const AttemptSpec& spec) const override;
  // The worker's reserve_tokens, else the size of the goal and inputs / 4 (a
  // floor: the prompt alone costs that many tokens).
  SpendEstimate estimate(const Step& step) const override;
  // A process's six, and the inotify descriptor that watches the workspace for progress.
  int open_files_per_attempt() const override { return 7; }
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                  DoneCallback done) override;

 private:
  std::shared_ptr<const WorkerCatalog> catalog_;
  ShellExecutor shell_;
};

// Why the worker's program cannot be run ("worker 'claude': 'claude' is not
// found in PATH ..."), looked for in `path` (nullptr: the worker's env PATH,
// else orch's), or nullopt when it can.
std::optional<std::string> worker_not_runnable(const WorkerConfig& worker, const char* path);

// The prompt an attempt of a worker step gets (see above).
std::string worker_prompt(const AttemptSpec& spec);

// Whether the worker takes its prompt from a file ({prompt_file}, or stdin: prompt).
bool worker_needs_prompt_file(const WorkerConfig& worker);
// Where an attempt's prompt file is written: beside its output files
// (<store>/runs/<run>/<step>.<n>.prompt), mode 0600; removed when it ends.
std::filesystem::path worker_prompt_file(const AttemptSpec& spec);

// `argv` with {prompt}, {prompt_file}, {workspace} and {model} filled, one element each.
std::vector<std::string> fill_worker_argv(const WorkerConfig& worker, const AttemptSpec& spec);

// The value at a dotted path ("usage.input_tokens", "choices.0.text"), or null.
const nlohmann::json* json_at_path(const nlohmann::json& doc, const std::string& path);

}  // namespace orch
