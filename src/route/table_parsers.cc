#include "route/table_parsers.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "util/strings.h"

namespace orch::route::table_parsers {

namespace {

const std::vector<std::string> kLevelNames = {"trivial", "standard", "complex"};

// The top of a table: a mapping with only `keys`, and `version: 1` when given.
bool read_top(TableReader& r, const DocNode& root, const std::vector<std::string>& keys,
              std::string_view what) {
  if (!r.expect_map(root, "", what)) return false;
  r.only_keys(root, "", keys);
  if (const DocNode* v = TableReader::find(root, "version"); v && !v->is_null()) {
    auto n = r.integer(root, "", "version", 1, false);
    if (n && *n != 1)
      r.problem(v->line, "version", fmt::format("must be 1 (the only format there is), not {}", *n));
  }
  return true;
}

// map[key], reporting it missing when it is absent or empty.
const DocNode* required(TableReader& r, const DocNode& map, std::string_view field, std::string_view key) {
  const DocNode* v = TableReader::find(map, key);
  if (!v || v->is_null()) {
    r.problem(v ? v->line : map.line, field_name(field, key), "missing");
    return nullptr;
  }
  return v;
}

// Names of intents, request types, domains, strategies: [a-z0-9][a-z0-9_-]*.
bool is_name(std::string_view s) {
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9'))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// A problem when `name` is not in `known` (which `where` declares). Skipped when
// `known` is empty: that table had problems of its own.
bool check_known(TableReader& r, int line, std::string_view field, const std::string& name,
                 const std::vector<std::string>& known, std::string_view what, std::string_view where) {
  if (known.empty() || std::find(known.begin(), known.end(), name) != known.end()) return true;
  r.problem(line, field,
            fmt::format("unknown {} '{}'{} ({} has: {})", what, name, did_you_mean(name, known), where,
                        join(known, ", ")));
  return false;
}

// A problem at `line` for each name of `known` that `seen` lacks.
void check_all_present(TableReader& r, int line, std::string_view field,
                       const std::vector<std::string>& known, const std::set<std::string>& seen,
                       std::string_view what) {
  for (const auto& name : known)
    if (!seen.contains(name)) r.problem(line, field, fmt::format("no entry for {} '{}'", what, name));
}

std::optional<Complexity> level_of(TableReader& r, const DocNode& map, std::string_view field,
                                   std::string_view key, bool must) {
  auto text = r.string(map, field, key, must);
  if (!text) return std::nullopt;
  auto level = parse_complexity(*text);
  if (!level)
    r.problem(
        TableReader::find(map, key)->line, field_name(field, key),
        fmt::format("'{}' is not trivial, standard or complex{}", *text, did_you_mean(*text, kLevelNames)));
  return level;
}

// A mapping with one entry per complexity level.
std::map<Complexity, const DocNode*> levels_of(TableReader& r, const DocNode& node, std::string_view field) {
  std::map<Complexity, const DocNode*> out;
  if (!r.expect_map(node, field, "trivial, standard and complex")) return out;
  r.only_keys(node, field, kLevelNames);
  for (const auto& entry : node.entries)
    if (auto level = parse_complexity(entry.key.scalar); level && !out.contains(*level))
      out[*level] = &entry.value;
  for (Complexity level : kComplexities)
    if (!out.contains(level))
      r.problem(node.line, field, fmt::format("no entry for '{}'", complexity_name(level)));
  return out;
}

// A list of {name, keywords, ...}: intents, request types, domains.
struct LabelRead {
  LabelSpec spec;
  const DocNode* node = nullptr;
  std::string field;  // "intents[2]"
};
std::vector<LabelRead> read_labels(TableReader& r, const DocNode& list, std::string_view field,
                                   const std::vector<std::string>& keys, std::string_view what) {
  std::vector<LabelRead> out;
  if (!list.is_sequence() || list.items.empty()) {
    r.problem(list.line, field, fmt::format("must be a non-empty list of {}s ({{name, keywords}})", what));
    return out;
  }
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < list.items.size(); ++i) {
    const DocNode& item = list.items[i];
    const std::string f = field_name(field, i);
    if (!r.expect_map(item, f, "name and keywords")) continue;
    r.only_keys(item, f, keys);
    LabelRead label{{}, &item, f};
    label.spec.line = item.line;
    if (auto name = r.string(item, f, "name", true)) {
      if (!is_name(*name))
        r.problem(item.line, field_name(f, "name"),
                  fmt::format("'{}' is not a name: lower-case letters, digits, '_' and '-'", *name));
      else if (auto [it, fresh] = seen.emplace(*name, item.line); !fresh)
        r.problem(item.line, field_name(f, "name"),
                  fmt::format("{} '{}' is repeated (first at line {})", what, *name, it->second));
      label.spec.name = *name;
    }
    if (const DocNode* k = required(r, item, f, "keywords"))
      label.spec.keywords = r.keywords(*k, field_name(f, "keywords"));
    out.push_back(std::move(label));
  }
  return out;
}

std::vector<std::string> names_of(const std::vector<LabelSpec>& labels) {
  std::vector<std::string> out;
  for (const auto& l : labels) out.push_back(l.name);
  return out;
}

}  // namespace

void read_intents(TableReader& r, const DocNode& root, RouteTables& out) {
  if (!read_top(r, root, {"version", "engines", "intents", "recall_tags"},
                "engines, intents and recall_tags"))
    return;
  std::vector<std::string> engine_names;
  if (const DocNode* engines = required(r, root, "", "engines");
      engines && r.expect_map(*engines, "engines", "engine names to what they do")) {
    r.only_keys(*engines, "engines", {});
    for (const auto& entry : engines->entries) {
      const std::string f = field_name("engines", entry.key.scalar);
      if (!is_name(entry.key.scalar))
        r.problem(entry.key.line, f, "an engine name is lower-case letters, digits, '_' and '-'");
      if (auto what = r.string_value(entry.value, f)) out.engines[entry.key.scalar] = *what;
      engine_names.push_back(entry.key.scalar);
    }
  }
  if (const DocNode* intents = required(r, root, "", "intents")) {
    for (auto& [spec, node, f] :
         read_labels(r, *intents, "intents", {"name", "keywords", "engines"}, "intent")) {
      IntentSpec intent{spec.name, std::move(spec.keywords), {}, spec.line};
      if (const DocNode* engines = required(r, *node, f, "engines")) {
        intent.engines = r.string_list(*engines, field_name(f, "engines"));
        for (const auto& e : intent.engines)
          check_known(r, engines->line, field_name(f, "engines"), e, engine_names, "engine",
                      "`engines` at the top");
      }
      out.intents.push_back(std::move(intent));
    }
  }
  if (const DocNode* tags = TableReader::find(root, "recall_tags"); tags && !tags->is_null()) {
    if (r.expect_map(*tags, "recall_tags", "min_length, max_tags and stopwords")) {
      r.only_keys(*tags, "recall_tags", {"min_length", "max_tags", "stopwords"});
      if (auto n = r.integer(*tags, "recall_tags", "min_length", 1, false))
        out.recall_tags.min_length = static_cast<std::size_t>(*n);
      if (auto n = r.integer(*tags, "recall_tags", "max_tags", 0, false))
        out.recall_tags.max_tags = static_cast<std::size_t>(*n);
      if (const DocNode* stop = TableReader::find(*tags, "stopwords"); stop && !stop->is_null())
        out.recall_tags.stopwords = r.string_list(*stop, "recall_tags.stopwords");
    }
  }
}

namespace {

// `commands: {prefix: "/tk:", domain: system, names: {route: query, boot: action, ...}}`.
void read_commands(TableReader& r, const DocNode& node, RequestTable& t) {
  if (!r.expect_map(node, "commands", "prefix, domain and names")) return;
  r.only_keys(node, "commands", {"prefix", "domain", "names"});
  CommandTable& c = t.commands;
  if (auto prefix = r.string(node, "commands", "prefix", true)) {
    if (trim(*prefix).size() != prefix->size() || prefix->empty())
      r.problem(TableReader::find(node, "prefix")->line, "commands.prefix",
                "must be the text a command starts with, with no spaces around it (e.g. \"/tk:\")");
    else
      c.prefix = *prefix;
  }
  if (auto domain = r.string(node, "commands", "domain", true)) {
    check_known(r, TableReader::find(node, "domain")->line, "commands.domain", *domain, names_of(t.domains),
                "domain", "`domains`");
    c.domain = *domain;
  }
  const DocNode* names = required(r, node, "commands", "names");
  if (!names || !r.expect_map(*names, "commands.names", "command names to request types (or null)")) return;
  r.only_keys(*names, "commands.names", {});
  for (const auto& entry : names->entries) {
    const std::string& name = entry.key.scalar;
    const std::string f = field_name("commands.names", name);
    if (!is_name(name))
      r.problem(entry.key.line, f, "a command name is lower-case letters, digits, '_' and '-'");
    CommandSpec spec{name, "", entry.key.line};
    if (!entry.value.is_null())
      if (auto type = r.string_value(entry.value, f)) {
        check_known(r, entry.key.line, f, *type, names_of(t.request_types), "request type", "`request_types`");
        spec.request_type = *type;
      }
    c.commands.push_back(std::move(spec));
  }
}

}  // namespace

void read_requests(TableReader& r, const DocNode& root, RouteTables& out) {
  if (!read_top(r, root, {"version", "confidence", "request_types", "domains", "domain_priority", "commands"},
                "confidence, request_types, domains, domain_priority and commands"))
    return;
  RequestTable& t = out.requests;
  if (const DocNode* c = required(r, root, "", "confidence");
      c && r.expect_map(*c, "confidence", "scale, threshold, tie_floor and tie_margin")) {
    r.only_keys(*c, "confidence", {"scale", "threshold", "tie_floor", "tie_margin"});
    if (auto v = r.number(*c, "confidence", "scale", 0.01, 100.0, true)) t.confidence.scale = *v;
    if (auto v = r.number(*c, "confidence", "threshold", 0.0, 1.0, true)) t.confidence.threshold = *v;
    if (auto v = r.number(*c, "confidence", "tie_floor", 0.0, 1.0, true)) t.confidence.tie_floor = *v;
    if (auto v = r.number(*c, "confidence", "tie_margin", 0.0, 1.0, true)) t.confidence.tie_margin = *v;
  }
  if (const DocNode* types = required(r, root, "", "request_types"))
    for (auto& label : read_labels(r, *types, "request_types", {"name", "keywords"}, "request type"))
      t.request_types.push_back(std::move(label.spec));
  if (const DocNode* domains = required(r, root, "", "domains"))
    for (auto& label : read_labels(r, *domains, "domains", {"name", "keywords"}, "domain"))
      t.domains.push_back(std::move(label.spec));
  const DocNode* ranks = required(r, root, "", "domain_priority");
  if (!ranks) return;
  if (!ranks->is_sequence()) {
    r.problem(ranks->line, "domain_priority",
              "must be a list of domains (or lists of domains sharing a rank), highest first");
    return;
  }
  const std::vector<std::string> domains = names_of(t.domains);
  std::map<std::string, int> seen;
  for (std::size_t i = 0; i < ranks->items.size(); ++i) {
    const DocNode& item = ranks->items[i];
    const std::string f = field_name("domain_priority", i);
    std::vector<std::string> rank;
    if (item.is_sequence()) {
      rank = r.string_list(item, f);
    } else if (auto name = r.string_value(item, f)) {
      rank.push_back(*name);
    }
    for (const auto& name : rank) {
      if (!check_known(r, item.line, f, name, domains, "domain", "`domains`")) continue;
      if (auto [it, fresh] = seen.emplace(name, item.line); !fresh)
        r.problem(item.line, f,
                  fmt::format("domain '{}' is ranked twice (first at line {})", name, it->second));
    }
    t.domain_priority.push_back(std::move(rank));
  }
  for (const auto& d : domains)
    if (!seen.contains(d))
      r.problem(ranks->line, "domain_priority", fmt::format("domain '{}' has no rank", d));
  if (const DocNode* commands = TableReader::find(root, "commands"); commands && !commands->is_null())
    read_commands(r, *commands, t);
}

void read_complexity(TableReader& r, const DocNode& root, const Known& known, RouteTables& out) {
  if (!read_top(r, root,
                {"version", "default", "long_request_words", "complex_words", "trivial_words", "intents"},
                "default, long_request_words, complex_words, trivial_words and intents"))
    return;
  ComplexityRules& c = out.complexity;
  if (auto level = level_of(r, root, "", "default", true)) c.default_level = *level;
  if (auto n = r.integer(root, "", "long_request_words", 1, true)) c.long_request_words = *n;
  if (const DocNode* words = required(r, root, "", "complex_words"))
    c.complex_words = r.keywords(*words, "complex_words");
  if (const DocNode* words = required(r, root, "", "trivial_words"))
    c.trivial_words = r.keywords(*words, "trivial_words");
  const DocNode* intents = required(r, root, "", "intents");
  if (!intents || !r.expect_map(*intents, "intents", "intent names to {base, min}")) return;
  r.only_keys(*intents, "intents", {});
  std::set<std::string> seen;
  for (const auto& entry : intents->entries) {
    const std::string& name = entry.key.scalar;
    const std::string f = field_name("intents", name);
    seen.insert(name);
    check_known(r, entry.key.line, f, name, known.intents, "intent", "intents.yaml");
    if (!r.expect_map(entry.value, f, "base and min")) continue;
    r.only_keys(entry.value, f, {"base", "min"});
    IntentComplexity ic;
    if (auto base = level_of(r, entry.value, f, "base", true)) ic.base = *base;
    if (auto min = level_of(r, entry.value, f, "min", false)) ic.min = *min;
    if (ic.min > ic.base)
      r.problem(
          entry.value.line, f,
          fmt::format("min '{}' is above base '{}'", complexity_name(ic.min), complexity_name(ic.base)));
    c.by_intent[name] = ic;
  }
  check_all_present(r, intents->line, "intents", known.intents, seen, "intent");
}

void read_strategies(TableReader& r, const DocNode& root, RouteTables& out) {
  if (!read_top(r, root, {"version", "by_complexity", "no_model", "pipelines"},
                "by_complexity, no_model and pipelines"))
    return;
  StrategyTable& s = out.strategies;
  std::vector<std::pair<std::string, int>> used;  // (strategy, line) to check against the pipelines
  if (const DocNode* by = required(r, root, "", "by_complexity")) {
    for (const auto& [level, node] : levels_of(r, *by, "by_complexity"))
      if (auto name = r.string_value(*node, field_name("by_complexity", complexity_name(level)))) {
        s.by_complexity[level] = *name;
        used.emplace_back(*name, node->line);
      }
  }
  if (auto name = r.string(root, "", "no_model", true)) {
    s.no_model = *name;
    used.emplace_back(*name, TableReader::find(root, "no_model")->line);
  }
  const DocNode* pipelines = required(r, root, "", "pipelines");
  if (!pipelines || !r.expect_map(*pipelines, "pipelines", "strategy names to lists of stages")) return;
  r.only_keys(*pipelines, "pipelines", {});
  const std::vector<std::string>& stages = pipeline_stages();
  for (const auto& entry : pipelines->entries) {
    const std::string f = field_name("pipelines", entry.key.scalar);
    if (!is_name(entry.key.scalar))
      r.problem(entry.key.line, f, "a strategy name is lower-case letters, digits, '_' and '-'");
    std::vector<std::string> pipeline = r.string_list(entry.value, f);
    std::set<std::string> seen;
    for (const auto& stage : pipeline) {
      check_known(r, entry.value.line, f, stage, stages, "stage", "a pipeline");
      if (!seen.insert(stage).second)
        r.problem(entry.value.line, f, fmt::format("stage {} is repeated", stage));
    }
    auto at = [&](const char* stage) {
      return std::find(pipeline.begin(), pipeline.end(), stage) - pipeline.begin();
    };
    const auto n = static_cast<std::ptrdiff_t>(pipeline.size());
    if (at("EXECUTE") == n || at("VERIFY") == n || at("VERIFY") < at("EXECUTE"))
      r.problem(entry.value.line, f, "must hold EXECUTE and, after it, VERIFY");
    if (pipeline.empty() || pipeline.back() != "SUMMARIZE")
      r.problem(entry.value.line, f, "must end with SUMMARIZE");
    s.pipelines[entry.key.scalar] = std::move(pipeline);
  }
  std::vector<std::string> names;
  for (const auto& [name, _] : s.pipelines) names.push_back(name);
  for (const auto& [name, line] : used)
    if (!s.pipelines.contains(name))
      r.problem(line, "pipelines",
                fmt::format("strategy '{}' has no pipeline{}", name, did_you_mean(name, names)));
}

void read_budgets(TableReader& r, const DocNode& root, const Known& known, RouteTables& out) {
  if (!read_top(r, root, {"version", "tokens", "allocation"}, "tokens and allocation")) return;
  BudgetTable& b = out.budgets;
  if (const DocNode* tokens = required(r, root, "", "tokens");
      tokens && r.expect_map(*tokens, "tokens", "by_complexity and by_intent")) {
    r.only_keys(*tokens, "tokens", {"by_complexity", "by_intent"});
    if (const DocNode* by = required(r, *tokens, "tokens", "by_complexity")) {
      for (const auto& [level, node] : levels_of(r, *by, "tokens.by_complexity"))
        if (auto n = r.integer_value(*node, field_name("tokens.by_complexity", complexity_name(level)), 1))
          b.by_complexity[level] = *n;
    }
    if (const DocNode* by = TableReader::find(*tokens, "by_intent");
        by && !by->is_null() && r.expect_map(*by, "tokens.by_intent", "intent names to tokens")) {
      r.only_keys(*by, "tokens.by_intent", {});
      for (const auto& entry : by->entries) {
        const std::string& name = entry.key.scalar;
        check_known(r, entry.key.line, field_name("tokens.by_intent", name), name, known.intents, "intent",
                    "intents.yaml");
        if (auto n = r.integer(*by, "tokens.by_intent", name, 1, true)) b.by_intent[name] = *n;
      }
    }
  }
  const DocNode* alloc = required(r, root, "", "allocation");
  if (!alloc ||
      !r.expect_map(*alloc, "allocation", "base, by_request_type, safety_buffer_percent and chars_per_token"))
    return;
  r.only_keys(*alloc, "allocation", {"base", "by_request_type", "safety_buffer_percent", "chars_per_token"});
  AllocationRules& a = b.allocation;
  if (auto n = r.integer(*alloc, "allocation", "base", 0, true)) a.base = *n;
  if (auto n = r.integer(*alloc, "allocation", "safety_buffer_percent", 0, true)) {
    if (*n > 99)
      r.problem(TableReader::find(*alloc, "safety_buffer_percent")->line, "allocation.safety_buffer_percent",
                fmt::format("must be below 100 (nothing would be left to spend), not {}", *n));
    a.safety_buffer_percent = *n;
  }
  if (auto n = r.integer(*alloc, "allocation", "chars_per_token", 1, true)) a.chars_per_token = *n;
  const DocNode* types = required(r, *alloc, "allocation", "by_request_type");
  if (!types || !r.expect_map(*types, "allocation.by_request_type", "request types to tokens")) return;
  r.only_keys(*types, "allocation.by_request_type", {});
  std::set<std::string> seen;
  for (const auto& entry : types->entries) {
    const std::string& name = entry.key.scalar;
    seen.insert(name);
    check_known(r, entry.key.line, field_name("allocation.by_request_type", name), name, known.request_types,
                "request type", "requests.yaml");
    if (auto n = r.integer(*types, "allocation.by_request_type", name, 0, true)) a.by_request_type[name] = *n;
  }
  check_all_present(r, types->line, "allocation.by_request_type", known.request_types, seen, "request type");
}

void read_checklists(TableReader& r, const DocNode& root, const Known& known, RouteTables& out) {
  if (!read_top(r, root, {"version", "checklists"}, "checklists")) return;
  const DocNode* lists = required(r, root, "", "checklists");
  if (!lists || !r.expect_map(*lists, "checklists", "intent names to lists of checks")) return;
  r.only_keys(*lists, "checklists", {});
  std::set<std::string> seen;
  for (const auto& entry : lists->entries) {
    const std::string& intent = entry.key.scalar;
    const std::string f = field_name("checklists", intent);
    seen.insert(intent);
    check_known(r, entry.key.line, f, intent, known.intents, "intent", "intents.yaml");
    if (!entry.value.is_sequence() || entry.value.items.empty()) {
      r.problem(entry.value.line > 0 ? entry.value.line : entry.key.line, f,
                "must be a non-empty list of {check, command} or {check, attest: true}");
      continue;
    }
    std::vector<ChecklistItem>& items = out.checklists[intent];
    for (std::size_t i = 0; i < entry.value.items.size(); ++i) {
      const DocNode& node = entry.value.items[i];
      const std::string fi = field_name(f, i);
      if (!r.expect_map(node, fi, "check and command, or check and attest: true")) continue;
      r.only_keys(node, fi, {"check", "command", "attest"});
      ChecklistItem item;
      item.check = r.string(node, fi, "check", true).value_or("");
      item.command = r.string(node, fi, "command", false).value_or("");
      item.attest = r.boolean(node, fi, "attest").value_or(false);
      if (item.command.empty() == !item.attest)
        r.problem(node.line, fi,
                  item.attest ? "has both `command` and `attest: true`: an item is checked one way"
                              : "needs `command` (run in the workspace; passes on exit 0) or `attest: true`");
      items.push_back(std::move(item));
    }
  }
  check_all_present(r, lists->line, "checklists", known.intents, seen, "intent");
}

}  // namespace orch::route::table_parsers
