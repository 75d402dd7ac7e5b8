// serve/runtime_api.h — the routes of the runtimes' records: task traces
// (`orch task`), reviews (`orch review`) and cycle runs (`orch cycle`).
//
// Each is read from its store as the CLI reads it, and answered as the CLI's
// --json prints it, so the page and `orch ... --json` say the same:
//   GET /api/traces       [{id, request, project, state, status, run_id, created_at, updated_at, closed_at}]
//   GET /api/traces/ID    {trace: the trace document (schemas/trace.schema.json), events: [...]}
//   GET /api/reviews      [{id, name, status, verdict, rounds, created_at, updated_at}]
//   GET /api/reviews/ID   the review document (schemas/review-report.schema.json)
//   GET /api/cycles       [{id, name, status, cycles, created_at, updated_at}]
//   GET /api/cycles/ID    {status: schemas/cycle-status.schema.json, audit:
//                          schemas/cycle-audit.schema.json, run: the run's document}
#pragma once

#include <string>

#include "orch/ledger.h"
#include "serve/api.h"

namespace orch::serve {

class RuntimeApi {
 public:
  explicit RuntimeApi(Ledger& ledger) : ledger_(ledger) {}
  Reply traces();
  Reply trace(const std::string& id);
  Reply reviews();
  Reply review(const std::string& id);
  Reply cycles();
  Reply cycle(const std::string& id);

 private:
  Ledger& ledger_;
};

}  // namespace orch::serve
