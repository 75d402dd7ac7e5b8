// flows/review_score.h — the quality score of a review, from a rubric file.
//
// The rubric (data/review/rubric.yaml, built into orch; docs/review.md) says
// how many points each severity costs and names thresholds:
//   version: 1                       # optional; only 1 exists
//   deductions: {CRITICAL: 25, MAJOR: 10, MINOR: 3, NIT: 1}   # all four, >= 0
//   thresholds: {excellent: 95, good: 90, acceptable: 80}     # name -> 0..100, at least one
// parse_rubric reports every problem of the file at once, each
// "FILE:LINE: FIELD: message" (route/table_reader.h).
//
// quality_score: 100 minus the deductions of the findings that count for the
// gate (review_gate.h: verified, not refuted), never below 0; its band is the
// name of the highest threshold the score reaches, or "below <lowest name>".
//
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flows/review_finding.h"
#include "orch/error.h"

namespace orch::flows {

struct Rubric {
  std::array<int, 4> deductions{};                      // by Severity (Critical = 0)
  std::vector<std::pair<std::string, int>> thresholds;  // highest minimum first
};

// Fails (InvalidInput) with the problems, one per line.
Expected<Rubric> parse_rubric(std::string_view text, const std::string& file);
// The rubric built into orch (data/review/rubric.yaml); fails only if it is broken.
Expected<Rubric> shipped_rubric();

struct QualityScore {
  int score = 100;   // 0..100
  std::string band;  // "good", or "below acceptable"
};

QualityScore quality_score(const std::vector<Finding>& findings, const Rubric& rubric);

}  // namespace orch::flows
