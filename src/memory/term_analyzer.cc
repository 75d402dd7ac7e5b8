#include "memory/term_analyzer.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace orch::memory {

namespace {

constexpr std::size_t kMaxAnalyzedBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxQueryTerms = 64;

// Sorted, for binary search.
constexpr auto kStopWords = std::to_array<std::string_view>(
    {"a",      "about", "above",   "after",   "again",   "against", "all",    "also",    "am",
     "an",     "and",   "any",     "are",     "as",      "at",      "be",     "because", "been",
     "before", "being", "below",   "between", "both",    "but",     "by",     "can",     "could",
     "d",      "did",   "do",      "does",    "doing",   "down",    "during", "each",    "few",
     "for",    "from",  "further", "had",     "has",     "have",    "having", "he",      "her",
     "here",   "hers",  "him",     "his",     "how",     "i",       "if",     "in",      "into",
     "is",     "it",    "its",     "itself",  "just",    "ll",      "m",      "me",      "more",
     "most",   "my",    "no",      "nor",     "not",     "now",     "of",     "off",     "on",
     "once",   "only",  "or",      "other",   "our",     "ours",    "out",    "over",    "own",
     "please", "re",    "s",       "same",    "she",     "should",  "so",     "some",    "such",
     "t",      "than",  "that",    "the",     "their",   "theirs",  "them",   "then",    "there",
     "these",  "they",  "this",    "those",   "through", "to",      "too",    "under",   "until",
     "up",     "us",    "ve",      "very",    "was",     "we",      "were",   "what",    "when",
     "where",  "which", "while",   "who",     "whom",    "why",     "will",   "with",    "would",
     "you",    "your",  "yours",   "yourself"});
static_assert(std::is_sorted(kStopWords.begin(), kStopWords.end()));

std::string_view clip(std::string_view text) {
  return text.substr(0, kMaxAnalyzedBytes);
}

// The tokenizers are reached and driven through SQLite's C API, not the
// sqlite/ wrappers: an FTS5 tokenizer is a C table of functions (fts5_api,
// fts5_tokenizer) that the wrappers do not model, and `SELECT fts5(?1)` hands
// the fts5_api back only through sqlite3_bind_pointer.
fts5_api* fts5_of(SqliteDb& db) {
  fts5_api* api = nullptr;
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db.handle(), "SELECT fts5(?1)", -1, &statement, nullptr) == SQLITE_OK) {
    sqlite3_bind_pointer(statement, 1, &api, "fts5_api_ptr", nullptr);
    sqlite3_step(statement);
  }
  sqlite3_finalize(statement);
  return api;
}

}  // namespace

// One FTS5 tokenizer instance and the functions that drive it.
struct TermAnalyzer::Tokenizer {
  fts5_tokenizer functions{};
  Fts5Tokenizer* instance = nullptr;
  ~Tokenizer() {
    if (instance != nullptr) functions.xDelete(instance);
  }

  // Calls `on_token(token, original_span)` for each token of `text`.
  template <class OnToken>
  void tokenize(std::string_view text, const OnToken& on_token) const {
    struct Context {
      std::string_view text;
      const OnToken* on_token;
    } context{text, &on_token};
    auto callback = [](void* raw, int, const char* token, int size, int start, int end) -> int {
      auto* c = static_cast<Context*>(raw);
      (*c->on_token)(std::string_view(token, static_cast<std::size_t>(size)),
                     c->text.substr(static_cast<std::size_t>(start), static_cast<std::size_t>(end - start)));
      return SQLITE_OK;
    };
    functions.xTokenize(instance, &context, FTS5_TOKENIZE_DOCUMENT, text.data(),
                        static_cast<int>(text.size()), callback);
  }
};

Expected<std::unique_ptr<TermAnalyzer>> TermAnalyzer::create(SqliteDb& db) {
  fts5_api* api = fts5_of(db);
  if (api == nullptr)
    return fail(ErrorCode::Store,
                fmt::format("{}: this SQLite has no FTS5 full-text search", db.path().string()));
  auto make = [&](const char* name, std::vector<const char*> args) -> Expected<std::unique_ptr<Tokenizer>> {
    auto tokenizer = std::make_unique<Tokenizer>();
    void* context = nullptr;
    int rc = api->xFindTokenizer(api, name, &context, &tokenizer->functions);
    if (rc == SQLITE_OK)
      rc = tokenizer->functions.xCreate(context, args.data(), static_cast<int>(args.size()),
                                        &tokenizer->instance);
    if (rc != SQLITE_OK)
      return fail(ErrorCode::Store, fmt::format("{}: cannot create the FTS5 '{}' tokenizer: {}",
                                                db.path().string(), name, sqlite3_errstr(rc)));
    return tokenizer;
  };
  std::unique_ptr<TermAnalyzer> analyzer(new TermAnalyzer());
  analyzer->words_ = ORCH_TRY(make("unicode61", {}));
  analyzer->stems_ = ORCH_TRY(make("porter", {"unicode61"}));
  return analyzer;
}

TermAnalyzer::~TermAnalyzer() = default;

bool TermAnalyzer::is_stop_word(std::string_view word) {
  return std::binary_search(kStopWords.begin(), kStopWords.end(), word);
}

std::vector<std::string> TermAnalyzer::words(std::string_view text) const {
  std::vector<std::string> out;
  words_->tokenize(clip(text), [&](std::string_view token, std::string_view) { out.emplace_back(token); });
  return out;
}

std::set<std::string> TermAnalyzer::stems(std::string_view text) const {
  std::set<std::string> content;
  std::set<std::string> all;
  stems_->tokenize(clip(text), [&](std::string_view stem, std::string_view original) {
    // Stop words are ASCII: the original span lower-cased in ASCII is enough to tell.
    std::string lower(original);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!is_stop_word(lower)) content.emplace(stem);
    all.emplace(stem);
  });
  return content.empty() ? all : content;
}

std::string TermAnalyzer::match_expression(std::string_view text) const {
  std::vector<std::string> all = words(text);
  std::vector<std::string> terms;
  for (const auto& w : all)
    if (!is_stop_word(w)) terms.push_back(w);
  if (terms.empty()) terms = std::move(all);
  std::vector<std::string> distinct;
  for (auto& t : terms) {
    if (distinct.size() == kMaxQueryTerms) break;
    if (std::find(distinct.begin(), distinct.end(), t) == distinct.end()) distinct.push_back(std::move(t));
  }
  std::string expression;
  for (const auto& term : distinct) {
    if (!expression.empty()) expression += " OR ";
    expression += '"';
    for (char c : term) {
      if (c == '"') expression += '"';  // FTS5 escapes a quote inside a string by doubling it
      expression += c;
    }
    expression += '"';
  }
  return expression;
}

}  // namespace orch::memory
