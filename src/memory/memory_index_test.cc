// The memory index: reindexing notes and traces, BM25 recall, similarity, context
// packing and skills, on real SQLite files in temporary workspaces.
#include "memory/memory_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "memory/context_pack.h"
#include "memory/markdown_note.h"
#include "memory/similarity.h"
#include "memory/skills.h"
#include "testing/testing.h"
#include "util/strings.h"

namespace orch::memory {
namespace {

namespace fs = std::filesystem;
using orch::testing::TempDir;
using orch::testing::write_file;

class MemoryIndexTest : public ::testing::Test {
 protected:
  void note(const std::string& rel, const std::string& text) { write_file(paths.notes / rel, text); }
  void trace(const std::string& id, const std::string& json) {
    write_file(paths.traces / (id + ".json"), json);
  }
  std::unique_ptr<MemoryIndex> open_index() {
    auto index = MemoryIndex::open(paths);
    EXPECT_TRUE(index) << index.error().message;
    return index ? std::move(*index) : nullptr;
  }
  static std::vector<std::string> ids(const std::vector<Hit>& hits) {
    std::vector<std::string> out;
    for (const auto& h : hits) out.push_back(h.kind + ":" + h.id);
    return out;
  }

  TempDir dir;
  MemoryPaths paths = memory_paths(dir.path());
};

std::string closed_trace(const std::string& id, const std::string& request,
                         const std::string& result = "pass") {
  return R"({"id": ")" + id + R"(", "request": ")" + request +
         R"(", "intent": "bug_fix", "complexity": "standard",
             "result": ")" +
         result + R"(", "transitions": [{"t": "2026-07-11T09:00:00Z", "state": "CLASSIFY", "note": ""}]})";
}

TEST_F(MemoryIndexTest, RecallRanksTheMoreRelevantNoteFirst) {
  note("build/cmake.md",
       "---\ntitle: Building with CMake\ntags: [build, cmake]\n---\n# Building with CMake\n\n"
       "Configure with cmake -G Ninja, then build with ninja. The cmake cache lives in build/.\n");
  note("deploy.md", "# Deploying\n\nCopy the binary to the server. It was built by cmake once, long ago.\n");
  note("cooking.md", "# Pancakes\n\nFlour, eggs, milk. Stir and fry.\n");
  auto index = open_index();
  auto stats = index->reindex();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->notes, 3);
  EXPECT_TRUE(stats->rebuilt);

  auto hits = index->recall("how do I configure the cmake build?", 10);
  ASSERT_TRUE(hits) << hits.error().message;
  ASSERT_EQ(ids(*hits), (std::vector<std::string>{"note:build/cmake", "note:deploy"}));
  const Hit& best = hits->front();
  EXPECT_EQ(best.title, "Building with CMake");
  EXPECT_EQ(best.path, ".orch/memory/notes/build/cmake.md");
  EXPECT_NE(best.snippet.find("[cmake]"), std::string::npos) << best.snippet;
  EXPECT_GT(best.score, (*hits)[1].score);
  EXPECT_TRUE(best.content.empty());  // only with RecallOptions::with_content

  auto one = index->recall("cmake", 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(ids(*one), (std::vector<std::string>{"note:build/cmake"}));
}

