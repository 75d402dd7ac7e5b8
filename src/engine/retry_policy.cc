// How long a step waits before its next attempt. See retry_policy.h.
#include "engine/retry_policy.h"

#include <algorithm>
#include <memory>
#include <random>

namespace orch {

using std::chrono::milliseconds;

JitterSource seeded_jitter(std::uint32_t seed) {
  auto engine = std::make_shared<std::minstd_rand>(seed);
  return [engine](std::int64_t most) {
    std::uniform_int_distribution<std::int64_t> draw(0, most);
    return draw(*engine);
  };
}

RetryPolicy::RetryPolicy(JitterSource jitter) : jitter_(std::move(jitter)) {}

milliseconds RetryPolicy::delay(milliseconds base, bool transient, int failures,
                                std::optional<milliseconds> retry_after) const {
  return transient ? transient_backoff(base, failures, retry_after) : base;
}

milliseconds RetryPolicy::transient_backoff(milliseconds base, int failures,
                                            std::optional<milliseconds> retry_after) const {
  const milliseconds floor = std::max(base, kMinBackoff);
  const int doublings = std::clamp(failures - 1, 0, 16);
  milliseconds delay = std::min(floor * (std::int64_t{1} << doublings), kMaxBackoff);
  const std::int64_t most = delay.count() / 4;
  delay += milliseconds(std::clamp<std::int64_t>(jitter_ ? jitter_(most) : 0, 0, most));
  if (retry_after) delay = std::max(delay, *retry_after);
  return delay;
}

}  // namespace orch
