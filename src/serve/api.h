// serve/api.h — the routes of `orch serve` as functions of the ledger.
//
// Each route reads (or, for the three that act, writes) the ledger through the
// same Store interface as the CLI and answers with a Reply: JSON for the API,
// errors as {"error": "..."} with the HTTP status the error's code calls for
// (404 a run, step or attempt the ledger does not have; 409 an action the run's
// state refuses, such as approving a step that is not paused; 400 bad input).
// Nothing is kept between calls: every answer is what the ledger says now.
// The HTTP side (routes, the token, the event stream) is http_server.h's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "orch/clock.h"
#include "orch/ledger.h"
#include "orch/report.h"

namespace orch::serve {

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// GET /api/runs?status=S&limit=N&offset=K: a page of the runs, newest first.
struct RunsQuery {
  std::string status;  // "" for every status, else a run status name
  int limit = 50;      // 1..1000
  int offset = 0;
};

class Api {
 public:
  Api(Ledger& ledger, const Clock& clock) : ledger_(ledger), clock_(clock) {}

  // {"total": N, "offset": K, "limit": L, "counts": {status: n}, "runs": [...]}
  // (each run as `orch runs --json` lists it, plus "progress": {done, total}).
  Reply runs(const RunsQuery& query);
  // The run report (schemas/run-report.schema.json), as `orch status --json`;
  // without `steps` (the run, budget and counts only) when `with_steps` is false.
  Reply run(const std::string& run_id, bool with_steps = true);
  // [{step, risk, command, requested_at, reason}]: the run's steps awaiting
  // approval, with what each will do and its risk (its approval_requested event).
  Reply approvals(const std::string& run_id);
  // [{version, path, created_at, text}]: every version of the run's plan, oldest first.
  Reply plans(const std::string& run_id);
  // A page of the run's steps (orch/report.h, build_steps_page).
  Reply steps(const std::string& run_id, const StepsPage& page);
  // {"events": [...], "last_seq": N}: the run's events after seq `after`, at most `limit`.
  Reply events(const std::string& run_id, std::int64_t after, int limit);
  // The last `tail` bytes of an attempt's stdout or stderr, as JSON
  // {"stream", "bytes", "truncated", "text"} (text is the bytes, invalid UTF-8
  // replaced; the page shows it as text, never as markup).
  Reply output(const std::string& run_id, const std::string& step_id, int attempt, const std::string& stream,
               std::int64_t tail);
  // The three that act, recorded in the ledger as the CLI records them.
  Reply approve(const std::string& run_id, const std::string& step_id);
  Reply deny(const std::string& run_id, const std::string& step_id);
  Reply cancel(const std::string& run_id);

  // The events of a run after `after` (for the event stream), or an error reply.
  Expected<std::vector<EventRecord>> events_after(const std::string& run_id, std::int64_t after, int limit);

 private:
  Ledger& ledger_;
  const Clock& clock_;
};

// {"error": message} with the status the error's code maps to.
Reply error_reply(const Error& e);
Reply json_reply(const nlohmann::ordered_json& body, int status = 200);

}  // namespace orch::serve
