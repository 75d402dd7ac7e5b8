#include "exec/builtin_executor.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <utility>

#include "util/json_text.h"

namespace orch {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Shared between the attempt and its deferred turn, which holds it weakly: if the
// attempt is destroyed first, the turn finds nothing and reports nothing.
struct BuiltinState {
  BuiltinExecutor::Kind kind;
  nlohmann::ordered_json inputs;
  Executor::DoneCallback done;
  SteadyClock::time_point started;
  std::optional<std::string> cancelled;
};

class BuiltinAttempt final : public RunningAttempt {
 public:
  explicit BuiltinAttempt(std::shared_ptr<BuiltinState> state) : state_(std::move(state)) {}
  void cancel(const std::string& reason) override {
    if (state_->done && !state_->cancelled) state_->cancelled = reason;
  }

 private:
  std::shared_ptr<BuiltinState> state_;
};

AttemptOutcome run_builtin(const BuiltinState& state) {
  AttemptOutcome outcome;
  auto error = [&outcome](std::string message) {
    outcome.ending = AttemptEnding::Error;
    outcome.message = std::move(message);
    return outcome;
  };
  const nlohmann::ordered_json* value = &state.inputs;
  if (state.kind == BuiltinExecutor::Kind::Echo) {
    if (!state.inputs.is_object() || !state.inputs.contains("text")) {
      return error("builtin:echo needs an input named 'text'");
    }
    value = &state.inputs["text"];
  }
  // Compact JSON. Bytes that are not UTF-8 (a placeholder filled with raw
  // output) cannot be JSON: like all JSON orch writes, they become U+FFFD.
  outcome.result = value->is_string() ? value->get<std::string>() : json_text(*value);
  outcome.ending = AttemptEnding::Exited;
  outcome.exit_code = 0;
  return outcome;
}

}  // namespace

void BuiltinExecutor::check_step(const Step& step, Diagnostics& out) const {
  if (kind_ != Kind::Echo || (step.inputs.is_object() && step.inputs.contains("text"))) return;
  Diagnostic d;
  d.file = step.loc.file;
  d.line = step.loc.line;
  if (int line = step.field_lines.line("inputs"); line > 0) d.line = line;
  d.step_id = step.id;
  d.message = "a builtin:echo step needs an input named 'text' (inputs: {text: ...})";
  out.push_back(std::move(d));
}

Expected<std::unique_ptr<RunningAttempt>> BuiltinExecutor::start(const AttemptSpec& spec, EventLoop& loop,
                                                                 DoneCallback done) {
  auto state = std::make_shared<BuiltinState>(
      BuiltinState{kind_, spec.inputs, std::move(done), SteadyClock::now(), {}});
  loop.defer([weak = std::weak_ptr<BuiltinState>(state)] {
    auto held = weak.lock();  // keeps the state alive even if done destroys the attempt
    if (!held || !held->done) return;
    AttemptOutcome outcome;
    if (held->cancelled) {
      outcome.ending = AttemptEnding::Cancelled;
      outcome.message = *held->cancelled;
    } else {
      outcome = run_builtin(*held);
    }
    outcome.duration =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - held->started);
    Executor::DoneCallback report = std::move(held->done);
    held->done = nullptr;
    report(std::move(outcome));
  });
  return std::unique_ptr<RunningAttempt>(std::make_unique<BuiltinAttempt>(std::move(state)));
}

}  // namespace orch
