// serve/metrics.h — GET /metrics: the ledger in Prometheus's text format.
//
// Read from the ledger at each scrape (no state of its own), in the text
// exposition format 0.0.4, names after Prometheus's conventions: a prefix
// `orch_`, base units (`_seconds`, `_usd`), `_total` for counters. What each
// metric means is docs/serve.md's "Metrics" table:
//   orch_runs{status}                          gauge: runs in the ledger by status
//   orch_steps{status}                         gauge: steps of every run by status
//   orch_attempts_total{outcome,reason_class}  counter: finished attempts
//   orch_attempts_running                      gauge
//   orch_tokens_total{run,executor,provider,model}    counter: tokens spent (in + out)
//   orch_cost_usd_total{run,executor,provider,model}  counter: cost spent
//                                              (provider and model: the attempt's call, ledger v15)
//   orch_budget_headroom{run,resource}         gauge: limit less spent, running runs
//                                              with a limit (tokens, cost_usd,
//                                              attempts, wall_seconds)
//   orch_attempt_duration_seconds              histogram of finished attempts
//   orch_step_duration_seconds                 histogram of finished steps (done or failed)
//   orch_stalls_total                          counter: attempts ended as stalled
//   orch_approvals_pending                     gauge: steps awaiting approval
// And, for a PostgreSQL ledger that `orch worker`s serve (distrib/):
//   orch_workers{state}                        gauge: registered workers, live or gone
//   orch_worker_slots                          gauge: the live workers' slots
//   orch_leases                                gauge: attempts claimed under a lease now
#pragma once

#include <string>
#include <vector>

#include "distrib/work_queue.h"
#include "orch/clock.h"
#include "orch/error.h"
#include "orch/store.h"

namespace orch::serve {

// `workers`: the ledger's workers (WorkQueue::workers), or null for a ledger
// that has none to ask about (SQLite).
Expected<std::string> render_metrics(Store& store, const Clock& clock,
                                     const std::vector<distrib::WorkerRow>* workers = nullptr);

// The reason class of an attempt, for a label: its ending as the ledger names
// it, with "postcondition" when its process succeeded but a check did not hold.
std::string reason_class(const AttemptRecord& a);

}  // namespace orch::serve
