#include "exec/builtin_executor.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <utility>
#include "util/json_text.h"

namespace orch {
namespace {

using SteadyClock = std::chrono::steady_clock;

const char* kind_name(BuiltinExecutor::Kind kind) {
  return kind == BuiltinExecutor::Kind::Echo ? "builtin:echo" : "builtin:json";
}

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

// Compact JSON; invalid UTF-8 (from a placeholder filled with raw bytes) cannot be
// JSON, and is reported rather than silently replaced.
std::optional<std::string> dump_json(const nlohmann::ordered_json& value) {
  try {
    return json_text(value);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

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
  if (value->is_string()) {
    outcome.result = value->get<std::string>();
  } else if (auto text = dump_json(*value)) {
    outcome.result = std::move(*text);
  } else {
    return error(
        fmt::format("{}: the inputs hold bytes that are not valid UTF-8, so they cannot be written as JSON",
                    kind_name(state.kind)));
  }
  outcome.ending = AttemptEnding::Exited;
  outcome.exit_code = 0;
  return outcome;
}

}  // namespace

void BuiltinExecutor::check_step(const Step& step, Diagnostics& out) const {
  auto add = [&step, &out](const std::string& field, std::string message) {
    Diagnostic d;
    d.file = step.loc.file;
    d.line = step.loc.line;
    if (auto it = step.field_locs.find(field); it != step.field_locs.end() && it->second.line > 0) {
      d.line = it->second.line;
    }
    d.step_id = step.id;
    d.message = std::move(message);
    out.push_back(std::move(d));
  };
  const char* name = kind_name(kind_);
  if (!step.run.empty()) add("run", fmt::format("a {} step runs no command; 'run' is for shell steps", name));
  if (step.sh) add("sh", fmt::format("a {} step runs no command; 'sh' is for shell steps", name));
  if (kind_ == Kind::Echo && !(step.inputs.is_object() && step.inputs.contains("text"))) {
    add("inputs", "a builtin:echo step needs an input named 'text' (inputs: {text: ...})");
  }
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
