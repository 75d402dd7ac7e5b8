// serve/http_server.h — `orch serve`: the dashboard's HTTP server.
//
// cpp-httplib (Debian's libcpp-httplib) serves, over the ledger it is given:
//   GET  /                                   the page (serve/page.h, built in)
//   GET  /api/runs?status=&limit=&offset=    a page of the runs (serve/api.h)
//   GET  /api/runs/stream                    Server-Sent Events: "runs" when the list changed
//   GET  /api/runs/ID?steps=0|1              the run report (steps=0: without its steps)
//   GET  /api/runs/ID/steps?offset=&limit=&status=   a page of its steps, with their attempts
//   GET  /api/runs/ID/plans                  every version of its plan (replans)
//   GET  /api/runs/ID/approvals              its steps awaiting approval: risk and command
//   GET  /api/runs/ID/graph.svg              the run's DAG (serve/run_graph.h)
//   GET  /api/runs/ID/events?after=&limit=   the run's events
//   GET  /api/runs/ID/stream                 Server-Sent Events: each new event of the run,
//                                            and `run` when its row changed
//   GET  /api/runs/ID/steps/STEP/attempts/N/output?stream=stdout|stderr&tail=BYTES
//   GET  /api/traces, /api/traces/ID         task traces (serve/runtime_api.h)
//   GET  /api/reviews, /api/reviews/ID       reviews
//   GET  /api/cycles, /api/cycles/ID         cycle runs
//   POST /api/runs/ID/cancel                 (token)
//   POST /api/runs/ID/steps/STEP/approve     (token)
//   POST /api/runs/ID/steps/STEP/deny        (token)
//   GET  /metrics                            Prometheus text (serve/metrics.h)
//   GET  /healthz
// A route that acts needs the token in an `X-Orch-Token` header and refuses a
// request from another site (an `Origin` that is not this server's, or
// `Sec-Fetch-Site: cross-site`/`same-site`): 403. Listening beyond loopback,
// every /api route and /metrics needs the token too (the header, or the
// `orch_token` cookie the page sets for its event streams). Requests over
// 64 KiB are refused (413). It keeps no state: each answer is read from the
// ledger, one request at a time (the ledger's connection is one).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "orch/clock.h"
#include "orch/error.h"
#include "orch/ledger.h"

namespace orch::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8470;  // 0: any free port
  std::string token;
  // How often the event streams look at the ledger for what is new.
  std::chrono::milliseconds stream_poll{250};
  // Told the URL once the server listens (its port chosen).
  std::function<void(const std::string& url)> on_listening;
};

// --listen's value: "HOST:PORT", "[::1]:PORT" or ":PORT" (loopback).
Expected<std::pair<std::string, int>> parse_listen(const std::string& text);

// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& host);

// Serves until stop_serving() (a signal) is called. An error when it cannot
// listen (the port taken: Busy).
Expected<void> serve(Ledger& ledger, const Clock& clock, const ServeOptions& options);
void stop_serving();

}  // namespace orch::serve
