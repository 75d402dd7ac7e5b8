// orch/report.h — the run report: what happened in a run, read from the ledger.
//
// The report is built only from ledger rows (never from an engine's memory), so
// `orch status --json` in another process, or after a crash, says the same as the
// `orch run --json` that drove the run. Its shape is published as
// schemas/run-report.schema.json (validated in tests).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"
#include "orch/store.h"

namespace orch {

// Full: the whole report. WithResults: the whole report, each step with its
// result too (`orch status --results`; results can be large, so only when
// asked). Summary: without the "steps" list (the run, budget and counts only; it
// does not read the attempts), for a closing line: not a schema-complete report.
enum class ReportDetail { Full, WithResults, Summary };

Expected<nlohmann::ordered_json> build_run_report(Store& store, const std::string& run_id,
                                                  ReportDetail detail = ReportDetail::Full);

// A page of a run's steps in plan order (those in `status` only, when given),
// each as the full report shows it with its attempts; only that page's attempts
// are read: {"run", "total" (the matching steps), "offset", "limit", "steps"}.
struct StepsPage {
  int offset = 0;
  int limit = 50;
  std::optional<StepStatus> status;
};
Expected<nlohmann::ordered_json> build_steps_page(Store& store, const std::string& run_id,
                                                  const StepsPage& page);

// For a run whose row says running: its spent totals (tokens, cost, counted
// attempts) summed from its attempts, which are written in every turn, where the
// run row is rewritten at most every 250 ms and, after a crash, lags behind what
// the attempts record; and updated_at moved on to the latest attempt time the
// ledger holds (for a run left orphaned, the last sign of life). `spent_wall_ms`
// is moved on by the same amount, to `now_ms` for an active run. A finished run's
// row is final and is left as it is.
Expected<void> refresh_running_totals(Store& store, RunRecord& run, bool active, std::int64_t now_ms);

// The runs of the ledger, newest first, as `orch runs` lists them: a run whose
// row says running is `active` when a live process drives it (its lock is held);
// one that is not had its row read again (it may have ended in between), and a
// running run's totals are refreshed as above.
struct ListedRun {
  RunRecord run;
  bool active = false;
};
Expected<std::vector<ListedRun>> list_runs_fresh(Store& store, std::int64_t now_ms);
// One run of that list as `orch runs --json` prints it (schemas/runs.schema.json).
nlohmann::ordered_json listed_run_json(const ListedRun& listed);

// How a status word is shown: given the status ("failed") and the text printed
// for it (the word, maybe padded to its column), what to print instead (the CLI
// colours it on a terminal). Empty: the text as it is.
using StatusStyle = std::function<std::string(std::string_view status, std::string_view text)>;

// A fixed-width table of the steps of a full report (one row each), then the summary.
std::string format_report_table(const nlohmann::ordered_json& report, const StatusStyle& style = {});

// "run ID STATUS: N done, ... of T in TIME; tokens N, cost $X", and the run's
// reason on a second line when there is one. Works on either detail.
std::string format_report_summary(const nlohmann::ordered_json& report, const StatusStyle& style = {});

// A run's owner as the reports give it: null for none, else {"kind": "review",
// "id": ..., "round": N, "phase": ...} (round 0 and phase "" when it has none).
nlohmann::ordered_json owner_json(const RunOwner& owner);

// "2026-11-30T03:12:01.123Z" for milliseconds since the epoch ("" for 0).
std::string iso_time(std::int64_t ms);
// "850ms", "3.2s", "4m05s", "1h02m".
std::string human_duration(std::int64_t ms);

}  // namespace orch
