// testing/pg_proxy.h — a TCP proxy between orch and the tests' PostgreSQL
// server, that cuts connections when told: what a server restart, a network
// cut or a crash at the wrong moment look like from orch's side, on demand and
// at an exact point, without stopping the server that other tests share.
//
// It listens on 127.0.0.1 (a free port) and passes bytes both ways between
// each client and a connection of its own to the server. drop_all() closes
// every connection (as a restart does); set_down(true) closes each new one at
// once (a server that is not back yet); the next COMMIT a client sends can
// have its answer lost (the server commits, the client never hears) or be lost
// itself (the server never sees it, and rolls the transaction back when the
// connection closes). Its own thread; the calls are thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "orch/error.h"

namespace orch::testing {

class PgProxy {
 public:
  // A proxy to the server of `server_url` (postgresql://USER@HOST:PORT/...).
  static Expected<std::unique_ptr<PgProxy>> start(const std::string& server_url);
  ~PgProxy();
  PgProxy(const PgProxy&) = delete;
  PgProxy& operator=(const PgProxy&) = delete;

  // `url` (of the proxied server) with the proxy's port instead.
  std::string through(const std::string& url) const;

  void drop_all() { drop_all_ = true; }
  void set_down(bool down) { down_ = down; }
  enum class Commit { Pass, LoseAnswer, Lose };
  // What happens to the next COMMIT (then Pass again).
  void next_commit(Commit what) { commit_ = what; }
  // Connections dropped so far (drop_all, a COMMIT's), for tests to wait on.
  int dropped() const { return dropped_; }

 private:
  PgProxy(int listener, int port, std::string host, int server_port);
  void serve();

  int listener_;
  int port_;
  std::string server_host_;
  int server_port_;
  std::atomic<bool> stop_{false}, drop_all_{false}, down_{false};
  std::atomic<Commit> commit_{Commit::Pass};
  std::atomic<int> dropped_{0};
  std::thread thread_;
};

}  // namespace orch::testing
