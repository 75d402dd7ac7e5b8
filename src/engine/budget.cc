#include "engine/budget.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "util/strings.h"

namespace orch {

std::string budget_limits_json(const BudgetLimits& b) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (b.tokens) j["tokens"] = *b.tokens;
  if (b.cost_usd) j["cost_usd"] = *b.cost_usd;
  if (b.wall) j["wall_ms"] = b.wall->count();
  if (b.attempts) j["attempts"] = *b.attempts;
  return j.dump();
}

BudgetLimits budget_limits_from_json(const std::string& text) {
  BudgetLimits b;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return b;
  if (auto it = j.find("tokens"); it != j.end() && it->is_number_integer())
    b.tokens = it->get<std::int64_t>();
  if (auto it = j.find("cost_usd"); it != j.end() && it->is_number()) b.cost_usd = it->get<double>();
  if (auto it = j.find("wall_ms"); it != j.end() && it->is_number_integer())
    b.wall = std::chrono::milliseconds(it->get<std::int64_t>());
  if (auto it = j.find("attempts"); it != j.end() && it->is_number_integer()) b.attempts = it->get<int>();
  return b;
}

std::string overspent_reason(const std::string& overspent, bool figures_said) {
  return fmt::format(
      "over the plan's budget{} (an attempt reserves its step's own budget, or else its executor's "
      "estimate, 0 for shell steps, and may report spending more than it reserved)",
      figures_said ? "" : ": " + overspent);
}

namespace {
// The most one attempt can have used: far beyond any real call, and small enough
// that no sum of them overflows the ledger's 64-bit totals.
constexpr std::int64_t kMaxAttemptTokens = 1'000'000'000'000;
constexpr double kMaxAttemptCostUsd = 1e9;
}  // namespace

std::optional<std::string> impossible_spend(std::int64_t tokens_in, std::int64_t tokens_out,
                                            double cost_usd) {
  auto bad = [](std::int64_t tokens) { return tokens < 0 || tokens > kMaxAttemptTokens; };
  if (bad(tokens_in) || bad(tokens_out))
    return fmt::format("the attempt reported an impossible token count (in {}, out {}; each must be 0 to {})",
                       tokens_in, tokens_out, kMaxAttemptTokens);
  if (!std::isfinite(cost_usd) || cost_usd < 0 || cost_usd > kMaxAttemptCostUsd)
    return fmt::format("the attempt reported an impossible cost ({}; must be $0 to ${:.0f})", cost_usd,
                       kMaxAttemptCostUsd);
  return std::nullopt;
}

std::filesystem::path usage_folder(const std::filesystem::path& store_folder, const std::string& run_id) {
  return store_folder / "runs" / run_id / "usage";
}

std::filesystem::path usage_file(const std::filesystem::path& store_folder, const std::string& run_id,
                                 const std::string& step_id, int number) {
  return usage_folder(store_folder, run_id) / fmt::format("{}.{}.json", step_id, number);
}

BudgetGuard::BudgetGuard(BudgetLimits limits, Spend spent, std::int64_t wall_ms_before)
    : limits_(limits), spent_(spent), wall_before_(wall_ms_before) {}

std::optional<std::string> BudgetGuard::shortfall(const Spend& r, std::int64_t wall_ms_now) const {
  if (auto why = exhausted(wall_ms_now)) return why;
  if (limits_.attempts && spent_.attempts + reserved_.attempts + r.attempts > *limits_.attempts)
    return fmt::format("attempts: {} made + {} running + {} > limit {}", spent_.attempts, reserved_.attempts,
                       r.attempts, *limits_.attempts);
  if (limits_.tokens && spent_.tokens + reserved_.tokens + r.tokens > *limits_.tokens)
    return fmt::format("tokens: {} spent + {} reserved + {} needed > limit {}", spent_.tokens, reserved_.tokens,
                       r.tokens, *limits_.tokens);
  if (limits_.cost_usd && spent_.cost_usd + reserved_.cost_usd + r.cost_usd > *limits_.cost_usd + 1e-12)
    return fmt::format("cost: {} spent + {} reserved + {} needed > limit {}", dollars(spent_.cost_usd),
                       dollars(reserved_.cost_usd), dollars(r.cost_usd), dollars(*limits_.cost_usd));
  return std::nullopt;
}

void BudgetGuard::reserve(const Spend& r) {
  reserved_.tokens += r.tokens;
  reserved_.cost_usd += r.cost_usd;
  reserved_.attempts += r.attempts;
}

void BudgetGuard::settle(const Spend& r, const Spend& actual) {
  reserved_.tokens -= r.tokens;
  reserved_.cost_usd -= r.cost_usd;
  reserved_.attempts -= r.attempts;
  spent_.tokens += actual.tokens;
  spent_.cost_usd += actual.cost_usd;
  spent_.attempts += actual.attempts;
}

std::optional<std::string> BudgetGuard::overspent() const {
  std::vector<std::string> over;
  if (limits_.tokens && spent_.tokens > *limits_.tokens)
    over.push_back(fmt::format("tokens: {} spent of {}", spent_.tokens, *limits_.tokens));
  if (limits_.cost_usd && spent_.cost_usd > *limits_.cost_usd + 1e-12)
    over.push_back(fmt::format("cost: {} spent of {}", dollars(spent_.cost_usd), dollars(*limits_.cost_usd)));
  if (over.empty()) return std::nullopt;
  return over.size() == 1 ? over[0] : over[0] + ", " + over[1];
}

std::optional<std::string> BudgetGuard::exhausted(std::int64_t wall_ms_now) const {
  // A zero spend never exhausts: a budget of 0 tokens still admits steps that cost none.
  if (limits_.tokens && spent_.tokens > 0 && spent_.tokens >= *limits_.tokens)
    return fmt::format("tokens: {} spent of {}", spent_.tokens, *limits_.tokens);
  if (limits_.cost_usd && spent_.cost_usd > 0 && spent_.cost_usd >= *limits_.cost_usd)
    return fmt::format("cost: {} spent of {}", dollars(spent_.cost_usd), dollars(*limits_.cost_usd));
  if (limits_.attempts && spent_.attempts >= *limits_.attempts)
    return fmt::format("attempts: {} made of {}", spent_.attempts, *limits_.attempts);
  if (limits_.wall && wall_before_ + wall_ms_now >= limits_.wall->count())
    return fmt::format("wall: {} ms used of {} ms", wall_before_ + wall_ms_now, limits_.wall->count());
  return std::nullopt;
}

std::optional<std::int64_t> BudgetGuard::wall_left(std::int64_t wall_ms_now) const {
  if (!limits_.wall) return std::nullopt;
  return limits_.wall->count() - wall_before_ - wall_ms_now;
}

std::optional<std::int64_t> BudgetGuard::tokens_left() const {
  if (!limits_.tokens) return std::nullopt;
  return *limits_.tokens - spent_.tokens - reserved_.tokens;
}

}  // namespace orch
