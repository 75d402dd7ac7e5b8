// Black-box tests of `orch similarity` and `orch memory` through the real binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::run_orch;
using orch::testing::TempDir;
using orch::testing::write_file;


// A closed trace in the format `orch task` writes, that failed VERIFY once.
void write_trace(const TempDir& d, const std::string& id, const std::string& request,
                 const std::string& result) {
  write_file(
      d / (".orch/traces/" + id + ".json"),
      nlohmann::json{{"id", id},
                     {"request", request},
                     {"intent", "bug_fix"},
                     {"result", result == "open" ? nlohmann::json(nullptr) : nlohmann::json(result)},
                     {"transitions",
                      {{{"t", "2026-07-11T09:00:00Z"}, {"state", "CLASSIFY"}, {"note", ""}},
                       {{"t", "2026-07-11T09:05:00Z"}, {"state", "SUMMARIZE"}, {"note", "cache fixed"}}}},
                     {"verifications",
                      {{{"verdict", "FAIL"}, {"items", {{{"check", "tests pass"}, {"status", "failed"}}}}}}}}
          .dump());
}

TEST(CliMemory, AnEmptyWorkspaceHasNoMatchesAndNoFilesAreMade) {
  TempDir d;
  auto r = run_orch({"similarity", "fix the parser"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "no matches\n");
  auto s = run_orch({"memory", "search", "fix the parser", "--json"}, d.path());
  EXPECT_EQ(s.exit_code, 0) << s.err;
  auto j = nlohmann::json::parse(s.out);
  EXPECT_TRUE(j["hits"].empty());
  EXPECT_FALSE(fs::exists(d / ".orch"));
}

// A text that starts with '-' is read as an option by the parser: the error says how
// to give it, and that way works.
TEST(CliMemory, ASearchTextStartingWithADashSaysToPutDashDashBeforeIt) {
  TempDir d;
  auto r = run_orch({"memory", "search", "-cmake"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "'-cmake' was read as an option");
  EXPECT_HAS(r.err, "orch memory search -- -cmake");
  auto dashes = run_orch({"memory", "search", "--", "-cmake"}, d.path());
  EXPECT_EQ(dashes.exit_code, 0) << dashes.err;
}

TEST(CliMemory, HarvestThenASimilarRequestFindsTheLesson) {
  TempDir d;
  write_trace(d, "t1", "Fix the stale date crash in the navigation bar", "pass");
  write_trace(d, "t2", "Still working on the login form", "open");
  write_file(d / ".orch/traces/broken.json", "{");
  auto h = run_orch({"memory", "harvest"}, d.path());
  EXPECT_EQ(h.exit_code, 0) << h.err;
  EXPECT_HAS(h.out, "harvested 1 trace (0 already harvested, 1 open)");
  EXPECT_HAS(h.out, "skipped .orch/traces/broken.json: not valid JSON");
  EXPECT_EQ(h.out.find("broken.json"), h.out.rfind("broken.json")) << h.out;  // listed once
  EXPECT_HAS(h.out, "indexed 0 notes, 1 lesson, 1 trace");
  EXPECT_TRUE(fs::exists(d / ".orch/memory/lessons/t1.md"));
  EXPECT_HAS(read_file(d / ".orch/memory/FAULT_LEDGER.md"), "| 1 | tests pass |");

  auto again = run_orch({"memory", "harvest", "--json"}, d.path());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  auto j = nlohmann::json::parse(again.out);
  EXPECT_EQ(j["harvested"], 0);
  EXPECT_EQ(j["already"], 1);
  EXPECT_EQ(j["open"], 1);
  EXPECT_EQ(j["index"]["lessons"], 1);

  auto sim = run_orch({"similarity", "navigation bar crashes when the date is stale", "--json"}, d.path());
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  auto m = nlohmann::json::parse(sim.out);
  EXPECT_EQ(m["threshold"], 0.6);
  ASSERT_GE(m["matches"].size(), 1u) << sim.out;
  EXPECT_EQ(m["matches"][0]["kind"], "lesson");
  EXPECT_EQ(m["matches"][0]["id"], "t1");
  EXPECT_EQ(m["matches"][0]["path"], ".orch/memory/lessons/t1.md");
  EXPECT_GE(m["matches"][0]["score"].get<double>(), 0.6);
  EXPECT_EQ(m["matches"][0]["similar"], true);

  auto text =
      run_orch({"similarity", "navigation bar crashes when the date is stale", "--limit", "1"}, d.path());
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_HAS(text.out, "0.91 similar  lesson t1  Fix the stale date crash in the navigation bar");

  auto search = run_orch({"memory", "search", "stale date"}, d.path());
  EXPECT_EQ(search.exit_code, 0) << search.err;
  EXPECT_HAS(search.out, "lesson t1");
  EXPECT_HAS(search.out, "trace  t1");
  EXPECT_HAS(search.out, "[stale] [date]");
}

TEST(CliMemory, ReindexReportsABrokenNoteAndGoesOn) {
  TempDir d;
  write_file(d / ".orch/memory/notes/good.md", "# Retries\n\nBack off exponentially.\n");
  write_file(d / ".orch/memory/notes/bad.md", "---\ntitle: [oops\n---\n");
  auto r = run_orch({"memory", "reindex"}, d.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, "indexed 1 note, 0 lessons, 0 traces");
  EXPECT_HAS(r.out, "skipped .orch/memory/notes/bad.md: front matter is not valid YAML");
  auto j = run_orch({"memory", "reindex", "--json", "--workspace", d.path().string()}, d.path() / "..");
  EXPECT_EQ(j.exit_code, 0) << j.err;
  auto stats = nlohmann::json::parse(j.out);
  EXPECT_EQ(stats["notes"], 1);
  EXPECT_EQ(stats["skipped"].size(), 1u);
  auto s = run_orch({"memory", "search", "exponential backoff"}, d.path());
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_HAS(s.out, "note   good  Retries");
  EXPECT_HAS(s.err, "1 memory file(s) could not be indexed");
}

TEST(CliMemory, UserTextNeverBreaksTheQuery) {
  TempDir d;
  write_file(d / ".orch/memory/notes/n.md", "# Parser\n\nThe parser handles NEAR and AND.\n");
  for (const std::string text : {"AND (", "\"parser", "parser*", "NEAR(parser", "title: parser", "-- ;"}) {
    auto r = run_orch({"memory", "search", text}, d.path());
    EXPECT_EQ(r.exit_code, 0) << text << ": " << r.err;
    auto s = run_orch({"similarity", text}, d.path());
    EXPECT_EQ(s.exit_code, 0) << text << ": " << s.err;
  }
}

TEST(CliMemory, UsageErrorsExitTwoAndAnUnreadableDatabaseExitsOne) {
  TempDir d;
  EXPECT_EQ(run_orch({"similarity", "   "}, d.path()).exit_code, 2);
  EXPECT_EQ(run_orch({"similarity"}, d.path()).exit_code, 2);
  EXPECT_EQ(run_orch({"similarity", "x", "--limit", "0"}, d.path()).exit_code, 2);
  EXPECT_EQ(run_orch({"memory"}, d.path()).exit_code, 2);
  EXPECT_EQ(run_orch({"memory", "forget"}, d.path()).exit_code, 2);
  auto missing = run_orch({"memory", "reindex", "--workspace", "no-such-dir"}, d.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_HAS(missing.err, "workspace no-such-dir is not a folder");

  write_file(d / ".orch/memory/memory.db", "not a database at all, just some text that is long enough\n");
  auto broken = run_orch({"memory", "search", "anything"}, d.path());
  EXPECT_EQ(broken.exit_code, 1);
  EXPECT_HAS(broken.err, "memory.db: not a SQLite database");
  EXPECT_EQ(run_orch({"memory", "harvest"}, d.path()).exit_code, 1);
  EXPECT_EQ(run_orch({"similarity", "anything"}, d.path()).exit_code, 1);
}

}  // namespace
}  // namespace orch
