#include "engine/signals.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace orch {

namespace {
int g_pipe[2] = {-1, -1};
std::atomic<unsigned> g_caught{0};
static_assert(std::atomic<unsigned>::is_always_lock_free);

void on_signal_handler(int signo) {
  int saved = errno;
  g_caught.fetch_add(1, std::memory_order_relaxed);
  unsigned char b = static_cast<unsigned char>(signo);
  [[maybe_unused]] ssize_t n = write(g_pipe[1], &b, 1);
  errno = saved;
}
}  // namespace

bool SignalWatch::pending() {
  if (g_pipe[0] < 0) return false;
  pollfd p{g_pipe[0], POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

unsigned SignalWatch::caught() {
  return g_caught.load(std::memory_order_relaxed);
}

SignalWatch::SignalWatch(EventLoop& loop, std::function<void(int)> on_signal)
    : loop_(loop), on_signal_(std::move(on_signal)) {
  if (g_pipe[0] < 0) {
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_pipe[0] = g_pipe[1] = -1;
  }
  if (g_pipe[0] >= 0) {
    loop_.watch(g_pipe[0], POLLIN, [this](short) {
      unsigned char b = 0;
      while (read(g_pipe[0], &b, 1) == 1) on_signal_(b);
    });
  }
  struct sigaction sa{};
  sa.sa_handler = on_signal_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  // A signal ignored when orch started stays ignored (`nohup orch run ...`, a
  // script's `orch run ... &`), as programs do by convention.
  const auto catch_unless_ignored = [&sa](int signo, struct sigaction* old) {
    sigaction(signo, nullptr, old);
    if (old->sa_handler != SIG_IGN) sigaction(signo, &sa, nullptr);
  };
  catch_unless_ignored(SIGINT, &old_int_);
  catch_unless_ignored(SIGTERM, &old_term_);
  catch_unless_ignored(SIGHUP, &old_hup_);
}

SignalWatch::~SignalWatch() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  if (g_pipe[0] >= 0) loop_.unwatch(g_pipe[0]);
}

}  // namespace orch
