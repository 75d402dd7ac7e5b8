#include "orch/event_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "exec/exec_testing.h"

namespace orch {
namespace {

using namespace std::chrono_literals;
using orch::testing::run_until;
using SteadyClock = std::chrono::steady_clock;

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0); }
  ~Pipe() {
    close_read();
    close_write();
  }
  int read_end() const { return fds[0]; }
  void write(const std::string& s) {
    ASSERT_EQ(::write(fds[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  void close_read() {
    if (fds[0] >= 0) ::close(fds[0]);
    fds[0] = -1;
  }
  void close_write() {
    if (fds[1] >= 0) ::close(fds[1]);
    fds[1] = -1;
  }
};

// On a manual clock an idle loop jumps to its next timer: an hour passes at once.
TEST(EventLoop, AManualClockJumpsToTheNextTimerWhenNothingElseCanHappen) {
  ManualClock clock;
  EventLoop loop(clock);
  const auto start = clock.now();
  std::vector<int> fired;
  loop.add_timer(2h, [&] { fired.push_back(2); });
  loop.add_timer(1h, [&] { fired.push_back(1); });
  const auto real_start = SteadyClock::now();
  EXPECT_EQ(loop.run_once(0ms), 0) << "asked not to wait: no time passes";
  EXPECT_EQ(clock.now(), start);
  EXPECT_EQ(loop.run_once(10s), 1);
  EXPECT_EQ(fired, std::vector<int>{1});
  EXPECT_EQ(clock.now() - start, 1h);
  EXPECT_EQ(loop.run_once(10s), 1);
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
  EXPECT_EQ(clock.now() - start, 2h);
  EXPECT_LT(SteadyClock::now() - real_start, 5s) << "the loop slept instead of moving the clock";
  EXPECT_EQ(clock.wall_ms(), 1767225600000 + 2 * 3600 * 1000);
}

// While an fd is watched, something real may happen first: no jumping.
TEST(EventLoop, AManualClockDoesNotJumpWhileAnFdIsWatched) {
  ManualClock clock;
  EventLoop loop(clock);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  bool timer = false;
  bool readable = false;
  loop.add_timer(1h, [&] { timer = true; });
  loop.watch(fds[0], POLLIN, [&](short) {
    readable = true;
    loop.unwatch(fds[0]);
  });
  const auto start = clock.now();
  loop.run_once(20ms);
  EXPECT_FALSE(timer);
  EXPECT_EQ(clock.now(), start);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  loop.run_once(1s);
  EXPECT_TRUE(readable);
  EXPECT_FALSE(timer);
  loop.run_once(1s);  // nothing watched any more: now the hour passes
  EXPECT_TRUE(timer);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(EventLoop, TimersFireInDeadlineOrder) {
  EventLoop loop;
  std::vector<int> order;
  loop.add_timer(30ms, [&] { order.push_back(30); });
  loop.add_timer(10ms, [&] { order.push_back(10); });
  loop.add_timer(20ms, [&] { order.push_back(20); });
  loop.add_timer(0ms, [&] { order.push_back(0); });
  ASSERT_TRUE(run_until(
      loop, [&] { return loop.idle(); }, 2s));
  EXPECT_EQ(order, (std::vector<int>{0, 10, 20, 30}));
}

TEST(EventLoop, TimerDoesNotFireEarly) {
  EventLoop loop;
  SteadyClock::time_point fired;
  auto start = SteadyClock::now();
  loop.add_timer(40ms, [&] { fired = SteadyClock::now(); });
  ASSERT_TRUE(run_until(
      loop, [&] { return loop.idle(); }, 2s));
  EXPECT_GE(fired - start, 40ms);
  EXPECT_LT(fired - start, 1s);
}

TEST(EventLoop, CancelledTimerNeverFires) {
  EventLoop loop;
  bool fired = false;
  auto id = loop.add_timer(10ms, [&] { fired = true; });
  loop.cancel_timer(id);
  loop.cancel_timer(id);     // twice is harmless
  loop.cancel_timer(12345);  // unknown is harmless
  EXPECT_TRUE(loop.idle());
  loop.run_once(30ms);
  EXPECT_FALSE(fired);
}

TEST(EventLoop, TimerCanCancelAnotherDueInTheSameTurn) {
  EventLoop loop;
  bool second_fired = false;
  EventLoop::TimerId second = 0;
  loop.add_timer(0ms, [&] { loop.cancel_timer(second); });
  second = loop.add_timer(0ms, [&] { second_fired = true; });
  ::usleep(2000);
  EXPECT_EQ(loop.run_once(0ms), 1);
  EXPECT_FALSE(second_fired);
  EXPECT_TRUE(loop.idle());
}

TEST(EventLoop, TimerAddedByATimerRunsInALaterTurn) {
  EventLoop loop;
  int count = 0;
  loop.add_timer(0ms, [&] {
    ++count;
    loop.add_timer(0ms, [&] { ++count; });
  });
  ::usleep(2000);
  EXPECT_EQ(loop.run_once(0ms), 1);
  EXPECT_EQ(count, 1);
  ASSERT_TRUE(run_until(
      loop, [&] { return count == 2; }, 1s));
}

TEST(EventLoop, DeferredRunsWithoutWaiting) {
  EventLoop loop;
  int ran = 0;
  loop.add_timer(5s, [] {});  // something to wait for, which must not be waited for
  loop.defer([&] { ++ran; });
  EXPECT_FALSE(loop.idle());
  auto start = SteadyClock::now();
  EXPECT_EQ(loop.run_once(5s), 1);
  EXPECT_LT(SteadyClock::now() - start, 500ms);
  EXPECT_EQ(ran, 1);
}

TEST(EventLoop, DeferFromDeferredRunsNextTurnPromptly) {
  EventLoop loop;
  std::vector<int> order;
  loop.defer([&] {
    order.push_back(1);
    loop.defer([&] { order.push_back(2); });
  });
  auto start = SteadyClock::now();
  EXPECT_EQ(loop.run_once(5s), 1);
  EXPECT_EQ(order, (std::vector<int>{1}));
  EXPECT_EQ(loop.run_once(5s), 1);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_LT(SteadyClock::now() - start, 500ms);
  EXPECT_TRUE(loop.idle());
}

TEST(EventLoop, DeferFromFdHandlerMakesNextTurnPrompt) {
  EventLoop loop;
  Pipe pipe;
  pipe.write("x");
  bool deferred_ran = false;
  loop.watch(pipe.read_end(), POLLIN, [&](short) {
    char c;
    ASSERT_EQ(::read(pipe.read_end(), &c, 1), 1);
    loop.unwatch(pipe.read_end());
    loop.defer([&] { deferred_ran = true; });
  });
  EXPECT_EQ(loop.run_once(1s), 1);
  auto start = SteadyClock::now();
  EXPECT_EQ(loop.run_once(5s), 1);
  EXPECT_TRUE(deferred_ran);
  EXPECT_LT(SteadyClock::now() - start, 500ms);
}

TEST(EventLoop, RunOnceWaitsAtMostMaxWait) {
  EventLoop loop;
  auto start = SteadyClock::now();
  EXPECT_EQ(loop.run_once(30ms), 0);
  auto elapsed = SteadyClock::now() - start;
  EXPECT_GE(elapsed, 25ms);
  EXPECT_LT(elapsed, 1s);
}

TEST(EventLoop, ReadableFdCallsItsHandler) {
  EventLoop loop;
  Pipe pipe;
  short seen = 0;
  loop.watch(pipe.read_end(), POLLIN, [&](short revents) { seen = revents; });
  EXPECT_EQ(loop.run_once(0ms), 0);
  pipe.write("hello");
  EXPECT_EQ(loop.run_once(1s), 1);
  EXPECT_TRUE(seen & POLLIN);
}

TEST(EventLoop, HangupIsReported) {
  EventLoop loop;
  Pipe pipe;
  short seen = 0;
  loop.watch(pipe.read_end(), POLLIN, [&](short revents) { seen = revents; });
  pipe.close_write();
  EXPECT_EQ(loop.run_once(1s), 1);
  EXPECT_TRUE(seen & POLLHUP);
}

TEST(EventLoop, WatchingAgainReplacesTheHandler) {
  EventLoop loop;
  Pipe pipe;
  int first = 0;
  int second = 0;
  loop.watch(pipe.read_end(), POLLIN, [&](short) { ++first; });
  loop.watch(pipe.read_end(), POLLIN, [&](short) { ++second; });
  pipe.write("x");
  EXPECT_EQ(loop.run_once(1s), 1);
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
}

TEST(EventLoop, HandlerMayUnwatchItselfAndOthers) {
  EventLoop loop;
  Pipe a;
  Pipe b;
  int calls = 0;
  auto handler = [&](short) {
    ++calls;
    loop.unwatch(a.read_end());
    loop.unwatch(b.read_end());
  };
  loop.watch(a.read_end(), POLLIN, handler);
  loop.watch(b.read_end(), POLLIN, handler);
  a.write("x");
  b.write("y");
  // Both are ready in the same poll; the first handler unwatches the second fd,
  // whose stale readiness must not be delivered.
  EXPECT_EQ(loop.run_once(1s), 1);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(loop.idle());
}

TEST(EventLoop, StaleReadinessIsNotDeliveredToAReusedFdNumber) {
  EventLoop loop;
  Pipe a;
  Pipe b;
  int b_calls = 0;
  int replacement_calls = 0;
  // a's handler closes b and watches a new pipe that reuses b's fd number: the
  // readiness polled for the old b must not reach the new handler.
  Pipe* fresh = nullptr;
  std::unique_ptr<Pipe> owner;
  loop.watch(a.read_end(), POLLIN, [&](short) {
    loop.unwatch(a.read_end());
    int old = b.read_end();
    loop.unwatch(old);
    b.close_read();
    owner = std::make_unique<Pipe>();
    fresh = owner.get();
    loop.watch(fresh->read_end(), POLLIN, [&](short) { ++replacement_calls; });
  });
  loop.watch(b.read_end(), POLLIN, [&](short) { ++b_calls; });
  a.write("x");
  b.write("y");
  EXPECT_EQ(loop.run_once(1s), 1);
  EXPECT_EQ(b_calls, 0);
  EXPECT_EQ(replacement_calls, 0);
  ASSERT_NE(fresh, nullptr);
  loop.unwatch(fresh->read_end());
}

TEST(EventLoop, IdleTracksEverything) {
  EventLoop loop;
  EXPECT_TRUE(loop.idle());
  Pipe pipe;
  loop.watch(pipe.read_end(), POLLIN, [](short) {});
  EXPECT_FALSE(loop.idle());
  loop.unwatch(pipe.read_end());
  EXPECT_TRUE(loop.idle());
  auto id = loop.add_timer(1s, [] {});
  EXPECT_FALSE(loop.idle());
  loop.cancel_timer(id);
  EXPECT_TRUE(loop.idle());
  loop.defer([] {});
  EXPECT_FALSE(loop.idle());
  loop.run_once(0ms);
  EXPECT_TRUE(loop.idle());
}

}  // namespace
}  // namespace orch
