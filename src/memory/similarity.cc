#include "memory/similarity.h"

#include "util/strings.h"

namespace orch::memory {

namespace {

constexpr std::size_t kMinFuzzyBytes = 5;

double match(const std::string& x, const std::set<std::string>& s) {
  if (s.contains(x)) return 1.0;
  if (x.size() < kMinFuzzyBytes) return 0.0;
  for (const auto& y : s) {
    if (y.size() < kMinFuzzyBytes) continue;
    const std::size_t gap = x.size() > y.size() ? x.size() - y.size() : y.size() - x.size();
    if (gap <= 1 && edit_distance(x, y) == 1) return 0.5;
  }
  return 0.0;
}

}  // namespace

double stem_similarity(const std::set<std::string>& a, const std::set<std::string>& b) {
  if (a.empty() && b.empty()) return 0.0;
  double matched = 0;
  for (const auto& x : a) matched += match(x, b);
  for (const auto& y : b) matched += match(y, a);
  return matched / static_cast<double>(a.size() + b.size());
}

}  // namespace orch::memory
