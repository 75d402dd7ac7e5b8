#include "route/domains.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "util/strings.h"

namespace orch::route {

namespace {

std::string figure(double confidence) {
  return fmt::format("{:.2f}", confidence);
}

std::string described(const LabelScore& s) {
  std::vector<std::string> q;
  for (const auto& m : s.matched) q.push_back("'" + m + "'");
  return fmt::format("{} at {} ({})", s.name, figure(s.confidence), join(q, ", "));
}

}  // namespace

double confidence_of(const ConfidenceRules& rules, double weight) {
  return weight <= 0 ? 0.0 : 1.0 - std::exp(-weight / rules.scale);
}

LabelChoice choose_label(const std::vector<LabelSpec>& labels,
                         const std::vector<std::vector<std::string>>& ranks, const ConfidenceRules& rules,
                         const std::vector<std::string>& words, std::string_view what) {
  std::map<std::string, std::size_t> rank_of;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (const auto& name : ranks[r]) rank_of.emplace(name, r);
  auto rank = [&](const std::string& name) {
    auto it = rank_of.find(name);
    return it == rank_of.end() ? ranks.size() : it->second;
  };

  LabelChoice choice;
  for (const LabelSpec& label : labels) {
    auto hits = find_keywords(words, label.keywords);
    if (hits.empty()) continue;
    LabelScore score{label.name, 0, 0, {}};
    for (const auto& h : hits) {
      score.weight += h.keyword->weight;
      score.matched.push_back(h.matched);
    }
    score.confidence = confidence_of(rules, score.weight);
    choice.scores.push_back(std::move(score));
  }
  std::stable_sort(choice.scores.begin(), choice.scores.end(), [&](const LabelScore& a, const LabelScore& b) {
    if (a.confidence != b.confidence) return a.confidence > b.confidence;
    return rank(a.name) < rank(b.name);
  });

  if (choice.scores.empty()) {
    choice.reason = fmt::format("no {} word in the request", what);
    return choice;
  }
  const LabelScore& best = choice.scores.front();
  if (best.confidence < rules.threshold) {
    choice.reason = fmt::format("the best {}, {}, is below the threshold {}", what, described(best),
                                figure(rules.threshold));
    return choice;
  }
  std::vector<const LabelScore*> tied;
  for (const auto& s : choice.scores)
    if (s.confidence > rules.tie_floor && best.confidence - s.confidence <= rules.tie_margin)
      tied.push_back(&s);
  if (tied.size() <= 1) {
    choice.name = best.name;
    choice.confidence = best.confidence;
    choice.reason = described(best);
    if (choice.scores.size() > 1) choice.reason += "; next " + described(choice.scores[1]);
    return choice;
  }
  std::size_t top = ranks.size();
  for (const LabelScore* s : tied) top = std::min(top, rank(s->name));
  std::vector<const LabelScore*> winners;
  for (const LabelScore* s : tied)
    if (rank(s->name) == top) winners.push_back(s);  // in confidence order
  std::vector<std::string> tied_names;
  for (const LabelScore* s : tied) tied_names.push_back(described(*s));
  const std::string tie = fmt::format("{} tie (within {} of the best, above {})", join(tied_names, "; "),
                                      figure(rules.tie_margin), figure(rules.tie_floor));
  if (winners.size() > 1 && winners[0]->confidence == winners[1]->confidence) {
    std::vector<std::string> names;
    for (const LabelScore* s : winners)
      if (s->confidence == winners[0]->confidence) names.push_back(s->name);
    choice.reason = fmt::format("{}, and {} share a priority rank: undecided", tie, join(names, " and "));
    return choice;
  }
  choice.name = winners[0]->name;
  choice.confidence = winners[0]->confidence;
  choice.reason = fmt::format("{}; {} has the highest priority", tie, choice.name);
  return choice;
}

LabelChoice request_type_of(const RouteTables& tables, const std::vector<std::string>& words) {
  std::vector<std::vector<std::string>> ranks;  // the file's order
  for (const auto& t : tables.requests.request_types) ranks.push_back({t.name});
  return choose_label(tables.requests.request_types, ranks, tables.requests.confidence, words,
                      "request type");
}

LabelChoice domain_of(const RouteTables& tables, const std::vector<std::string>& words) {
  return choose_label(tables.requests.domains, tables.requests.domain_priority, tables.requests.confidence,
                      words, "domain");
}

}  // namespace orch::route
