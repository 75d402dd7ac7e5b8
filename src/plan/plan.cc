#include "orch/plan.h"

#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace orch {

namespace {
constexpr std::array<std::pair<PostKind, const char*>, 9> kPostKinds{{
    {PostKind::None, "none"},
    {PostKind::ExitZero, "exit_zero"},
    {PostKind::ResultNonempty, "result_nonempty"},
    {PostKind::ResultContains, "result_contains"},
    {PostKind::ResultMatches, "result_matches"},
    {PostKind::ResultJson, "result_json"},
    {PostKind::FileExists, "file_exists"},
    {PostKind::FileContains, "file_contains"},
    {PostKind::ShellZero, "shell_zero"},
}};
}  // namespace

const char* post_kind_name(PostKind kind) {
  for (const auto& [k, name] : kPostKinds)
    if (k == kind) return name;
  return "none";
}

std::optional<PostKind> parse_post_kind(std::string_view name) {
  for (const auto& [k, n] : kPostKinds)
    if (name == n) return k;
  return std::nullopt;
}

const char* risk_level_name(RiskLevel level) {
  switch (level) {
    case RiskLevel::Low:
      return "low";
    case RiskLevel::Medium:
      return "medium";
    case RiskLevel::High:
      return "high";
    case RiskLevel::Critical:
      return "critical";
  }
  return "critical";
}

std::optional<RiskLevel> parse_risk_level(std::string_view name) {
  std::string lower(name);
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (RiskLevel l : {RiskLevel::Low, RiskLevel::Medium, RiskLevel::High, RiskLevel::Critical})
    if (lower == risk_level_name(l)) return l;
  return std::nullopt;
}

const Step* Plan::find_step(std::string_view id) const {
  for (const auto& s : steps)
    if (s.id == id) return &s;
  return nullptr;
}

}  // namespace orch
