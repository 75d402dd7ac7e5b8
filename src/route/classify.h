// route/classify.h — a request's intent, complexity, strategy and pipeline (seed 000).
//
// classify() reads only the tables (tables.h) and the words of the request
// (words.h); it decides nothing the tables do not say:
//   * intent: each intent scores one hit per keyword found (whole words only);
//     the most hits win, a tie goes to the intent written first in intents.yaml
//     (seed 000's order, quick_fix first); no hit at all → ambiguous, and the
//     runtime must ask;
//   * complexity (complexity.yaml): the intent's base level (`default` when
//     ambiguous); more than long_request_words words or any complex word →
//     complex; otherwise any trivial word → trivial, never below the intent's min;
//   * budget: budgets.yaml's figure for the intent when it has one (research),
//     else the complexity's;
//   * engines and the VERIFY checklist: the intent's; recall tags: the request's
//     content words (intents.yaml's recall_tags rule).
// The strategy also depends on the capability gate (model_need): strategy_for.
//
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "route/tables.h"

namespace orch::route {

struct IntentScore {
  std::string intent;
  int hits = 0;                      // keywords found, each once
  std::vector<std::string> matched;  // the request's words that hit ("fixing", "memory leak")
};

struct Classification {
  std::string intent;               // empty when ambiguous
  bool ambiguous = false;           // zero keyword hits
  std::string intent_reason;        // why this intent (a tie and how it was broken), or why none
  std::vector<IntentScore> scores;  // every intent with hits > 0, best first (ties in table order)
  std::string complexity;           // trivial | standard | complex
  std::vector<std::string> complexity_reasons;
  std::int64_t word_count = 0;
  std::vector<std::string> engines;      // from the intent table
  std::vector<std::string> recall_tags;  // content words useful for recall
  std::int64_t budget_tokens = 0;        // by complexity (or the intent's own figure: research)
  std::vector<ChecklistItem> verify;     // the intent's checklist; empty when ambiguous
};

Classification classify(const RouteTables& tables, std::string_view request);
// As classify, but with `intent` (a name of the intents table) taken as the
// intent whatever the keywords say (`orch task --assume`): its complexity base,
// budget, engines and checklist. The keyword scores are kept for the record.
Classification classify_as(const RouteTables& tables, std::string_view request, const std::string& intent);

// The capability gate's answer: "none", "cache-first", "required".
enum class ModelNeed { None, CacheFirst, Required };
const char* model_need_name(ModelNeed need);

// The gate of issue 4, in its order: a trivial request that a registry tool
// fully covers (tool_route.h) → none; a similar closed trace or note
// (similarity >= 0.6, found by the caller's recall) → cache-first; else
// required. The tool comes first: cache-first still asks a model, and a request
// a tool answers without one must not need a model because it was done before.
ModelNeed model_need(bool similar_found, std::string_view complexity, bool covered_by_tool);

// "tool-direct" (strategies.yaml's no_model) when `need` is None, else the
// complexity's strategy; "" when `complexity` is not a level.
std::string strategy_for(const RouteTables& tables, std::string_view complexity, ModelNeed need);
// The strategy's stages, in order; empty for an unknown strategy.
std::vector<std::string> pipeline_for(const RouteTables& tables, std::string_view strategy);

}  // namespace orch::route
