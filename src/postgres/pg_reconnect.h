// postgres/pg_reconnect.h — how long and how often orch tries to get a lost
// connection to the server back, and where it says so.
//
// A server restarted under a running orch (pg_ctl restart, a fail-over, a
// crash) closes every connection to it. PgConnection tells that from other
// failures — libpq's CONNECTION_BAD, or a SQLSTATE of class 08 (connection
// exception) or 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
// cannot_connect_now — and connects again to the same server
// (PgConnection::reconnect, pg_reconnect.cc): at once, then after waits that
// double from 100 ms up to 2 s, each less a random part of up to half of it (so
// that the many processes a restart cut off at one moment do not all come back
// at the same one), until ORCH_PG_RECONNECT_S seconds (default 60) have gone by.
// Then it gives up with a Store error naming the server, how long it tried and
// the server's last refusal. Each reconnection is said in one line on stderr
// ("orch: lost the connection to ...; reconnected after N tries"): never silent.
// What may be sent again once reconnected is PgConnection's rule
// (pg_connection.h); which locks are taken again, PgStore's (pg_store_lock.cc).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "orch/error.h"

namespace orch::detail {

struct PgReconnectPolicy {
  std::chrono::milliseconds first_wait{100};
  std::chrono::milliseconds longest_wait{2000};
  std::chrono::milliseconds give_up_after{60'000};  // zero: a lost connection is not tried again

  // The policy with give_up_after from ORCH_PG_RECONNECT_S (whole seconds; 0
  // turns reconnecting off; unset: 60). Anything else is an InvalidInput error.
  static Expected<PgReconnectPolicy> from_environment();

  // The wait after failed try `tries` (1 for the first): first_wait doubled
  // tries-1 times, at most longest_wait, less `jitter` (in [0, 1)) times half of it.
  std::chrono::milliseconds wait_after(int tries, double jitter) const;
};

// Says `line` ("lost the connection to ...") as "orch: LINE" on stderr, or to
// the reporter a test set (set_pg_reporter; an empty one puts stderr back).
void report_pg(const std::string& line);
void set_pg_reporter(std::function<void(const std::string&)> reporter);

}  // namespace orch::detail
