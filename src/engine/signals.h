// engine/signals.h — SIGINT/SIGTERM/SIGHUP delivered to the event loop.
//
// While a SignalWatch lives, those signals are caught by a handler that only
// writes the signal number to a self-pipe; the loop reads it and calls back. The
// previous handlers are restored on destruction. A signal ignored when the watch
// is made (nohup's SIGHUP, SIGINT for a script's background job) stays ignored.
#pragma once

#include <csignal>
#include <functional>

#include "orch/event_loop.h"

namespace orch {

class SignalWatch {
 public:
  SignalWatch(EventLoop& loop, std::function<void(int signo)> on_signal);
  ~SignalWatch();
  // True when a caught signal waits to be delivered to the loop (not consumed):
  // for code that blocks outside the loop, such as a question to a human.
  static bool pending();
  // How many signals any SignalWatch of this process has caught; safe to call
  // from a signal handler. A caller's own handler, put back when the watch goes,
  // can tell by it that a stop is already under way (the run it stopped has
  // ended) and drop a late signal of the same burst instead of dying by it.
  static unsigned caught();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

 private:
  EventLoop& loop_;
  std::function<void(int)> on_signal_;
  struct sigaction old_int_{}, old_term_{}, old_hup_{};
};

}  // namespace orch
