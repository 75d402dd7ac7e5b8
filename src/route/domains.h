// route/domains.h — a request's type and domain, each with a real confidence (seed 004).
//
// Request types (query, action, workflow, research, audit) and domains (the
// example table: system, vault, github, papers, watch, projects) come from
// requests.yaml. Each is scored on the keywords the request holds — whole words
// only, each keyword once, with its weight:
//
//   confidence = 1 − exp(−(sum of weights) / scale)
//
// which is 0 with no word, grows with every word and never reaches 1. It is not
// divided by the best score, so "the best of weak candidates" is still weak.
// The choice (choose_label):
//   1. no candidate scored → undecided: "no domain word in the request" (never a
//      fallback to some domain);
//   2. the best confidence below `threshold` (0.6) → undecided, naming the best;
//   3. candidates above `tie_floor` (0.5) within `tie_margin` of the best are a
//      tie: the one of the highest priority rank wins (domains: domain_priority,
//      system first; request types: their order in the file); among candidates of
//      that rank the higher confidence wins, and an exact tie there is undecided.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "route/tables.h"

namespace orch::route {

struct LabelScore {
  std::string name;
  double weight = 0;      // the sum of the weights of the keywords found
  double confidence = 0;  // 1 − exp(−weight / scale)
  std::vector<std::string> matched;
};

struct LabelChoice {
  std::string name;  // empty when undecided
  double confidence = 0;
  std::vector<LabelScore> scores;  // every candidate with a keyword found, best first
  std::string reason;              // why this one, or why none
  bool decided() const { return !name.empty(); }
};

double confidence_of(const ConfidenceRules& rules, double weight);

// Scores `labels` on `words` and chooses by the rules above. `ranks` lists the
// priority ranks, highest first (each a list of names); `what` names the kind of
// label in reasons ("domain", "request type").
LabelChoice choose_label(const std::vector<LabelSpec>& labels,
                         const std::vector<std::vector<std::string>>& ranks, const ConfidenceRules& rules,
                         const std::vector<std::string>& words, std::string_view what);

LabelChoice request_type_of(const RouteTables& tables, const std::vector<std::string>& words);
LabelChoice domain_of(const RouteTables& tables, const std::vector<std::string>& words);

}  // namespace orch::route
