#include "flows/cycle_lifecycle.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "util/strings.h"

namespace orch::flows {

namespace {

using json = nlohmann::json;

constexpr std::array<std::pair<MilestoneOutcome, const char*>, 6> kOutcomeWords{{
    {MilestoneOutcome::Stuck, "stuck"},
    {MilestoneOutcome::NoChange, "no-change"},
    {MilestoneOutcome::RejectedByScheduler, "rejected-by-scheduler"},
    {MilestoneOutcome::RejectedByReview, "rejected-by-review"},
    {MilestoneOutcome::BlockedByFormalizeFailure, "blocked-by-formalize-failure"},
    {MilestoneOutcome::ScopeViolation, "scope-violation"},
}};

// "nl_reviewed -> bound|aligned" → from, to...; "" when the text is not one.
std::optional<std::pair<std::string, std::vector<std::string>>> parse_move(const std::string& text) {
  const auto arrow = text.find("->");
  if (arrow == std::string::npos) return std::nullopt;
  std::string from(trim(std::string_view(text).substr(0, arrow)));
  std::vector<std::string> to;
  std::string_view rest = std::string_view(text).substr(arrow + 2);
  for (;;) {
    const auto bar = rest.find('|');
    std::string state(trim(rest.substr(0, bar)));
    if (state.empty()) return std::nullopt;
    to.push_back(std::move(state));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  if (from.empty() || to.empty()) return std::nullopt;
  return std::pair{std::move(from), std::move(to)};
}

}  // namespace

Expected<Lifecycle> Lifecycle::from_json(const json& doc) {
  std::vector<std::string> problems;
  Lifecycle l;
  if (!doc.is_object())
    return fail(ErrorCode::InvalidInput, "lifecycle: must be a mapping of states and stages");
  const json states = doc.value("states", json());
  if (!states.is_array() || states.empty())
    problems.push_back("lifecycle.states: must be a list of at least one state");
  std::set<std::string> seen;
  if (states.is_array())
    for (std::size_t i = 0; i < states.size(); ++i) {
      if (!states[i].is_string() || states[i].get<std::string>().empty()) {
        problems.push_back(fmt::format("lifecycle.states[{}]: must be a state's name", i));
        continue;
      }
      const std::string name = states[i].get<std::string>();
      if (!seen.insert(name).second)
        problems.push_back(fmt::format("lifecycle.states[{}]: '{}' is listed twice", i, name));
      l.states_.push_back(name);
    }
  const json stages = doc.value("stages", json());
  if (!stages.is_object() || stages.empty())
    problems.push_back("lifecycle.stages: must map each stage's name to \"FROM -> TO\" (TO|TO for a choice)");
  if (stages.is_object())
    for (auto it = stages.begin(); it != stages.end(); ++it) {
      const std::string field = "lifecycle.stages." + it.key();
      auto move = it.value().is_string() ? parse_move(it.value().get<std::string>()) : std::nullopt;
      if (!move) {
        problems.push_back(fmt::format("{}: must be \"FROM -> TO\" (TO|TO for a choice)", field));
        continue;
      }
      CycleStage stage{it.key(), move->first, move->second};
      const auto index = [&](const std::string& state) {
        auto at = std::find(l.states_.begin(), l.states_.end(), state);
        return at == l.states_.end() ? -1 : static_cast<int>(at - l.states_.begin());
      };
      if (index(stage.from) < 0)
        problems.push_back(fmt::format("{}: '{}' is not a state of lifecycle.states{}", field, stage.from,
                                       did_you_mean(stage.from, l.states_)));
      for (const std::string& to : stage.to) {
        if (index(to) < 0)
          problems.push_back(fmt::format("{}: '{}' is not a state of lifecycle.states{}", field, to,
                                         did_you_mean(to, l.states_)));
        else if (index(stage.from) >= 0 && index(to) <= index(stage.from))
          problems.push_back(fmt::format("{}: '{}' -> '{}' does not move forward in lifecycle.states", field,
                                         stage.from, to));
      }
      for (const CycleStage& other : l.stages_)
        if (other.from == stage.from)
          problems.push_back(
              fmt::format("{}: stage '{}' already moves items out of '{}'", field, other.name, stage.from));
      l.stages_.push_back(std::move(stage));
    }
  if (!problems.empty()) return fail(ErrorCode::InvalidInput, join(problems, "\n"));
  return l;
}

const CycleStage* Lifecycle::stage_for(std::string_view state) const {
  for (const CycleStage& s : stages_)
    if (s.from == state) return &s;
  return nullptr;
}

bool Lifecycle::legal(std::string_view from, std::string_view to) const {
  const CycleStage* s = stage_for(from);
  return s && std::find(s->to.begin(), s->to.end(), to) != s->to.end();
}

bool Lifecycle::known(std::string_view state) const {
  return std::find(states_.begin(), states_.end(), state) != states_.end();
}

const char* milestone_outcome_name(MilestoneOutcome outcome) {
  for (const auto& [o, word] : kOutcomeWords)
    if (o == outcome) return word;
  return "advanced";
}

std::optional<MilestoneOutcome> parse_milestone_outcome(std::string_view word, const Lifecycle& lifecycle) {
  for (const auto& [o, w] : kOutcomeWords)
    if (word == w) return o;
  if (lifecycle.known(word)) return MilestoneOutcome::Advanced;
  return std::nullopt;
}

bool counts_as_strike(MilestoneOutcome outcome) {
  return outcome != MilestoneOutcome::Advanced;
}

}  // namespace orch::flows
