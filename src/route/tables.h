// route/tables.h — the route layer's data tables, loaded and checked.
//
// What orch knows about requests lives in data files, not in code (docs/routing.md):
//
//   intents.yaml     the intent taxonomy in tie-break order (seed 000's), each
//                    intent's keywords and engines; the recall-tag rules
//   complexity.yaml  trivial / standard / complex: per-intent levels, the long-request
//                    word count, complex and trivial words
//   strategies.yaml  complexity → strategy, the no-model strategy, strategy → pipeline
//   budgets.yaml     tokens per complexity (and per intent); seed 004's allocation
//   requests.yaml    request types and domains with their keywords, the confidence
//                    rule (threshold, ties), the domain priority ranks
//   verify.yaml      the VERIFY checklist of each intent
//
// The shipped tables (data/route/*.yaml) are compiled into orch. A file of the same
// name in <workspace>/.orch/route/ replaces the shipped one as a whole; any other
// file there is an error (a misspelt name would otherwise be ignored in silence).
// Loading checks every table and the references between them (an intent with no
// checklist, a request type with no budget, a strategy with no pipeline, …) and
// reports every problem at once, each as "FILE:LINE: FIELD: message".
//
// A loaded RouteTables is immutable and may be read from several threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"
#include "route/words.h"

namespace orch::route {

enum class Complexity { Trivial, Standard, Complex };
constexpr Complexity kComplexities[] = {Complexity::Trivial, Complexity::Standard, Complexity::Complex};
const char* complexity_name(Complexity level);  // "trivial", "standard", "complex"
std::optional<Complexity> parse_complexity(std::string_view name);

// The stages a pipeline may hold, in no particular order.
const std::vector<std::string>& pipeline_stages();

struct IntentSpec {
  std::string name;
  std::vector<Keyword> keywords;
  std::vector<std::string> engines;
  int line = 0;
};

struct RecallTagRules {
  std::size_t min_length = 3;
  std::size_t max_tags = 8;
  std::vector<std::string> stopwords;
};

struct IntentComplexity {
  Complexity base = Complexity::Standard;  // with no word saying otherwise
  Complexity min = Complexity::Trivial;    // the lowest a trivial word may take it
};

struct ComplexityRules {
  Complexity default_level = Complexity::Standard;  // an ambiguous request
  std::int64_t long_request_words = 60;             // more words than this: complex
  std::vector<Keyword> complex_words;
  std::vector<Keyword> trivial_words;
  std::map<std::string, IntentComplexity> by_intent;
};

struct StrategyTable {
  std::map<Complexity, std::string> by_complexity;
  std::string no_model;  // the capability gate said no model is needed
  std::map<std::string, std::vector<std::string>> pipelines;
};

// Seed 004's allocation (budget_allocation.h).
struct AllocationRules {
  std::int64_t base = 0;
  std::map<std::string, std::int64_t> by_request_type;
  std::int64_t safety_buffer_percent = 20;
  std::int64_t chars_per_token = 4;
};

struct BudgetTable {
  std::map<Complexity, std::int64_t> by_complexity;
  std::map<std::string, std::int64_t> by_intent;  // replaces the complexity figure
  AllocationRules allocation;
};

// confidence = 1 − exp(−weighted hits / scale); domains.h says how it is used.
struct ConfidenceRules {
  double scale = 1.0;
  double threshold = 0.6;
  double tie_floor = 0.5;
  double tie_margin = 0.05;
};

// A request type or a domain.
struct LabelSpec {
  std::string name;
  std::vector<Keyword> keywords;
  int line = 0;
};

// Seed 004's own commands ("/tk:route", "/tk:chain", ...): a request that starts
// with `prefix` is a command, and commands have absolute priority: the domain is
// `domain` whatever the words say (route/commands.h).
struct CommandSpec {
  std::string name;          // "budget-check"
  std::string request_type;  // its request type; "" = scored from the words
  int line = 0;
};

struct CommandTable {
  std::string prefix;  // "/tk:"; empty: the table declares no commands
  std::string domain;  // "system"
  std::vector<CommandSpec> commands;
};

struct RequestTable {
  ConfidenceRules confidence;
  std::vector<LabelSpec> request_types;  // in tie-break order
  std::vector<LabelSpec> domains;
  std::vector<std::vector<std::string>> domain_priority;  // ranks, highest first
  CommandTable commands;
};

// One item of a VERIFY checklist: a command run in the workspace (passes on exit
// 0), or an attestation (`attest`, command empty) recorded with a note.
struct ChecklistItem {
  std::string check;
  std::string command;
  bool attest = false;
};

// Where a table was read from.
struct TableSource {
  std::string name;  // "intents.yaml"
  std::string file;  // "data/route/intents.yaml" (shipped) or the override's path
  bool overridden = false;
};

// The text of one table file, for parse().
struct TableText {
  std::string name;  // one of route_table_names()
  std::string file;  // how messages name it
  std::string text;
  bool overridden = false;
};

// "intents.yaml", "complexity.yaml", ... — the files a table set is made of.
const std::vector<std::string>& route_table_names();

struct RouteTables {
  std::map<std::string, std::string> engines;  // name → what it is for
  std::vector<IntentSpec> intents;             // tie-break order
  RecallTagRules recall_tags;
  ComplexityRules complexity;
  StrategyTable strategies;
  BudgetTable budgets;
  RequestTable requests;
  std::map<std::string, std::vector<ChecklistItem>> checklists;  // by intent
  std::vector<TableSource> sources;

  const IntentSpec* find_intent(std::string_view name) const;
  std::vector<std::string> intent_names() const;
  std::vector<std::string> request_type_names() const;
  std::vector<std::string> domain_names() const;

  // The shipped tables, each replaced by <workspace>/.orch/route/NAME when that
  // exists. InvalidInput listing every problem; Io when an override cannot be read.
  static Expected<RouteTables> load(const std::filesystem::path& workspace);
  // From texts: one per name of route_table_names(), else InvalidInput.
  static Expected<RouteTables> parse(const std::vector<TableText>& files);
};

}  // namespace orch::route
