// orch/event_loop.h — the single-threaded loop every executor is driven from.
//
// Like ninja's subprocess loop: one poll(2) over the file descriptors of running
// attempts (pipes, pidfds, later libcurl's sockets), plus timers and deferred
// callbacks. No thread per step. Not thread-safe: all calls come from the thread
// that calls run_once(). Handlers may add or remove watches and timers freely,
// including their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "orch/clock.h"

namespace orch {

class EventLoop {
 public:
  using Millis = std::chrono::milliseconds;
  using FdHandler = std::function<void(short revents)>;
  using Callback = std::function<void()>;
  using TimerId = std::uint64_t;

  // Timers run on `clock` (which must outlive the loop). On a manual clock, a
  // turn that would wait (max_wait > 0) with no fd watched and nothing deferred
  // jumps the clock to the next timer rather than sleeping.
  explicit EventLoop(Clock& clock = Clock::system());
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Calls `handler` with poll's revents whenever `fd` is ready for `events`
  // (POLLIN/POLLOUT; POLLHUP/POLLERR are always reported). One handler per fd;
  // watching an fd again replaces its handler.
  void watch(int fd, short events, FdHandler handler);
  void unwatch(int fd);

  // Calls `callback` once, `delay` from now (on the loop's clock).
  TimerId add_timer(Millis delay, Callback callback);
  void cancel_timer(TimerId id);

  // Calls `callback` in the next turn, without waiting for any fd.
  void defer(Callback callback);

  // One turn: waits until an fd is ready, a timer is due or a deferred callback is
  // pending — at most `max_wait` — then runs the handlers that are due. Returns
  // how many handlers ran. EINTR is not an error (returns 0).
  int run_once(Millis max_wait);

  // True when nothing is watched, scheduled or deferred.
  bool idle() const;

  Clock& clock() const { return clock_; }

 private:
  Clock& clock_;
  struct Watch {
    short events;
    std::shared_ptr<FdHandler> handler;
  };
  std::map<int, Watch> watches_;
  std::multimap<std::chrono::steady_clock::time_point, std::pair<TimerId, Callback>> timers_;
  std::map<TimerId, std::chrono::steady_clock::time_point> timer_index_;
  std::vector<Callback> deferred_;
  TimerId next_timer_ = 1;
};

}  // namespace orch
