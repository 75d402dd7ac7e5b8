// flows/task_engines.h — what the request runtime asks of the route and memory
// layers: classification with the capability gate, the engines of the stages
// orch runs itself, and the learning loop.
//
// Each engine is isolated: a failure (an Error, or an exception from a library)
// is recorded as {"status": "FAILED", "error": ...} under the trace's
// engine_results or learning_results and never ends the caller's operation.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flows/task_runtime.h"
#include "flows/task_trace.h"

namespace orch::flows {

// What the trace needs from classification (route layer) and the capability
// gate (memory similarity + registry coverage).
struct ClassifiedRequest {
  std::string intent;  // "" when ambiguous
  bool ambiguous = false;
  std::string complexity;
  std::string strategy;
  std::vector<TaskState> pipeline;
  std::vector<std::string> engines;
  std::vector<std::string> recall_tags;
  std::vector<nlohmann::json> verify;
  std::int64_t budget_tokens = 0;
  std::string llm;  // none | cache-first | required
  nlohmann::json classification = nlohmann::json::object();
  nlohmann::json engine_results = nlohmann::json::object();  // the gate's similarity lookup
  std::vector<std::string> intents;                          // the taxonomy, in tie-break order
};

// Classifies `request` (route tables of the workspace; an invalid table is an
// InvalidInput error naming FILE:LINE). `assume_intent` replaces the keyword
// verdict (it must be one of the taxonomy).
Expected<ClassifiedRequest> classify_request(TaskEnv& env, const std::string& request,
                                             const std::optional<std::string>& assume_intent);

// Runs the engines of `stage` (ROUTE, RECALL, SIMILARITY, PLAN) for the trace,
// recording each under engine_results; returns the note for the transition.
std::string run_stage_engines(TaskEnv& env, Trace& trace, TaskState stage);

// Harvest → fault ledger → reindex for a closed trace (its JSON already
// exported), recording each step under learning_results.
void run_learning_loop(TaskEnv& env, Trace& trace);

}  // namespace orch::flows
