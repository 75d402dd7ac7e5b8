// exec/builtin_executor.h — in-process steps: "builtin:echo" and "builtin:json".
//
// Builtins compose prompts and data without spawning anything. The engine has
// already rendered placeholders in the string leaves of AttemptSpec::inputs.
//   builtin:echo  result = inputs["text"] (a string as is; anything else as compact JSON)
//   builtin:json  result = the inputs object as compact JSON, keys in written order
// (invalid UTF-8 in a value becomes U+FFFD, as in all JSON orch writes: util/json_text.h)
// Both end Exited with exit_code 0 (or Error for bad input), always through
// loop.defer — never synchronously inside start() — so the engine sees every
// executor end the same way. cancel() before the deferred turn makes the ending
// Cancelled; destroying the attempt first means done is never called. Builtins
// declare no default postcondition.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "orch/executor.h"

namespace orch {

class BuiltinExecutor final : public Executor {
 public:
  enum class Kind { Echo, Json };
  explicit BuiltinExecutor(Kind kind) : kind_(kind) {}

  // builtin:echo needs an input named `text`. ("No run/sh" is validate_plan's own
  // check for every non-shell step; repeating it here would report it twice.)
  void check_step(const Step& step, Diagnostics& out) const override;
  std::vector<Postcondition> default_post() const override { return {}; }
  bool in_process() const override { return true; }
  int open_files_per_attempt() const override { return 0; }
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                  DoneCallback done) override;

 private:
  Kind kind_;
};

}  // namespace orch
