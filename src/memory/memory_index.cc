#include "memory/memory_index.h"

#include <fmt/format.h>

#include <algorithm>

#include "memory/similarity.h"
#include "memory/sqlite_memory_store.h"
#include "sqlite/sqlite_statement.h"

namespace orch::memory {

namespace {

constexpr int kMinSimilarCandidates = 50;

// bm25() weights, one per column: kind, id, title, body, tags, path, subject.
constexpr const char* kSearchSql = R"sql(
  SELECT kind, id, title, path, snippet(documents, -1, '[', ']', '...', 12),
         bm25(documents, 0, 0, 4.0, 1.0, 2.0, 0, 0) AS rank,
         CASE WHEN ?4 THEN body ELSE '' END, subject
  FROM documents
  WHERE documents MATCH ?1 AND (?2 = '' OR instr(?2, ',' || kind || ',') > 0)
  ORDER BY rank LIMIT ?3)sql";

}  // namespace

struct MemoryIndex::Row {
  Hit hit;
  std::string subject;
};

std::int64_t estimate_tokens(std::string_view text) {
  return static_cast<std::int64_t>((text.size() + 3) / 4);
}

MemoryIndex::MemoryIndex(MemoryPaths paths, std::unique_ptr<SqliteMemoryStore> store)
    : paths_(std::move(paths)), store_(std::move(store)) {}

MemoryIndex::~MemoryIndex() = default;

Expected<std::unique_ptr<MemoryIndex>> MemoryIndex::open(const MemoryPaths& paths) {
  auto store = ORCH_TRY(SqliteMemoryStore::open(paths));
  std::unique_ptr<MemoryIndex> index(new MemoryIndex(paths, std::move(store)));
  index->terms_ = ORCH_TRY(TermAnalyzer::create(index->store_->db()));
  return index;
}

MemoryStore& MemoryIndex::store() {
  return *store_;
}

Expected<MemoryIndex::ReindexStats> reindex_memory(const MemoryPaths& paths, bool force) {
  auto index = ORCH_TRY(MemoryIndex::open(paths));
  return index->reindex(force);
}

Expected<std::vector<MemoryIndex::Row>> MemoryIndex::search(const std::string& expression,
                                                            const RecallOptions& options) {
  std::vector<Row> rows;
  if (expression.empty() || options.limit < 1) return rows;
  std::string kinds;
  for (const auto& k : options.kinds) kinds += "," + k + ",";
  auto query = ORCH_TRY(Statement::prepare(store_->db(), kSearchSql));
  ResetOnExit reset(query);
  query.bind_text(1, expression);
  query.bind_text(2, kinds);
  query.bind_int(3, options.limit);
  query.bind_bool(4, options.with_content);
  while (ORCH_TRY(query.step([] { return "searching the memory index"; }))) {
    Row row;
    row.hit.kind = query.column_text(0);
    row.hit.id = query.column_text(1);
    row.hit.title = query.column_text(2);
    row.hit.path = query.column_text(3);
    row.hit.snippet = query.column_text(4);
    row.hit.score = -query.column_real(5);
    if (options.with_content) {
      row.hit.content = query.column_text(6);
      row.hit.tokens = estimate_tokens(row.hit.content);
    }
    row.subject = query.column_text(7);
    rows.push_back(std::move(row));
  }
  return rows;
}

Expected<std::vector<Hit>> MemoryIndex::recall(std::string_view query, int limit) {
  RecallOptions options;
  options.limit = limit;
  return recall(query, options);
}

Expected<std::vector<Hit>> MemoryIndex::recall(std::string_view query, const RecallOptions& options) {
  auto rows = ORCH_TRY(search(terms_->match_expression(query), options));
  std::vector<Hit> hits;
  hits.reserve(rows.size());
  for (auto& row : rows) hits.push_back(std::move(row.hit));
  return hits;
}

Expected<std::vector<Hit>> MemoryIndex::similar(std::string_view text, int limit) {
  RecallOptions options;
  options.limit = std::max(kMinSimilarCandidates, limit * 10);
  auto rows = ORCH_TRY(search(terms_->match_expression(text), options));
  const auto stems = terms_->stems(text);
  std::vector<Hit> hits;
  for (auto& row : rows) {
    row.hit.score = stem_similarity(stems, terms_->stems(row.subject));
    if (row.hit.score > 0) hits.push_back(std::move(row.hit));
  }
  // Ties: a lesson (what a past request taught) before a note before a trace, then
  // the BM25 order (the candidates' order; the sort is stable).
  auto kind_rank = [](const Hit& h) { return h.kind == "lesson" ? 0 : h.kind == "note" ? 1 : 2; };
  std::stable_sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
    if (a.score != b.score) return a.score > b.score;
    return kind_rank(a) < kind_rank(b);
  });
  if (hits.size() > static_cast<std::size_t>(std::max(limit, 0)))
    hits.resize(static_cast<std::size_t>(std::max(limit, 0)));
  return hits;
}

}  // namespace orch::memory
