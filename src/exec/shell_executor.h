// exec/shell_executor.h — the "shell" executor: one process per attempt.
//
// Runs AttemptSpec::argv as a Subprocess (own process group, stdin /dev/null, cwd
// = workspace, environment = orch's plus AttemptSpec::env). stdout and stderr go
// to their files through OutputSinks capped at max_output. The result is stdout as
// kept by the sink (so a truncated result ends with the same marker as the file)
// with one trailing "\n" or "\r\n" trimmed — or, when output_file is set, that
// file's content. After the exit, a usage file the step wrote (usage_path) gives
// tokens and cost. The timeout and cancel() stop the group with SIGTERM, then
// SIGKILL after kill_grace.
//
// start() never fails: a command that cannot be started is reported through
// `done` (ending SpawnFailed) from the loop, like every other ending, so the
// engine has one path for endings. Until done is called, cancel() makes the
// ending Cancelled. Destroying an attempt before done SIGKILLs its group, reaps
// it synchronously, and done is never called.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orch/executor.h"

namespace orch {

class ShellExecutor final : public Executor {
 public:
  // Adds nothing: "exactly one of run/sh, non-empty" is checked by validate_plan
  // itself (it knows the StepSpec form too), and saying it twice would list each
  // mistake twice in `orch validate`.
  void check_step(const Step& step, Diagnostics& out) const override;
  // [exit_zero]
  std::vector<Postcondition> default_post() const override;
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                  DoneCallback done) override;
};

// What a step reports spending in its usage file.
struct UsageReport {
  std::int64_t tokens_in = 0;
  std::int64_t tokens_out = 0;
  double cost_usd = 0;
};

// Reads a usage file: a JSON object with optional "tokens_in" and "tokens_out"
// (non-negative integers) and "cost_usd" (a non-negative number); other keys are
// ignored. nullopt when the file does not exist; an error naming the file and the
// problem when it cannot be read or is malformed.
Expected<std::optional<UsageReport>> read_usage_file(const std::filesystem::path& path);

// `text` without one trailing "\r\n" or "\n".
std::string trim_one_newline(std::string text);

// "2s", "250ms", "1500ms": how long a timeout was, for messages.
std::string format_duration(std::chrono::milliseconds duration);

}  // namespace orch
