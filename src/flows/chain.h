// flows/chain.h — `orch chain`: a linear sequence of tool or worker calls with
// abort-on-failure, run by the engine (docs/chains.md).
//
// A chain is a list of steps ({executor, inputs, ...}). build_chain turns it into
// an ordinary Plan — step n+1 depends on step n, on_failure abort, concurrency 1 —
// so scheduling, retries, budgets, the risk guard, persistence and resume are the
// engine's. What the chain adds:
//   * the step limit (default 5): a longer chain is refused with
//     chain_limit_exceeded before anything runs or is written; never truncated;
//   * passing the output of step n to step n+1: `${previous.result}` and
//     `${previous.json.PATH}` in any template of a step, and, unless the step
//     says `pass_previous: false`, an implicit channel that depends on the
//     executor (input `previous` for workers and builtin:json, a paragraph at the
//     end of an llm prompt, the environment variable ORCH_CHAIN_PREVIOUS for
//     tool and shell steps);
//   * the report: the skill output contract (schemas/skill-output.schema.json),
//     built from the ledger only, so it can be rebuilt for a chain run at any time.
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "orch/engine.h"
#include "orch/error.h"
#include "orch/executor.h"
#include "orch/plan.h"
#include "orch/store.h"

namespace orch::flows {

// A chain report's status (the skill output contract's word for the chain):
// success, running, awaiting_approval, interrupted, cancelled, partial (some
// steps done, then a failure), error, dry_run.
enum class ChainStatus { Success, Running, AwaitingApproval, Interrupted, Cancelled, Partial, Error, DryRun };
const char* chain_status_name(ChainStatus status);
std::optional<ChainStatus> parse_chain_status(std::string_view name);

constexpr int kDefaultChainMaxSteps = 5;
// The marker key of a chain's plan (plans ignore `x-` keys): {"version": 1, "max_steps": N}.
constexpr const char* kChainPlanKey = "x-orch-chain";

// Why a chain was refused before anything ran.
struct ChainRefusal {
  std::string code;     // "chain_limit_exceeded" or "invalid_chain"
  std::string message;  // one line for people
  std::vector<std::string> problems;  // every problem, "step 2 ('count'): inputs: ..."
};

template <class T>
using ChainExpected = std::expected<T, ChainRefusal>;

// The chain as read from --steps: the JSON array and where it came from.
struct ChainInput {
  nlohmann::ordered_json steps;
  std::string source;  // the file ("" when given inline)
};

// `arg` is inline JSON when its first non-blank character is '[' or '{',
// otherwise a file: YAML when it ends in .yaml/.yml, else JSON.
ChainExpected<ChainInput> read_chain_input(const std::string& arg);

struct ChainOptions {
  std::shared_ptr<ExecutorRegistry> executors;  // required: the names steps may use
  std::filesystem::path workspace = ".";
  int max_steps = kDefaultChainMaxSteps;
  // The whole chain's budget (the plan's `budget`): tokens and cost, failed
  // attempts included; when it runs out no further step starts.
  std::optional<std::int64_t> budget_tokens;
  std::optional<double> budget_cost_usd;
};

struct Chain {
  Plan plan;         // validated; steps[i] depends on steps[i-1]
  std::string text;  // the plan as JSON: what the run stores (so `orch resume` works)
  int max_steps = kDefaultChainMaxSteps;
};

// Checks the limit first (a longer chain: chain_limit_exceeded), then every
// step's fields, then builds and validates the plan; all problems are collected.
ChainExpected<Chain> build_chain(const ChainInput& input, const ChainOptions& options);

// Every --approve ID names a step of the chain (as the engine checks for a run), else
// invalid_chain naming the first that does not, with a guess. Asked before a dry run and
// before the ledger is opened, so a refused chain records nothing.
ChainExpected<void> check_approvals(const Chain& chain, const std::vector<std::string>& approve);

// Runs the chain as a new run of the engine (options.executors and workspace are
// those of the chain; approval flags and progress as the caller sets them).
Expected<RunOutcome> run_chain(Store& store, const Chain& chain, EngineOptions options);

// The skill-output report of chain run `run_id`, read from the ledger (the plan
// version stored, steps, attempts). An InvalidInput error when the run is not a chain.
Expected<nlohmann::ordered_json> build_chain_report(Store& store, const std::string& run_id,
                                                    const ExecutorRegistry& executors);

// What would run: each step with its executor, risk, what the risk guard would
// do given the approvals, and the command (Executor::describe). Runs and writes nothing.
struct DryRunOptions {
  std::filesystem::path workspace = ".";
  std::set<std::string> approve_steps;
  bool approve_medium = false;
};
nlohmann::ordered_json chain_dry_run_report(const Chain& chain, const ExecutorRegistry& executors,
                                            const DryRunOptions& options);

// The report of a chain that did not run: status "error" and `code`.
nlohmann::ordered_json chain_error_report(const std::string& code, const std::string& message, int max_steps,
                                          const std::vector<std::string>& problems = {});

// The report for people: one line per step, then the totals and the error.
std::string format_chain_report(const nlohmann::ordered_json& report);

// The exit code a report stands for (docs/cli.md): 0 success or dry run, 1 partial
// or error after running, 2 refused, 3 awaiting approval, 4 budget, 130 interrupted.
int chain_exit_code(const nlohmann::ordered_json& report);

}  // namespace orch::flows
