// engine/budget.h — reserve-then-settle accounting of a run's budgets.
//
// Before a step is dispatched the engine reserves what its attempt may spend
// (the step's declared budget, or its executor's estimate) plus one attempt; the
// step starts only if the plan's remaining budget covers spent + reserved + this
// reservation. After the attempt the reservation is released and the actual
// figures are charged (failed attempts too). So a wave of parallel steps can
// never overshoot a budget through dispatch; only an executor that spends more
// than it reserved can, and then the run stops at once.
// Wall time is the time the run has been driven, summed over resumes.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "orch/plan.h"

namespace orch {

struct Spend {
  std::int64_t tokens = 0;
  double cost_usd = 0;
  std::int64_t attempts = 0;
};

class BudgetGuard {
 public:
  BudgetGuard(BudgetLimits limits, Spend spent, std::int64_t wall_ms_before);

  // nullopt when `reservation` fits in what is left; otherwise why not
  // ("tokens: 900 spent + 200 reserved + 150 needed > 1000").
  std::optional<std::string> shortfall(const Spend& reservation, std::int64_t wall_ms_now) const;
  void reserve(const Spend& reservation);
  // Releases `reservation` and charges `actual`.
  void settle(const Spend& reservation, const Spend& actual);

  // Non-empty when what was actually spent already reaches a limit.
  std::optional<std::string> exhausted(std::int64_t wall_ms_now) const;
  // Non-empty when what was actually spent is beyond a tokens or cost limit
  // ("tokens: 300 spent of 100"): steps that reserved less than they spent (a
  // step with no budget of its own and an executor that estimates 0 reserves
  // nothing) ran in parallel past it.
  std::optional<std::string> overspent() const;
  // Milliseconds of wall budget left (nullopt: unlimited).
  std::optional<std::int64_t> wall_left(std::int64_t wall_ms_now) const;
  // Tokens neither spent nor reserved (nullopt: no token limit; may be below 0
  // after an overspend).
  std::optional<std::int64_t> tokens_left() const;

  const Spend& spent() const { return spent_; }
  const BudgetLimits& limits() const { return limits_; }
  std::int64_t wall_ms_before() const { return wall_before_; }

 private:
  BudgetLimits limits_;
  Spend spent_;
  Spend reserved_;
  std::int64_t wall_before_ = 0;
};

// The limits as the ledger keeps them (runs.budget_json): a JSON object with
// only the keys that are set, of tokens, cost_usd, wall_ms, attempts.
std::string budget_limits_json(const BudgetLimits& limits);

// The limits read back from budget_limits_json()'s text (keys it does not know,
// or of the wrong type, are left unset).
BudgetLimits budget_limits_from_json(const std::string& text);

// The run's reason and budget_overspent event for a run that ended past its
// plan's budget, from BudgetGuard::overspent()'s "tokens: 180 spent of 100";
// `figures_said`: the run's reason already gives them (the budget that ran out),
// so they are left out.
std::string overspent_reason(const std::string& overspent, bool figures_said = false);

// Why the spend an attempt reported cannot be real (a negative or absurd token
// count, a cost that is not a finite non-negative number), or nullopt: such a
// figure is never charged.
std::optional<std::string> impossible_spend(std::int64_t tokens_in, std::int64_t tokens_out, double cost_usd);

// Where attempt `number` of `step_id` may report its usage (ORCH_USAGE_FILE):
// <store>/runs/<run>/usage/<step>.<number>.json. Read when the attempt ends, or
// by the resume or cancel that closes an attempt whose driver died.
std::filesystem::path usage_folder(const std::filesystem::path& store_folder, const std::string& run_id);
std::filesystem::path usage_file(const std::filesystem::path& store_folder, const std::string& run_id,
                                 const std::string& step_id, int number);

}  // namespace orch
