// exec/event_loop.cc — the poll(2) loop behind orch/event_loop.h.
//
// Reentrancy is the whole difficulty: a handler may unwatch its own fd, close it,
// open a new fd that gets the same number and watch that, cancel a timer that is
// due in this same turn, or destroy the object that owns all of these. So each
// turn works from snapshots: the handlers polled are held by shared_ptr (they stay
// alive while they run even if unwatched), an fd's revents are delivered only if
// the fd is still watched by the *same* handler, and a due timer runs only if it
// has not been cancelled by an earlier handler of the turn.
#include "orch/event_loop.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <utility>

namespace orch {

EventLoop::EventLoop(Clock& clock) : clock_(clock) {}
EventLoop::~EventLoop() = default;

void EventLoop::watch(int fd, short events, FdHandler handler) {
  watches_[fd] = Watch{events, std::make_shared<FdHandler>(std::move(handler))};
}

void EventLoop::unwatch(int fd) {
  watches_.erase(fd);
}

EventLoop::TimerId EventLoop::add_timer(Millis delay, Callback callback) {
  TimerId id = next_timer_++;
  auto when = clock_.now() + std::max(delay, Millis{0});
  timers_.emplace(when, std::make_pair(id, std::move(callback)));
  timer_index_.emplace(id, when);
  return id;
}

void EventLoop::cancel_timer(TimerId id) {
  auto index = timer_index_.find(id);
  if (index == timer_index_.end()) return;
  auto [first, last] = timers_.equal_range(index->second);
  for (auto it = first; it != last; ++it) {
    if (it->second.first == id) {
      timers_.erase(it);
      break;
    }
  }
  timer_index_.erase(index);
}

void EventLoop::defer(Callback callback) {
  deferred_.push_back(std::move(callback));
}

bool EventLoop::idle() const {
  return watches_.empty() && timers_.empty() && deferred_.empty();
}

int EventLoop::run_once(Millis max_wait) {
  int ran = 0;

  // Deferred callbacks first: they are "the next turn" of whoever deferred them.
  // Ones they defer in turn wait for the next run_once, so a callback that keeps
  // re-deferring itself cannot starve fds and timers.
  if (!deferred_.empty()) {
    std::vector<Callback> batch;
    batch.swap(deferred_);
    for (auto& callback : batch) {
      callback();
      ++ran;
    }
  }

  // Having done work (or having more deferred) means: only look, don't wait.
  int timeout_ms = 0;
  if (ran == 0 && deferred_.empty()) {
    Millis wait = std::max(max_wait, Millis{0});
    if (!timers_.empty() && clock_.manual() && watches_.empty() && wait > Millis{0}) {
      // Nothing can happen before the next timer but time passing: let it pass
      // (as waiting would; a caller that asked not to wait gets no jump).
      clock_.advance_to(timers_.begin()->first);
      wait = Millis{0};
    } else if (!timers_.empty()) {
      // Round up so we never wake just before a timer is due and spin.
      auto until = std::chrono::ceil<Millis>(timers_.begin()->first - clock_.now());
      wait = std::clamp(until, Millis{0}, wait);
    }
    timeout_ms = static_cast<int>(std::min<Millis::rep>(wait.count(), INT_MAX));
  }

  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<FdHandler>> handlers;
  fds.reserve(watches_.size());
  handlers.reserve(watches_.size());
  for (const auto& [fd, w] : watches_) {
    fds.push_back(pollfd{fd, w.events, 0});
    handlers.push_back(w.handler);
  }

  int ready = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), timeout_ms);
  if (ready < 0) return ran;  // EINTR (a signal the engine handles) or a transient failure

  for (std::size_t i = 0; i < fds.size() && ready > 0; ++i) {
    if (fds[i].revents == 0) continue;
    --ready;
    auto it = watches_.find(fds[i].fd);
    // Unwatched, or the number now belongs to a different fd: these revents are stale.
    if (it == watches_.end() || it->second.handler != handlers[i]) continue;
    (*handlers[i])(fds[i].revents);
    ++ran;
  }

  if (!timers_.empty()) {
    auto now = clock_.now();
    std::vector<TimerId> due;
    for (auto it = timers_.begin(); it != timers_.end() && it->first <= now; ++it) {
      due.push_back(it->second.first);
    }
    for (TimerId id : due) {
      auto index = timer_index_.find(id);
      if (index == timer_index_.end()) continue;  // cancelled by an earlier handler
      Callback callback;
      auto [first, last] = timers_.equal_range(index->second);
      for (auto it = first; it != last; ++it) {
        if (it->second.first == id) {
          callback = std::move(it->second.second);
          timers_.erase(it);
          break;
        }
      }
      timer_index_.erase(index);
      if (callback) {
        callback();
        ++ran;
      }
    }
  }
  return ran;
}

}  // namespace orch
