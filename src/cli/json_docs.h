// cli/json_docs.h — the --json documents of `orch plan`, `orch validate`, `orch
// logs` and `orch similarity`, built in one place: the commands print them and
// `orch mcp` (src/mcp/) returns them as its tools' structured results, so both
// follow the same schemas/*.schema.json.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/plan_input.h"
#include "flows/plan_decision.h"
#include "flows/planner.h"
#include "memory/memory.h"
#include "orch/store.h"

namespace orch::cli {

// schemas/plan-result.schema.json: the planner's answer for a request.
nlohmann::ordered_json planned_json(const flows::PlannedRequest& p);
// The "trigger" member of `orch plan --json` and `--explain --json`.
nlohmann::ordered_json trigger_json(const flows::TriggerResult& t);

// A valid plan may still hold a step the risk guard refuses whatever is approved
// (a tool the registry has as pending or planned): one warning per such step.
Diagnostics critical_step_warnings(const Plan& plan, const ExecutorRegistry& executors,
                                   const std::string& shown);
// schemas/validate.schema.json: {valid, plan, steps, errors, warnings}.
nlohmann::ordered_json validation_json(const std::string& shown, const PlanInput& in,
                                       const Diagnostics& warnings);
// The same for a plan that could not be checked at all: each line of `reason`
// one error ("FILE:LINE: message" keeps its file and line).
nlohmann::ordered_json invalid_plan_json(const std::string& shown, const std::string& reason);

// `orch logs RUN STEP [--attempt N]`: which attempt, and how many the step has.
struct LogsQuery {
  std::string run_id;
  std::string step;
  int attempt = 0;   // 0: the latest
  bool err = false;  // stderr instead of stdout
};
struct ChosenAttempt {
  AttemptRecord attempt;
  std::size_t attempts = 0;
};
// NotFound naming what is missing: the run, the step (with a did-you-mean), any
// attempt of it, or attempt N.
Expected<ChosenAttempt> find_attempt(Store& store, const LogsQuery& q);
// schemas/logs.schema.json: the stream `text` read of the chosen attempt.
nlohmann::ordered_json logs_json(const LogsQuery& q, const ChosenAttempt& chosen, const OutputRead& read,
                                 const std::string& text);

// schemas/similarity.schema.json: the hits for `text`, best first.
nlohmann::ordered_json similarity_json(const std::string& text, const std::vector<memory::Hit>& hits);

}  // namespace orch::cli
