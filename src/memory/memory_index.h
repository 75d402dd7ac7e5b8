// memory/memory_index.h — full-text recall and similarity over a workspace's memory.
//
// The index is an FTS5 table in .orch/memory/memory.db (tokenize 'porter
// unicode61') holding the knowledge notes, the lessons (read through the
// LessonStore, memory_store.h) and the closed traces (index_sources.h): a local
// cache: nothing in it that those sources do not hold, so a lost or stale index
// is only rebuilt. reindex() rebuilds it from them in one transaction,
// and does nothing when their signature has not changed since the last build, so
// it is cheap enough to call before every search and on every trace close.
//
// recall() ranks by BM25 (FTS5's bm25() with column weights title 4, body 1,
// tags 2; score = -bm25, higher is better). The query is the text's words, each
// quoted and OR-ed (TermAnalyzer::match_expression): user text can never inject
// FTS5 syntax.
//
// similar() takes the best 50 BM25 candidates (or 10 × limit when larger) and
// re-scores each by stem_similarity (similarity.h) between the text and the
// document's subject — the request of a lesson or trace, the title of a note — then
// keeps those above 0, best first (ties: lessons, then notes, then traces, then the
// better BM25 rank).
//
// Several processes may use one memory.db (SQLite WAL and locking). A
// MemoryIndex itself is not thread-safe: one per thread (one per process is usual).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memory/memory_paths.h"
#include "memory/memory_store.h"
#include "memory/term_analyzer.h"
#include "orch/error.h"

namespace orch::memory {

class SqliteMemoryStore;  // sqlite_memory_store.h

struct Hit {
  std::string kind;  // note | lesson | trace
  std::string id;
  std::string title;
  std::string path;         // relative to the workspace
  std::string snippet;      // the best matching fragment, matches in [brackets]
  double score = 0;         // recall: -bm25 (higher is better); similar: similarity in [0, 1]
  std::string content;      // only with RecallOptions::with_content: the whole text indexed
  std::int64_t tokens = 0;  // with content: its estimated tokens, ceil(bytes / 4)
};

struct RecallOptions {
  int limit = 10;
  std::vector<std::string> kinds;  // empty: every kind
  bool with_content = false;
};

class MemoryIndex {
 public:
  // Opens (creating when missing) the workspace's memory.db. The workspace must exist.
  static Expected<std::unique_ptr<MemoryIndex>> open(const MemoryPaths& paths);

  struct ReindexStats {
    int notes = 0, lessons = 0, traces = 0;  // documents in the index now
    std::vector<std::string> skipped;        // "file: why", for files that could not be indexed
    bool rebuilt = false;                    // false: the sources had not changed
  };
  // Brings the index up to date with the sources; `force` rebuilds even when
  // nothing changed. A broken file is skipped (and reported), never an error.
  Expected<ReindexStats> reindex(bool force = false);

  Expected<std::vector<Hit>> recall(std::string_view query, int limit);
  Expected<std::vector<Hit>> recall(std::string_view query, const RecallOptions& options);
  Expected<std::vector<Hit>> similar(std::string_view text, int limit);

  const MemoryPaths& paths() const { return paths_; }
  const TermAnalyzer& terms() const { return *terms_; }
  // The lessons and the fault ledger on the same connection.
  MemoryStore& store();

  ~MemoryIndex();
  MemoryIndex(const MemoryIndex&) = delete;
  MemoryIndex& operator=(const MemoryIndex&) = delete;

 private:
  MemoryIndex(MemoryPaths paths, std::unique_ptr<SqliteMemoryStore> store);
  struct Row;
  Expected<std::vector<Row>> search(const std::string& expression, const RecallOptions& options);

  MemoryPaths paths_;
  std::unique_ptr<SqliteMemoryStore> store_;  // owns the connection; the index reads its lessons
  std::unique_ptr<TermAnalyzer> terms_;       // borrows the connection: destroyed before store_
};

// Step 3 of the learning loop in one call: MemoryIndex::open(paths)->reindex().
Expected<MemoryIndex::ReindexStats> reindex_memory(const MemoryPaths& paths, bool force = false);

// The tokens a text is estimated to cost a model: ceil(bytes / 4).
std::int64_t estimate_tokens(std::string_view text);

}  // namespace orch::memory
