// orch/clock.h — time, injected.
//
// Everything in orch that waits or stamps goes through a Clock: the event loop's
// timers (retry delays, the plan's wall budget, kill grace periods, timeouts) and
// the times written to the ledger. Production uses Clock::system(). Tests use a
// ManualClock, on which an idle EventLoop jumps straight to its next timer instead
// of sleeping, so an hour of retry back-off or a wall budget runs out in
// microseconds. Real processes still run in real time: the loop only jumps when no
// file descriptor is being watched. So a timer that guards real I/O in flight (an
// HTTP call's timeout, which HttpClient keeps on the loop) does not fire on a
// ManualClock while that I/O waits: tests of such timeouts use the real clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace orch {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic time, for timers and durations.
  virtual TimePoint now() const = 0;
  // Milliseconds since the Unix epoch (UTC), for the ledger's stamps.
  virtual std::int64_t wall_ms() const = 0;
  // True for a clock that moves only when told to (ManualClock).
  virtual bool manual() const { return false; }
  // Moves a manual clock forward to `when` (never back); ignored by real clocks.
  virtual void advance_to(TimePoint when) { (void)when; }

  // The real clocks: steady_clock and system_clock.
  static Clock& system();
};

class ManualClock final : public Clock {
 public:
  // Starts at wall time `wall_start_ms` (default 2026-01-01T00:00:00Z).
  explicit ManualClock(std::int64_t wall_start_ms = 1767225600000);

  TimePoint now() const override { return now_; }
  std::int64_t wall_ms() const override;
  bool manual() const override { return true; }
  void advance_to(TimePoint when) override;
  void advance(std::chrono::milliseconds by) { advance_to(now_ + by); }

 private:
  TimePoint start_;
  TimePoint now_;
  std::int64_t wall_start_ms_;
};

}  // namespace orch
