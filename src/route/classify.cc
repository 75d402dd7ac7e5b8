#include "route/classify.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "util/strings.h"

namespace orch::route {

namespace {

bool all_digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// True when the single word `w` is one of `keywords` (a word or one of its forms).
bool is_keyword(const std::string& w, const std::vector<Keyword>& keywords) {
  const std::vector<std::string> one{w};
  return std::any_of(keywords.begin(), keywords.end(), [&](const Keyword& k) {
    return k.phrase.size() <= 1 && find_keyword(one, k).has_value();
  });
}

std::string quoted_list(const std::vector<std::string>& words) {
  std::vector<std::string> q;
  for (const auto& w : words) q.push_back("'" + w + "'");
  return join(q, ", ");
}

void score_intents(const RouteTables& tables, const std::vector<std::string>& words, Classification& c) {
  // A phrase that occurs claims its words from every intent's single-word
  // keywords ("memory leak" is bug_fix's, not also security's "leak").
  std::vector<const std::vector<Keyword>*> lists;
  for (const IntentSpec& intent : tables.intents) lists.push_back(&intent.keywords);
  const auto all_hits = find_keywords_claiming(words, lists);
  for (std::size_t n = 0; n < tables.intents.size(); ++n) {
    const IntentSpec& intent = tables.intents[n];
    const auto& hits = all_hits[n];
    if (hits.empty()) continue;
    IntentScore score{intent.name, static_cast<int>(hits.size()), {}};
    for (const auto& h : hits) score.matched.push_back(h.matched);
    c.scores.push_back(std::move(score));
  }
  // Stable: equal hits keep the table's order (seed 000's: quick_fix first).
  std::stable_sort(c.scores.begin(), c.scores.end(),
                   [](const auto& a, const auto& b) { return a.hits > b.hits; });
  if (c.scores.empty()) {
    c.ambiguous = true;
    c.intent_reason = "no keyword of any intent in the request (intents.yaml): ask what kind of work it is";
    return;
  }
  const IntentScore& best = c.scores.front();
  c.intent = best.intent;
  std::vector<std::string> tied;
  for (const auto& s : c.scores)
    if (s.hits == best.hits) tied.push_back(s.intent);
  const std::string hits =
      fmt::format("{} hit{} ({})", best.hits, best.hits == 1 ? "" : "s", quoted_list(best.matched));
  c.intent_reason = tied.size() == 1
                        ? hits
                        : fmt::format("{} tie at {}; {} comes first in intents.yaml (seed 000's order)",
                                      join(tied, ", "), hits, best.intent);
}

void rate_complexity(const RouteTables& tables, const std::vector<std::string>& words, Classification& c) {
  const ComplexityRules& rules = tables.complexity;
  IntentComplexity ic{rules.default_level, Complexity::Trivial};
  if (auto it = rules.by_intent.find(c.intent); !c.ambiguous && it != rules.by_intent.end()) ic = it->second;
  Complexity level = ic.base;
  c.complexity_reasons.push_back(c.ambiguous
                                     ? fmt::format("ambiguous request: {}", complexity_name(level))
                                     : fmt::format("intent {}: {}", c.intent, complexity_name(level)));
  const bool long_request = c.word_count > rules.long_request_words;
  if (long_request)
    c.complexity_reasons.push_back(
        fmt::format("{} words (more than {}): complex", c.word_count, rules.long_request_words));
  const auto complex_hits = find_keywords(words, rules.complex_words);
  for (const auto& h : complex_hits)
    c.complexity_reasons.push_back(fmt::format("complex word '{}'", h.matched));
  if (long_request || !complex_hits.empty()) {
    level = Complexity::Complex;
  } else if (auto trivial_hits = find_keywords(words, rules.trivial_words); !trivial_hits.empty()) {
    for (const auto& h : trivial_hits)
      c.complexity_reasons.push_back(fmt::format("trivial word '{}'", h.matched));
    level = std::max(Complexity::Trivial, ic.min);
    if (ic.min > Complexity::Trivial)
      c.complexity_reasons.push_back(
          fmt::format("intent {} is never below {}", c.intent, complexity_name(ic.min)));
  }
  c.complexity = complexity_name(level);
  const BudgetTable& budgets = tables.budgets;
  if (auto it = budgets.by_intent.find(c.intent); !c.ambiguous && it != budgets.by_intent.end()) {
    c.budget_tokens = it->second;
  } else if (auto lv = budgets.by_complexity.find(level); lv != budgets.by_complexity.end()) {
    c.budget_tokens = lv->second;
  }
}

std::vector<std::string> recall_tags(const RouteTables& tables, const std::vector<std::string>& words) {
  const RecallTagRules& rules = tables.recall_tags;
  std::vector<std::string> tags;
  std::set<std::string> seen;
  for (const std::string& w : words) {
    if (tags.size() >= rules.max_tags) break;
    if (static_cast<std::size_t>(count_code_points(w)) < rules.min_length || all_digits(w) ||
        seen.contains(w))
      continue;
    if (std::find(rules.stopwords.begin(), rules.stopwords.end(), w) != rules.stopwords.end()) continue;
    bool keyword =
        is_keyword(w, tables.complexity.complex_words) || is_keyword(w, tables.complexity.trivial_words);
    for (const IntentSpec& intent : tables.intents) keyword = keyword || is_keyword(w, intent.keywords);
    if (keyword) continue;
    seen.insert(w);
    tags.push_back(w);
  }
  return tags;
}

}  // namespace

Classification classify(const RouteTables& tables, std::string_view request) {
  Classification c;
  const std::vector<std::string> words = words_of(request);
  c.word_count = static_cast<std::int64_t>(words.size());
  score_intents(tables, words, c);
  rate_complexity(tables, words, c);
  if (const IntentSpec* intent = tables.find_intent(c.intent)) c.engines = intent->engines;
  if (auto it = tables.checklists.find(c.intent); it != tables.checklists.end()) c.verify = it->second;
  c.recall_tags = recall_tags(tables, words);
  return c;
}

Classification classify_as(const RouteTables& tables, std::string_view request, const std::string& intent) {
  Classification c;
  const std::vector<std::string> words = words_of(request);
  c.word_count = static_cast<std::int64_t>(words.size());
  score_intents(tables, words, c);  // kept: what the words said, for the record
  const std::string said = c.ambiguous ? std::string("no keyword matched") : "the keywords said " + c.intent;
  c.intent = intent;
  c.ambiguous = false;
  c.intent_reason = fmt::format("{} assumed (--assume); {}", intent, said);
  rate_complexity(tables, words, c);
  if (const IntentSpec* spec = tables.find_intent(c.intent)) c.engines = spec->engines;
  if (auto it = tables.checklists.find(c.intent); it != tables.checklists.end()) c.verify = it->second;
  c.recall_tags = recall_tags(tables, words);
  return c;
}

const char* model_need_name(ModelNeed need) {
  switch (need) {
    case ModelNeed::None:
      return "none";
    case ModelNeed::CacheFirst:
      return "cache-first";
    case ModelNeed::Required:
      return "required";
  }
  return "required";
}

ModelNeed model_need(bool similar_found, std::string_view complexity, bool covered_by_tool) {
  if (complexity == complexity_name(Complexity::Trivial) && covered_by_tool) return ModelNeed::None;
  if (similar_found) return ModelNeed::CacheFirst;
  return ModelNeed::Required;
}

std::string strategy_for(const RouteTables& tables, std::string_view complexity, ModelNeed need) {
  if (need == ModelNeed::None) return tables.strategies.no_model;
  auto level = parse_complexity(complexity);
  if (!level) return "";
  auto it = tables.strategies.by_complexity.find(*level);
  return it == tables.strategies.by_complexity.end() ? "" : it->second;
}

std::vector<std::string> pipeline_for(const RouteTables& tables, std::string_view strategy) {
  auto it = tables.strategies.pipelines.find(std::string(strategy));
  return it == tables.strategies.pipelines.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace orch::route