TEST_F(MemoryIndexTest, FtsSyntaxInUserTextIsHarmless) {
  note("cmake.md", "# CMake\n\nThe cmake build and its title.\n");
  auto index = open_index();
  ASSERT_TRUE(index->reindex());
  const std::vector<std::string> hostile = {"cmake AND (",
                                            "\"cmake",
                                            "cmake\"\"",
                                            "cm*",
                                            "*",
                                            "NEAR(cmake build",
                                            "title: cmake",
                                            "{title body}: cmake",
                                            "cmake OR",
                                            "NOT cmake",
                                            "-cmake ^cmake +",
                                            "'; DROP TABLE documents; --",
                                            "cmake)",
                                            "",
                                            "   ",
                                            std::string("\xff\xfe cmake \xc3"),
                                            std::string("cmake\0build", 11),
                                            "AND OR NOT NEAR"};
  for (const auto& text : hostile) {
    auto hits = index->recall(text, 5);
    ASSERT_TRUE(hits) << "recall(" << text << "): " << hits.error().message;
    auto near = index->similar(text, 5);
    ASSERT_TRUE(near) << "similar(" << text << "): " << near.error().message;
    if (text.find("cmake") != std::string::npos && text.find("cm*") == std::string::npos) {
      EXPECT_EQ(ids(*hits), (std::vector<std::string>{"note:cmake"})) << text;
    }
  }
  EXPECT_EQ(index->terms().match_expression("title: NEAR(\"x\" AND y*)"),
            R"("title" OR "near" OR "x" OR "y")");
  EXPECT_EQ(index->terms().match_expression("the of and"),
            R"("the" OR "of" OR "and")");  // only stop words: kept
  EXPECT_EQ(index->terms().match_expression("*** ((("), "");
  // The table is intact.
  auto again = index->recall("cmake", 5);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->size(), 1u);
}

TEST_F(MemoryIndexTest, SimilarityFormulaHasItsDocumentedValues) {
  auto index = open_index();
  const TermAnalyzer& t = index->terms();
  const std::string first = "Fix the stale date crash in the navigation bar";
  EXPECT_EQ(t.stems(first), (std::set<std::string>{"fix", "stale", "date", "crash", "navig", "bar"}));
  EXPECT_DOUBLE_EQ(stem_similarity(t.stems(first), t.stems(first)), 1.0);
  // The same words in another order and inflection: identical stem sets.
  EXPECT_DOUBLE_EQ(
      stem_similarity(t.stems(first), t.stems("fixing crashes of stale dates in navigation bars")), 1.0);
  // A close paraphrase: 5 of 6 stems shared.
  const double paraphrase =
      stem_similarity(t.stems(first), t.stems("the navigation bar crashes when a date is stale"));
  EXPECT_NEAR(paraphrase, 10.0 / 11.0, 1e-9);
  EXPECT_GE(paraphrase, kSimilarThreshold);
  EXPECT_LT(stem_similarity(t.stems(first), t.stems("add a dark mode toggle to the settings page")), 0.3);
  EXPECT_LT(stem_similarity(t.stems(first), t.stems("fix the login form")), 0.3);

  using S = std::set<std::string>;
  EXPECT_NEAR(stem_similarity(S{"a", "b", "c", "d", "e", "f"}, S{"a", "b", "c", "d", "e", "x"}), 10.0 / 12,
              1e-9);
  EXPECT_NEAR(stem_similarity(S{"a", "b", "c", "d", "e", "f"}, S{"a", "b", "c", "d", "x", "y"}), 8.0 / 12,
              1e-9);
  // One edit apart and both of 5+ bytes: half a match each way.
  EXPECT_DOUBLE_EQ(stem_similarity(S{"crash", "date"}, S{"crahs", "date"}), 3.0 / 4);
  EXPECT_DOUBLE_EQ(stem_similarity(S{"fix"}, S{"fox"}), 0.0);  // too short to be a typo
  EXPECT_DOUBLE_EQ(stem_similarity(S{}, S{}), 0.0);
  EXPECT_DOUBLE_EQ(stem_similarity(S{"a"}, S{}), 0.0);
}

