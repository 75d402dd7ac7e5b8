#include "exec/refused_attempt.h"

#include <chrono>
#include <optional>
#include <utility>

namespace orch {

namespace {

using SteadyClock = std::chrono::steady_clock;

struct RefusalState {
  std::string message;
  AttemptEnding ending = AttemptEnding::Error;
  Executor::DoneCallback done;
  SteadyClock::time_point started;
  std::optional<std::string> cancelled;
};

class RefusedAttempt final : public RunningAttempt {
 public:
  explicit RefusedAttempt(std::shared_ptr<RefusalState> state) : state_(std::move(state)) {}
  void cancel(const std::string& reason) override {
    if (state_->done && !state_->cancelled) state_->cancelled = reason;
  }

 private:
  std::shared_ptr<RefusalState> state_;
};

}  // namespace

std::unique_ptr<RunningAttempt> refused_attempt(std::string message, EventLoop& loop,
                                                Executor::DoneCallback done, AttemptEnding ending) {
  auto state = std::make_shared<RefusalState>(
      RefusalState{std::move(message), ending, std::move(done), SteadyClock::now(), {}});
  loop.defer([weak = std::weak_ptr<RefusalState>(state)] {
    auto held = weak.lock();
    if (!held || !held->done) return;
    AttemptOutcome outcome;
    outcome.ending = held->cancelled ? AttemptEnding::Cancelled : held->ending;
    outcome.message = held->cancelled ? *held->cancelled : held->message;
    outcome.duration =
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - held->started);
    Executor::DoneCallback report = std::move(held->done);
    held->done = nullptr;
    report(std::move(outcome));
  });
  return std::make_unique<RefusedAttempt>(std::move(state));
}

}  // namespace orch
