// flows/review_plans.h — the plans of a review round's phases, and the files a
// fix may touch.
//
// Each phase of a round (docs/review.md, "A round") is a plan built here and run
// through the engine's phase runner: the reviewers (one step per lens and
// reviewer, on_failure continue), the judge, the claim verifier (one step per
// CRITICAL the judge added) and the fixer. Every plan's token budget is what is
// left of the spend cap. Every text orch passes (prompts, artifacts, findings,
// quotes, the verify command) is literal, never a placeholder. The fix step's
// `writes` are the artifacts and the files of the findings it is given, so the
// engine snapshots them first and rolls them back when the verify command fails.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flows/review_config.h"
#include "flows/review_finding.h"
#include "flows/review_run.h"

namespace orch::flows::review_run_detail {

// A round's phases, the last part of each phase run's owner key.
constexpr const char* kReviewersPhase = "reviewers";
constexpr const char* kJudgePhase = "judge";
constexpr const char* kClaimsPhase = "claims";
constexpr const char* kFixPhase = "fix";

// The name of a phase's run, for people ("review ID round N PHASE"); the
// review finds its runs by their owner key, never by this name.
std::string phase_run_name(const std::string& id, int round, const char* phase);

// The step id of reviewer k (1-based) of a lens: the lens's name when it has one reviewer.
std::string reviewer_step_id(const LensConfig& lens, int k, int reviewers);

nlohmann::ordered_json reviewers_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id,
                                      int round, const nlohmann::json& rounds, std::int64_t budget);
nlohmann::ordered_json judge_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id,
                                  int round, const std::vector<Finding>& reduced, std::int64_t budget);
nlohmann::ordered_json claims_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id,
                                   int round, const std::vector<Finding>& claims, std::int64_t budget);
nlohmann::ordered_json fix_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id, int round,
                                const std::vector<Finding>& to_fix, std::int64_t budget);

// Whether a finding on `file` may go to the fixer: the file is one the fix
// step's `writes` can snapshot and a rollback restore — inside the workspace (not
// the workspace itself) and outside orch's own folders (the ledger, the reports).
bool fixable_file(const ReviewEnv& env, const std::string& file);

// What the fix step may write: the artifacts and every file the fixer is given a
// finding on.
std::vector<std::string> fix_writes(const ReviewConfig& c, const std::vector<Finding>& to_fix);

// The content of a workspace file as a fingerprint: "" when it cannot be read
// (absent), so a file the fix creates or removes shows as changed.
std::string content_fingerprint(const ReviewEnv& env, const std::string& file);

// The files the fix must leave alone that the review can check cheaply: those of
// the review's findings (any round) that are not the fix's writes, with their
// content fingerprints.
nlohmann::json guarded_files(const ReviewEnv& env, const nlohmann::json& rounds,
                             const std::vector<std::string>& writes);

// The text the evidence of a finding is checked against: its file, "" when it
// is not a readable file of the workspace.
std::string file_text(const ReviewEnv& env, const std::string& file);

// The absolute spellings of the workspace a reviewer may write a path under: as
// given and with its symlinks resolved (a worker's getcwd() gives the latter).
std::vector<std::string> workspace_roots(const ReviewEnv& env);

}  // namespace orch::flows::review_run_detail