TEST_F(MemoryIndexTest, SimilarRescoresTheBm25CandidatesBySubject) {
  note("navbar.md",
       "---\ntitle: Fix the stale date crash in the navigation bar\n---\nThe date was cached.\n");
  note("dates.md", "# Date formats\n\nWe print dates as ISO-8601. A stale date is a cached one.\n");
  trace("t-login", closed_trace("t-login", "fix the login form crash"));
  trace("t-open", R"({"id": "t-open", "request": "navigation bar stale date crash", "result": null})");
  auto index = open_index();
  auto stats = index->reindex();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->traces, 1);  // the open trace is not indexed

  auto hits = index->similar("navigation bar crashes when the date is stale", 5);
  ASSERT_TRUE(hits) << hits.error().message;
  ASSERT_FALSE(hits->empty());
  EXPECT_EQ(hits->front().kind + ":" + hits->front().id, "note:navbar");
  EXPECT_NEAR(hits->front().score, 10.0 / 11.0, 1e-9);
  for (const auto& h : *hits) {
    EXPECT_GT(h.score, 0.0);
    EXPECT_LE(h.score, 1.0);
    if (h.id != "navbar") {
      EXPECT_LT(h.score, kSimilarThreshold) << h.id;
    }
  }
  auto exact = index->similar("fix the login form crash", 1);
  ASSERT_TRUE(exact);
  ASSERT_EQ(exact->size(), 1u);
  EXPECT_EQ(exact->front().id, "t-login");
  EXPECT_DOUBLE_EQ(exact->front().score, 1.0);
  auto none = index->similar("quarterly revenue spreadsheet", 5);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST_F(MemoryIndexTest, PackContextTakesWholeItemsWithinTheBudget) {
  // Sizes in bytes of the indexed text (tokens = ceil(bytes / 4)).
  note("big.md", "# Parser errors\n\nparser parser error " + std::string(3960, 'x') + "\n");
  note("medium.md", "# Parser notes\n\nparser error " + std::string(760, 'y') + "\n");
  note("small.md", "# Parser tip\n\nparser error " + std::string(360, 'z') + "\n");
  note("other.md", "# Unrelated\n\nnothing to see\n");
  trace("t1", closed_trace("t1", "parser error parser error parser error"));
  auto index = open_index();
  ASSERT_TRUE(index->reindex());

  auto pack = pack_context(*index, "parser error", 350);
  ASSERT_TRUE(pack) << pack.error().message;
  EXPECT_EQ(pack->budget, 350);
  std::int64_t sum = 0;
  std::vector<std::string> got;
  for (const auto& item : pack->items) {
    got.push_back(item.id);
    EXPECT_EQ(item.tokens, static_cast<std::int64_t>((item.content.size() + 3) / 4));
    EXPECT_NE(item.content.find("parser error"), std::string::npos);  // whole, not a snippet
    EXPECT_NE(item.kind, "trace");
    sum += item.tokens;
  }
  EXPECT_EQ(pack->tokens, sum);
  EXPECT_LE(pack->tokens, 350);
  // big (~1000 tokens) does not fit and is passed over; medium (~200) and small (~100) do.
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"medium", "small"}));

  auto tight = pack_context(*index, "parser error", 150);
  ASSERT_TRUE(tight);
  ASSERT_EQ(tight->items.size(), 1u);
  EXPECT_EQ(tight->items[0].id, "small");
  auto nothing = pack_context(*index, "parser error", 0);
  ASSERT_TRUE(nothing);
  EXPECT_TRUE(nothing->items.empty());
  EXPECT_EQ(nothing->tokens, 0);
}

TEST_F(MemoryIndexTest, SkillsAreMatchedToTheRequestByTheirDescription) {
  write_file(paths.skills / "cmake-build.md",
             "---\ndescription: Configure and build the project with CMake and Ninja\ntags: "
             "[compile]\n---\nSteps...\n");
  write_file(paths.skills / "release" / "SKILL.md",
             "---\ndescription: Publish a release - tag it, write the changelog, upload the archive\n---\n");
  write_file(paths.skills / "notes-only.md", "# No description, not a skill\n\nbuild release\n");
  write_file(paths.skills / "broken.md", "---\ndescription: [unclosed\n---\n");

  auto build = discover_skills(paths, "please build the project with cmake", 5);
  ASSERT_TRUE(build) << build.error().message;
  ASSERT_EQ(build->size(), 1u);
  EXPECT_EQ((*build)[0].name, "cmake-build");
  EXPECT_EQ((*build)[0].description, "Configure and build the project with CMake and Ninja");
  EXPECT_EQ((*build)[0].path, ".orch/memory/skills/cmake-build.md");
  EXPECT_GT((*build)[0].score, 0.0);

  auto release = discover_skills(paths, "tag a new release and compile it", 5);
  ASSERT_TRUE(release);
  ASSERT_EQ(release->size(), 2u);
  EXPECT_EQ((*release)[0].name, "release");  // two words match, against one tag
  EXPECT_EQ((*release)[0].path, ".orch/memory/skills/release/SKILL.md");
  EXPECT_EQ((*release)[1].name, "cmake-build");

  auto none = discover_skills(paths, "water the plants", 5);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  auto no_folder = discover_skills(memory_paths(dir / "elsewhere"), "build", 5);
  ASSERT_TRUE(no_folder);
  EXPECT_TRUE(no_folder->empty());
}

