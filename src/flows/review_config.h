// flows/review_config.h — RUN.yaml, the configuration of `orch review`, and the
// pre-flight that resolves everything before anything launches.
//
// load_review_config reads the file with every problem reported at once, each
// "FILE:LINE: FIELD: message" (route/table_reader.h: unknown keys with a
// did-you-mean, wrong types, missing required fields), then checks the result
// against schemas/review-config.schema.json (the copy built into orch) as a net:
// a document that passes the reader but not the schema is still refused.
//
// resolve_review_config is the pre-flight's work: every path is made absolute
// and checked (artifacts inside the workspace and readable, prompt files
// readable), every `{{field}}` of every lens prompt filled from `fields` (an
// unfilled one is an unresolved field), every worker and model found in the
// workers and models files, the rubric read. Every unresolved field is reported
// at once (exit 2), so a review never stops mid-run to ask.
//
// estimate_review_cost is the Pre-Flight Report's estimate: tokens per round and
// for max_rounds, and US dollars where the models file prices the calls.
//
// Pure over the file system (reads only); not thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "flows/review_score.h"
#include "orch/error.h"

namespace orch::flows {

inline constexpr int kMaxReviewers = 20;  // per lens
inline constexpr int kMaxRounds = 100;    // max_rounds and dry_rounds
inline constexpr int kMaxParallel = 256;

// Who plays a role: a worker (`worker: NAME`) or a model (`model: NAME`).
struct RoleConfig {
  std::string executor;  // "worker:NAME" or "llm:NAME"
  int line = 0;          // in RUN.yaml, for messages
};

struct LensConfig {
  std::string name;
  std::string prompt_file;  // as written; absolute after resolve
  std::string prompt;       // the prompt text with {{fields}} filled (after resolve)
  RoleConfig role;
  int line = 0;
};

struct ReviewConfig {
  std::string file;                    // RUN.yaml as given
  std::string name;                    // default: the file's stem
  std::vector<std::string> artifacts;  // workspace-relative, normalised (after resolve)
  std::vector<LensConfig> lenses;
  int reviewers = 1;                   // per lens
  std::optional<RoleConfig> judge;     // unset: off
  std::optional<RoleConfig> verifier;  // the claim verifier; required with a judge
  std::optional<RoleConfig> fixer;     // unset: off
  std::string verify;                  // shell command run after every fix; "" none
  int max_rounds = 5;
  int dry_rounds = 2;
  std::int64_t spend_cap_tokens = 500000;
  int max_parallel = 4;
  bool fresh_context = true;
  std::string rubric_file;   // "" = the shipped rubric; absolute after resolve
  std::string workers_file;  // "" = WORKSPACE/.orch/workers.yaml when present; absolute after resolve
  std::string models_file;   // likewise .orch/models.yaml
  nlohmann::json fields = nlohmann::json::object();  // name -> string: what the prompts' {{name}} need
  Rubric rubric;                                     // after resolve

  // Lines of the top-level keys, for the pre-flight's messages (0 when absent).
  int line_of(const std::string& key) const;
  std::vector<std::pair<std::string, int>> key_lines;
};

// Reads RUN.yaml. Fails (InvalidInput) with every problem, one per line.
Expected<ReviewConfig> load_review_config(const std::filesystem::path& file);
Expected<ReviewConfig> parse_review_config(const std::string& text, const std::string& file);

// The pre-flight: see above. `workers_flag`/`models_flag` (the CLI's --workers,
// --models) win over the file's keys. Fails (InvalidInput) naming every
// unresolved field, each "FILE:LINE: FIELD: message".
Expected<ReviewConfig> resolve_review_config(ReviewConfig config, const std::filesystem::path& workspace,
                                             const std::string& workers_flag, const std::string& models_flag);

// The resolved config as JSON (kept in the review document, so `--resume` goes
// on with exactly what was confirmed) and back.
nlohmann::json review_config_json(const ReviewConfig& config);
Expected<ReviewConfig> review_config_from_json(const nlohmann::json& doc);

struct CostEstimate {
  std::int64_t tokens_per_round = 0;    // every reviewer, the judge and the fixer once
  std::int64_t tokens_total = 0;        // x max_rounds (an upper bound: the loop may stop earlier)
  std::optional<double> usd_per_round;  // when every call is priced (models with prices)
  std::optional<double> usd_total;
  std::vector<std::string> notes;  // how it was estimated, what is not priced
};
CostEstimate estimate_review_cost(const ReviewConfig& config, const std::filesystem::path& workspace);

// The Pre-Flight Report: what will run, in which order, at what estimated cost.
std::string preflight_report(const ReviewConfig& config, const CostEstimate& cost,
                             const std::filesystem::path& workspace);

}  // namespace orch::flows
