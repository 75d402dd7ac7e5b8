// engine/retry_policy.h — how long a step waits before its next attempt.
//
// A step that failed waits its retry_delay (the step's, else the plan's
// default) before the next attempt. A transient failure (a provider's 429 or
// 5xx, a dropped connection) backs off instead: the delay, at least 1 s,
// doubled per failure so far, at most 5 minutes, plus up to 25% jitter so that
// a fan-out rate-limited at once does not come back at once — and never less
// than the provider's Retry-After. A Retry-After longer than kMaxRetryAfter is
// not waited for (attempt_settle.h fails the step instead).
//
// The jitter comes from a JitterSource the owner injects: the scheduler seeds
// one from std::random_device once per run; tests pass a fixed one and get
// exact delays. Not thread-safe (neither is the source it calls).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

namespace orch {

// A uniform draw in [0, most] (most >= 0).
using JitterSource = std::function<std::int64_t(std::int64_t most)>;

// A JitterSource on std::minstd_rand seeded with `seed`.
JitterSource seeded_jitter(std::uint32_t seed);

class RetryPolicy {
 public:
  // The longest Retry-After a transient failure is retried after: the back-off's own ceiling.
  static constexpr std::chrono::milliseconds kMaxRetryAfter{300'000};
  static constexpr std::chrono::milliseconds kMaxBackoff{300'000};
  static constexpr std::chrono::milliseconds kMinBackoff{1000};

  explicit RetryPolicy(JitterSource jitter);

  // The wait before the next attempt of a step whose last attempt failed:
  // `base` (its retry_delay) for an ordinary failure; for a transient one, the
  // back-off after `failures` counted failures so far (1 for the first).
  std::chrono::milliseconds delay(std::chrono::milliseconds base, bool transient, int failures,
                                  std::optional<std::chrono::milliseconds> retry_after) const;

  // The back-off of a transient failure (see the top of this file).
  std::chrono::milliseconds transient_backoff(std::chrono::milliseconds base, int failures,
                                              std::optional<std::chrono::milliseconds> retry_after) const;

 private:
  JitterSource jitter_;
};

}  // namespace orch