TEST_F(MemoryIndexTest, ReindexSkipsBrokenFilesAndReportsThem) {
  note("good.md", "# Good\n\nThe retry backoff is exponential.\n");
  note("bad-yaml.md", "---\ntitle: [unclosed\n---\nbody\n");
  note("never-closed.md", "---\ntitle: x\nno end\n");
  note("binary.md", std::string("abc\0def", 7));
  trace("broken", "{\"id\": \"broken\", ");
  trace("no-request", R"({"id": "no-request", "result": "pass"})");
  trace("ok", closed_trace("ok", "tune the retry backoff"));
  auto index = open_index();
  auto stats = index->reindex();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->notes, 1);
  EXPECT_EQ(stats->traces, 1);
  const std::string skipped = orch::join(stats->skipped, "\n");
  EXPECT_EQ(stats->skipped.size(), 5u) << skipped;
  EXPECT_NE(skipped.find(".orch/memory/notes/bad-yaml.md: front matter is not valid YAML"), std::string::npos)
      << skipped;
  EXPECT_NE(
      skipped.find(
          ".orch/memory/notes/never-closed.md: front matter opened with '---' on line 1 is never closed"),
      std::string::npos)
      << skipped;
  EXPECT_NE(skipped.find(".orch/memory/notes/binary.md: holds a NUL byte"), std::string::npos) << skipped;
  EXPECT_NE(skipped.find(".orch/traces/broken.json: not valid JSON: parse error"), std::string::npos)
      << skipped;
  EXPECT_NE(skipped.find(".orch/traces/no-request.json: trace: field 'request' is missing"),
            std::string::npos)
      << skipped;
  auto hits = index->recall("retry backoff", 5);
  ASSERT_TRUE(hits);
  auto found = ids(*hits);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<std::string>{"note:good", "trace:ok"}));
  // An unchanged source set is not re-read, and still reports what it skipped.
  auto again = index->reindex();
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->rebuilt);
  EXPECT_EQ(again->skipped, stats->skipped);
  EXPECT_EQ(again->notes, 1);
}

TEST_F(MemoryIndexTest, ReindexRebuildsOnlyWhenASourceChanged) {
  note("a.md", "# Alpha\n\nfirst words\n");
  auto index = open_index();
  auto first = index->reindex();
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->rebuilt);
  auto same = index->reindex();
  ASSERT_TRUE(same);
  EXPECT_FALSE(same->rebuilt);

  note("a.md", "# Alpha\n\nsecond words\n");
  auto edited = index->reindex();
  ASSERT_TRUE(edited);
  EXPECT_TRUE(edited->rebuilt);
  EXPECT_TRUE(index->recall("first", 5)->empty());
  EXPECT_EQ(index->recall("second", 5)->size(), 1u);

  note("sub/b.md", "# Beta\n\nsecond words too\n");
  ASSERT_TRUE(index->reindex()->rebuilt);
  EXPECT_EQ(index->recall("second", 5)->size(), 2u);
  fs::remove(paths.notes / "a.md");
  auto removed = index->reindex();
  ASSERT_TRUE(removed);
  EXPECT_TRUE(removed->rebuilt);
  EXPECT_EQ(removed->notes, 1);
  EXPECT_EQ(ids(*index->recall("second", 5)), (std::vector<std::string>{"note:sub/b"}));
  EXPECT_TRUE(index->reindex(/*force=*/true)->rebuilt);

  // A second connection (another process) sees the same index.
  auto other = open_index();
  EXPECT_FALSE(other->reindex()->rebuilt);
  EXPECT_EQ(other->recall("beta", 5)->size(), 1u);
}

