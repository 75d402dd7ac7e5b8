// orch/plan.h — the plan model: a DAG of steps, as loaded from YAML/JSON.
//
// A Plan is plain data. It is produced by load_plan()/parse_plan() (plan_loader.h),
// checked by validate_plan() (validate.h), and consumed by the engine. Every field
// that came from a file remembers where (SourceLoc), so errors can name FILE:LINE.
// Strings that may hold placeholders (run, sh, inputs, env) are kept as written;
// placeholder.h parses and renders them. Plans are immutable once validated and
// safe to read from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "orch/field_lines.h"

namespace orch {

using Millis = std::chrono::milliseconds;

struct SourceLoc {
  std::string file;
  int line = 0;  // 1-based; 0 when unknown (a plan built in code)
};

// Limits for tokens, cost, wall time and attempts. Unset = unlimited.
struct BudgetLimits {
  std::optional<std::int64_t> tokens;
  std::optional<double> cost_usd;
  std::optional<Millis> wall;
  std::optional<int> attempts;
  bool empty() const { return !tokens && !cost_usd && !wall && !attempts; }
};

enum class PostKind {
  None,            // always holds
  ExitZero,        // the process exited 0 (the default for shell steps)
  ResultNonempty,  // the result has a non-whitespace character
  ResultContains,  // the result contains `text`
  ResultMatches,   // the result matches the PCRE2 regex `pattern`
  ResultJson,      // the result parses as JSON and validates against `schema`/`schema_path`
  FileExists,      // `path` exists inside the workspace
  FileContains,    // the file at `path` contains `text`
  ShellZero,       // `/bin/sh -c cmd` run in the workspace exits 0
};

// Canonical names as written in plans ("exit_zero", ...). parse returns nullopt for an unknown name.
const char* post_kind_name(PostKind kind);
std::optional<PostKind> parse_post_kind(std::string_view name);

struct Postcondition {
  PostKind kind = PostKind::None;
  std::string path;                      // file_exists, file_contains
  std::string text;                      // result_contains, file_contains
  std::string pattern;                   // result_matches
  std::optional<nlohmann::json> schema;  // result_json: inline JSON Schema
  std::string schema_path;               // result_json: schema file, relative to the plan file's folder
  std::string cmd;                       // shell_zero
  std::optional<Millis> timeout;         // shell_zero (default 60 s)
  SourceLoc loc;
};

enum class OnFailure { Abort, Continue };

// How much harm a step can do; the risk guard (engine) acts on it before dispatch:
// Low runs; Medium needs a confirmation; High an approval naming the step;
// Critical is refused, always. Ordered: a higher value is riskier.
enum class RiskLevel { Low, Medium, High, Critical };
const char* risk_level_name(RiskLevel level);  // "low", "medium", "high", "critical"
std::optional<RiskLevel> parse_risk_level(std::string_view name);  // case-insensitive

struct Step {
  std::string id;
  std::string goal;
  std::vector<std::string> deps;
  std::string executor = "shell";  // "shell", "builtin:echo", "builtin:json", later "llm", "tool:X", "worker:X"
  std::vector<std::string> run;    // argv; each element a template (placeholder.h)
  std::optional<std::string> sh;   // a script for /bin/sh -c; placeholders become shell variables
  // Named values; string leaves are templates. Exported to shell steps as ORCH_IN_<NAME>.
  nlohmann::ordered_json inputs = nlohmann::ordered_json::object();
  std::map<std::string, std::string> env;  // values are templates
  std::optional<Millis> timeout;           // per attempt
  std::optional<int> attempts;             // max attempts (counted), default from Plan::defaults
  std::optional<Millis> retry_delay;
  std::optional<std::int64_t> max_output;  // cap per output stream in bytes
  BudgetLimits budget;
  std::vector<Postcondition> post;  // all must hold; empty = executor default (exit_zero for shell)
  std::vector<std::string> writes;  // workspace paths snapshotted before each attempt
  // `runs-on`: the labels a worker must have to take the step, in a run executed
  // by `orch worker` processes (docs/workers-distributed.md); a local run runs
  // it here.
  std::vector<std::string> runs_on;
  std::optional<std::string> output;  // result = this file's content instead of stdout
  // Declared risk; the executor may raise it (a registry tool's own level), never lower it.
  std::optional<RiskLevel> risk;
  // `when:` — a condition on what earlier steps did (docs/plan-format.md,
  // "Conditions"); false: the step is skipped, not run. Unset: always run.
  std::optional<std::string> when;
  int index = 0;                      // position in Plan::steps (the #E<idx> number)
  // The loader could not read the step's command (`run` or `sh`) and said so:
  // validation does not report it again as missing or empty. (A flag, not a set of
  // names: a 100,000-step plan pays for it in every step.)
  bool command_unread = false;
  SourceLoc loc;                      // where the step starts
  FieldLines field_lines;             // where each field of the step was written (orch/field_lines.h)
};

struct PlanDefaults {
  int attempts = 1;
  std::optional<Millis> timeout;
  Millis retry_delay{0};
  std::int64_t max_output = 16 * 1024 * 1024;
  Millis kill_grace{2000};  // SIGTERM → SIGKILL grace period
};

struct Plan {
  std::string name;
  std::string source_path;      // the file the plan came from ("" if built in code)
  std::optional<int> concurrency;  // unset: the number of CPUs
  OnFailure on_failure = OnFailure::Abort;
  BudgetLimits budget;
  PlanDefaults defaults;
  std::vector<Step> steps;
  bool from_stepspec = false;  // loaded from the seed's StepSpec JSON list
  // Where each plan-level field was written ("concurrency", "budget.tokens",
  // "defaults.attempts", "steps"), so validation can name the line.
  FieldLines field_lines;

  const Step* find_step(std::string_view id) const;
};

}  // namespace orch
