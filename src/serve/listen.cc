// serve/listen.cc — sockets, binding and signals of orch-serve's servers (serve/listen.h).
#include "serve/listen.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "cli/common.h"
#include "orch/engine.h"

namespace orch::serve {

void reuse_address_only(httplib::Server& svr) {
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

Expected<int> bind_server(httplib::Server& svr, const std::string& host, int port) {
  const int got = port == 0 ? svr.bind_to_any_port(host) : (svr.bind_to_port(host, port) ? port : -1);
  if (got < 0)
    return fail(ErrorCode::Io, fmt::format("cannot listen on {}:{} (in use, or not an address of this "
                                           "machine): give another with --listen HOST:PORT",
                                           host, port));
  return got;
}

std::string origin_of(const std::string& host, int port) {
  return fmt::format("http://{}:{}", host.find(':') != std::string::npos ? "[" + host + "]" : host, port);
}

int serve_until_signal(const char* name, const std::function<Expected<void>()>& serve,
                       const std::function<void()>& stop) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stop();
  });
  auto served = serve();
  if (!served) {
    waiter.detach();
    return cli::report_error(served.error());
  }
  waiter.join();
  std::fprintf(stderr, "%s: stopped\n", name);
  return kExitSucceeded;
}

}  // namespace orch::serve
