#include "orch/clock.h"

namespace orch {

namespace {

class SystemClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  std::int64_t wall_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock& Clock::system() {
  static SystemClock clock;
  return clock;
}

// The steady epoch is arbitrary; start well away from it so that subtracting
// durations from now() never underflows.
ManualClock::ManualClock(std::int64_t wall_start_ms)
    : start_(TimePoint{} + std::chrono::hours(24 * 365)), now_(start_), wall_start_ms_(wall_start_ms) {}

std::int64_t ManualClock::wall_ms() const {
  return wall_start_ms_ + std::chrono::duration_cast<std::chrono::milliseconds>(now_ - start_).count();
}

void ManualClock::advance_to(TimePoint when) {
  if (when > now_) now_ = when;
}

}  // namespace orch