TEST_F(MemoryIndexTest, AFullRebuildOfSixHundredFilesTakesWellUnderASecond) {
  for (int i = 0; i < 300; ++i) {
    note("n" + std::to_string(i) + ".md",
         "---\ntitle: Note " + std::to_string(i) + "\ntags: [a, b]\n---\n# Note\n\n" +
             "Some knowledge about topic " + std::to_string(i) + " and the build, tests and deployment.\n");
    trace("t" + std::to_string(i),
          closed_trace("t" + std::to_string(i), "request number " + std::to_string(i)));
  }
  auto index = open_index();
  const auto start = std::chrono::steady_clock::now();
  auto stats = index->reindex(true);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->notes, 300);
  EXPECT_EQ(stats->traces, 300);
  std::printf("full rebuild of 600 files: %lld ms\n", static_cast<long long>(ms));
  EXPECT_LT(ms, 1000);
  const auto again_start = std::chrono::steady_clock::now();
  ASSERT_FALSE(index->reindex()->rebuilt);
  const auto again_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - again_start)
          .count();
  std::printf("unchanged reindex of 600 files: %lld ms\n", static_cast<long long>(again_ms));
  EXPECT_LT(again_ms, 200);
}

TEST(MarkdownNote, TitleTagsAndSummaryComeFromFrontMatterOrTheText) {
  auto a = parse_markdown_note("---\ntitle: From YAML\ntags: [x, y]\nsummary: short\n---\n# Heading\nbody\n",
                               "file");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->title, "From YAML");
  EXPECT_EQ(a->tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(a->summary, "short");
  EXPECT_EQ(a->body, "# Heading\nbody\n");
  auto b = parse_markdown_note("```\n# not a heading\n```\n# The Heading ##\ntext", "file");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->title, "The Heading");
  auto c = parse_markdown_note("---\ntags: one, two three\n---\nno heading\n", "file-name");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->title, "file-name");
  EXPECT_EQ(c->tags, (std::vector<std::string>{"one", "two", "three"}));
  auto d = parse_markdown_note("\xEF\xBB\xBF---\r\ntitle: crlf\r\n---\r\nbody\r\n", "f");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->title, "crlf");
  EXPECT_FALSE(parse_markdown_note("---\n- a list\n---\n", "f"));
  EXPECT_FALSE(parse_markdown_note("---\ntitle: {a: b}\n---\n", "f"));
  EXPECT_FALSE(parse_markdown_note("---\ntitle: open\n", "f"));
}

// A front matter problem names the file's line (the front matter starts on line 2).
TEST(MarkdownNote, FrontMatterProblemsNameTheFilesLine) {
  auto tab = parse_markdown_note("---\ntitle: t\ntags:\n\t- a\n---\nbody\n", "f");
  ASSERT_FALSE(tab);
  EXPECT_EQ(
      tab.error().message,
      "front matter is not valid YAML: line 4: found character that cannot start any token (a tab: YAML "
      "indents with spaces only)");
  auto twice = parse_markdown_note("---\ntitle: one\nsummary: s\ntitle: two\n---\n", "f");
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message,
            "front matter is not valid YAML: line 4: key 'title' is written twice in one mapping (first at "
            "line 2)");
  auto control = parse_markdown_note(std::string("---\ntitle: a") + '\x01' + "b\n---\n", "f");
  ASSERT_FALSE(control);
  EXPECT_NE(control.error().message.find("line 2: control character U+0001 is not allowed"),
            std::string::npos)
      << control.error().message;
  // Scalars are text as written: a number-looking title is kept as it reads.
  auto number = parse_markdown_note("---\ntitle: 1.50\nname: \"quoted\"\n---\n", "f");
  ASSERT_TRUE(number) << number.error().message;
  EXPECT_EQ(number->title, "1.50");
  EXPECT_EQ(number->name, "quoted");
}

}  // namespace
}  // namespace orch::memory
