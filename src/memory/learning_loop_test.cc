// The learning loop: lessons, the fault ledger, reading traces, `orch memory
// harvest`, and a second request that recalls the first one's lesson — on real
// SQLite files in temporary workspaces.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>

#include "memory/memory.h"
#include "memory/memory_db.h"
#include "testing/testing.h"

namespace orch::memory {
namespace {

namespace fs = std::filesystem;
using orch::testing::read_file;
using orch::testing::TempDir;
using orch::testing::write_file;

constexpr std::int64_t kJuly11 = 1783760400000;  // 2026-07-11T09:00:00Z

class LearningLoopTest : public ::testing::Test {
 protected:
  // The value of a one-number query on memory.db, through a plain sqlite3 connection.
  std::int64_t count(const std::string& sql) {
    sqlite3* db = nullptr;
    std::int64_t value = -1;
    if (sqlite3_open_v2(paths.db.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
          sqlite3_step(st) == SQLITE_ROW)
        value = sqlite3_column_int64(st, 0);
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return value;
  }
  static LessonInput lesson(const std::string& id, const std::string& request, const std::string& result,
                            std::vector<std::string> failures = {}, std::int64_t closed_at = kJuly11) {
    LessonInput l;
    l.trace_id = id;
    l.request = request;
    l.intent = "bug_fix";
    l.result = result;
    l.verify_failures = std::move(failures);
    l.closed_at_ms = closed_at;
    return l;
  }

  TempDir dir;
  MemoryPaths paths = memory_paths(dir.path());
};

TEST_F(LearningLoopTest, HarvestingATraceTwiceKeepsOneLesson) {
  LessonInput l = lesson("2026-07-11-fix-date", "Fix the stale date crash", "pass", {"root cause named"});
  l.fix = "cleared the date cache on resume";
  l.summary = "The cache outlived the day.";
  auto first = harvest_lesson(paths, l);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, paths.lessons / "2026-07-11-fix-date.md");
  l.summary = "The cache outlived the day (edited).";
  auto second = harvest_lesson(paths, l);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(count("SELECT count(*) FROM lessons"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM lessons WHERE summary LIKE '%(edited)%'"), 1);
  EXPECT_EQ(count("SELECT closed_at FROM lessons"), kJuly11);

  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(paths.lessons)) files.push_back(e.path().filename());
  EXPECT_EQ(files, (std::vector<fs::path>{"2026-07-11-fix-date.md"}));  // no temporary file left behind
  const std::string note = read_file(*second);
  EXPECT_TRUE(
      note.starts_with("---\ntitle: \"Lesson: Fix the stale date crash\"\ntrace: \"2026-07-11-fix-date\"\n"))
      << note;
  EXPECT_NE(note.find("closed_at: \"2026-07-11T09:00:00Z\""), std::string::npos) << note;
  EXPECT_NE(note.find("## What VERIFY failed on\n\n- root cause named\n"), std::string::npos) << note;
  EXPECT_NE(note.find("## What fixed it\n\ncleared the date cache on resume\n"), std::string::npos) << note;
  EXPECT_NE(note.find("(edited)"), std::string::npos);

  auto store = open_memory_store(paths);
  ASSERT_TRUE(store);
  auto stored = (*store)->lessons().read_lessons();
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].lesson.verify_failures, (std::vector<std::string>{"root cause named"}));
  EXPECT_EQ((*stored)[0].note_path, ".orch/memory/lessons/2026-07-11-fix-date.md");
}

TEST_F(LearningLoopTest, ALessonNeedsASafeTraceIdAndAKnownResult) {
  for (const std::string& id :
       std::vector<std::string>{"", "../escape", "a/b", ".hidden", std::string(201, 'x'), "sp ace"}) {
    auto r = harvest_lesson(paths, lesson(id, "r", "pass"));
    ASSERT_FALSE(r) << id;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidInput);
  }
  auto bad_result = harvest_lesson(paths, lesson("t1", "r", "done"));
  ASSERT_FALSE(bad_result);
  EXPECT_NE(bad_result.error().message.find("result 'done'"), std::string::npos);
  EXPECT_FALSE(fs::exists(paths.lessons / "t1.md"));
  EXPECT_FALSE(fs::exists(dir / "escape.md"));
  auto bad_fault = update_fault_ledger(paths, lesson("t1", "r", "exploded", {"tests pass"}));
  ASSERT_FALSE(bad_fault);
  EXPECT_EQ(bad_fault.error().code, ErrorCode::InvalidInput);
  EXPECT_FALSE(fs::exists(paths.db));
}

TEST_F(LearningLoopTest, FaultLedgerCountsAPatternSeenInTwoTraces) {
  ASSERT_TRUE(
      update_fault_ledger(paths, lesson("t1", "fix parser", "fail", {"Tests pass (3 failed)"}, kJuly11)));
  ASSERT_TRUE(update_fault_ledger(
      paths, lesson("t2", "fix lexer", "pass", {"tests pass: 12 failed", "lint clean"}, kJuly11 + 60000)));
  // The same trace again (a retried close) is not counted twice.
  ASSERT_TRUE(update_fault_ledger(
      paths, lesson("t2", "fix lexer", "pass", {"tests pass: 12 failed", "lint clean"}, kJuly11 + 60000)));

  auto faults = list_faults(paths);
  ASSERT_TRUE(faults) << faults.error().message;
  ASSERT_EQ(faults->size(), 2u);
  const Fault& top = (*faults)[0];
  EXPECT_EQ(top.pattern, "tests pass # failed");
  EXPECT_EQ(top.count, 2);
  EXPECT_EQ(top.first_seen_ms, kJuly11);
  EXPECT_EQ(top.last_seen_ms, kJuly11 + 60000);
  EXPECT_EQ(top.last_trace_id, "t2");
  EXPECT_EQ(top.example, "fix lexer");
  EXPECT_EQ(top.description, "Tests pass (3 failed)");
  EXPECT_EQ((*faults)[1].pattern, "lint clean");
  EXPECT_EQ((*faults)[1].count, 1);

  // An older trace seen late raises the count but not last_seen.
  ASSERT_TRUE(update_fault_ledger(
      paths, lesson("t0", "fix old", "fail", {"tests pass (1 failed)"}, kJuly11 - 60000)));
  faults = list_faults(paths);
  ASSERT_TRUE(faults);
  EXPECT_EQ((*faults)[0].count, 3);
  EXPECT_EQ((*faults)[0].first_seen_ms, kJuly11 - 60000);
  EXPECT_EQ((*faults)[0].last_seen_ms, kJuly11 + 60000);
  EXPECT_EQ((*faults)[0].last_trace_id, "t2");

  const std::string md = read_file(paths.fault_ledger);
  EXPECT_NE(
      md.find("| 3 | Tests pass (3 failed) | 2026-07-11 08:59 UTC | 2026-07-11 09:01 UTC | t2 | fix lexer |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | lint clean |"), std::string::npos) << md;
}

TEST_F(LearningLoopTest, ACleanPassChangesNothingAndAFailureWithoutItemsIsCountedByResult) {
  ASSERT_TRUE(update_fault_ledger(paths, lesson("t1", "all good", "pass")));
  EXPECT_FALSE(fs::exists(paths.db));  // a true no-op: not even the database is made
  EXPECT_FALSE(fs::exists(paths.fault_ledger));
  ASSERT_TRUE(update_fault_ledger(paths, lesson("t2", "gave up", "abandoned")));
  ASSERT_TRUE(update_fault_ledger(paths, lesson("t3", "gave up again", "abandoned")));
  auto faults = list_faults(paths);
  ASSERT_TRUE(faults);
  ASSERT_EQ(faults->size(), 1u);
  EXPECT_EQ((*faults)[0].pattern, "result:abandoned intent:bug_fix");
  EXPECT_EQ((*faults)[0].count, 2);
}

TEST(FaultPattern, NormalisesCaseNumbersAndPunctuation) {
  EXPECT_EQ(fault_pattern("Tests pass (3 failed)"), "tests pass # failed");
  EXPECT_EQ(fault_pattern("tests  pass: 12failed!"), "tests pass # failed");
  EXPECT_EQ(fault_pattern("  root-cause named, not symptom "), "root cause named not symptom");
  EXPECT_EQ(fault_pattern("v2.10 API"), "v # # api");
  EXPECT_EQ(fault_pattern("!!!"), "");
  EXPECT_EQ(fault_pattern(std::string(500, 'a')).size(), 200u);
}

// A trace in the format `orch task` writes (flows/task_trace.cc), closed pass
// after one FAIL verdict and a retry.
constexpr const char* kRetriedTrace = R"({
  "id": "2026-07-11-fix-the-stale-date-crash",
  "request": "Fix the stale date crash in the navigation bar",
  "project": "app", "intent": "bug_fix", "complexity": "trivial", "strategy": "direct",
  "state": "DONE", "result": "pass", "summary": "",
  "transitions": [
    {"t": "2026-07-11T09:00:00.000Z", "state": "CLASSIFY", "note": "bug_fix/trivial"},
    {"t": "2026-07-11T09:01:00.000Z", "state": "EXECUTE", "note": "patched the formatter"},
    {"t": "2026-07-11T09:02:00.000Z", "state": "VERIFY", "note": ""},
    {"t": "2026-07-11T09:03:00.000Z", "state": "EXECUTE", "note": "cleared the cached date on resume"},
    {"t": "2026-07-11T09:04:00.000Z", "state": "VERIFY", "note": ""},
    {"t": "2026-07-11T09:05:00.000Z", "state": "SUMMARIZE", "note": "the cache outlived midnight"},
    {"t": "2026-07-11T09:06:00.500Z", "state": "DONE", "note": "closed pass"}],
  "verifications": [
    {"verdict": "FAIL", "confidence": 0.5, "t": "2026-07-11T09:02:00Z", "retry": 0, "items": [
      {"check": "root cause named, not symptom", "kind": "attest", "status": "refuted", "detail": "symptom only"},
      {"check": "tests pass", "kind": "command", "status": "failed", "detail": "exit 1"},
      {"check": "regression test added", "kind": "attest", "status": "attested", "detail": ""}]},
    {"verdict": "PASS", "confidence": 1.0, "t": "2026-07-11T09:04:00Z", "retry": 1, "items": [
      {"check": "tests pass", "kind": "command", "status": "passed", "detail": "exit 0"}]}]
})";

TEST_F(LearningLoopTest, ALessonIsReadFromATraceDocument) {
  auto l = lesson_from_trace(nlohmann::json::parse(kRetriedTrace));
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->trace_id, "2026-07-11-fix-the-stale-date-crash");
  EXPECT_EQ(l->intent, "bug_fix");
  EXPECT_EQ(l->result, "pass");
  EXPECT_EQ(l->verify_failures, (std::vector<std::string>{"root cause named, not symptom", "tests pass"}));
  EXPECT_EQ(l->fix, "cleared the cached date on resume");
  EXPECT_EQ(l->summary, "the cache outlived midnight");
  EXPECT_EQ(l->closed_at_ms, kJuly11 + 6 * 60000 + 500);

  auto open = lesson_from_trace(nlohmann::json::parse(R"({"id": "x", "request": "r", "result": null})"));
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().message.find("still open"), std::string::npos);
  auto legacy = lesson_from_trace(nlohmann::json::parse(
      R"({"id": "y", "request": "r", "result": "fail", "verify_results": [{"item": "docs built", "passed": false},
          {"item": "lint", "passed": true}], "transitions": [{"t": "2026-07-11T11:00:00+02:00", "state": "VERIFY"}]})"));
  ASSERT_TRUE(legacy) << legacy.error().message;
  EXPECT_EQ(legacy->verify_failures, (std::vector<std::string>{"docs built"}));
  EXPECT_EQ(legacy->closed_at_ms, kJuly11);
  EXPECT_FALSE(lesson_from_trace(nlohmann::json::parse(R"({"id": "z", "request": "r", "result": "won"})")));
  EXPECT_FALSE(lesson_from_trace(nlohmann::json::parse(R"({"id": 3, "request": "r", "result": "pass"})")));
}

TEST_F(LearningLoopTest, HarvestTracesLearnsFromEachClosedTraceOnce) {
  write_file(paths.traces / "2026-07-11-fix-the-stale-date-crash.json", kRetriedTrace);
  write_file(paths.traces / "t-fail.json",
             R"({"id": "t-fail", "request": "speed up the parser", "intent": "performance", "result": "fail",
                 "verifications": [{"verdict": "FAIL", "items": [{"check": "tests pass", "status": "failed"}]}]})");
  write_file(paths.traces / "t-open.json", R"({"id": "t-open", "request": "still going", "result": null})");
  write_file(paths.traces / "t-broken.json", "{not json");
  auto first = harvest_traces(paths);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(first->harvested, 2);
  EXPECT_EQ(first->already, 0);
  EXPECT_EQ(first->open, 1);
  ASSERT_EQ(first->skipped.size(), 1u);
  EXPECT_TRUE(first->skipped[0].starts_with(".orch/traces/t-broken.json: not valid JSON"))
      << first->skipped[0];
  EXPECT_TRUE(first->reindex.rebuilt);
  EXPECT_EQ(first->reindex.lessons, 2);
  EXPECT_EQ(first->reindex.traces, 2);
  EXPECT_TRUE(fs::exists(paths.lessons / "t-fail.md"));
  EXPECT_EQ(count("SELECT count FROM faults WHERE pattern = 'tests pass'"), 2);
  EXPECT_NE(read_file(paths.fault_ledger).find("| 2 | tests pass |"), std::string::npos);

  auto second = harvest_traces(paths);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->harvested, 0);
  EXPECT_EQ(second->already, 2);
  EXPECT_FALSE(second->reindex.rebuilt);
  EXPECT_EQ(count("SELECT count(*) FROM lessons"), 2);
  EXPECT_EQ(count("SELECT count FROM faults WHERE pattern = 'tests pass'"), 2);
}

// The issue's acceptance test: the learning loop run on close (harvest lesson,
// update the fault ledger, reindex) lets a second, similar request find the
// first one's lesson through recall and through similarity.
TEST_F(LearningLoopTest, ASecondSimilarRequestFindsTheFirstOnesLesson) {
  write_file(paths.notes / "style.md", "# Code style\n\nWe use clang-format with the Google style.\n");
  write_file(paths.notes / "nav.md", "# Navigation\n\nThe navigation drawer lists projects.\n");
  // The closed trace is on disk too: its lesson must still come first in similarity.
  write_file(paths.traces / "2026-07-11-fix-the-stale-date-crash.json", kRetriedTrace);
  const LessonInput first = *lesson_from_trace(nlohmann::json::parse(kRetriedTrace));
  ASSERT_TRUE(harvest_lesson(paths, first));
  ASSERT_TRUE(update_fault_ledger(paths, first));
  auto reindexed = reindex_memory(paths);
  ASSERT_TRUE(reindexed) << reindexed.error().message;
  EXPECT_EQ(reindexed->lessons, 1);

  const std::string second = "the navigation bar crashes when the date is stale";
  auto index = MemoryIndex::open(paths);
  ASSERT_TRUE(index);
  auto recalled = (*index)->recall(second, 3);
  ASSERT_TRUE(recalled) << recalled.error().message;
  ASSERT_GE(recalled->size(), 2u);
  std::vector<std::string> top_two;
  for (std::size_t i = 0; i < 2; ++i) top_two.push_back((*recalled)[i].kind + " " + (*recalled)[i].path);
  std::sort(top_two.begin(), top_two.end());
  EXPECT_EQ(top_two,
            (std::vector<std::string>{"lesson .orch/memory/lessons/2026-07-11-fix-the-stale-date-crash.md",
                                      "trace .orch/traces/2026-07-11-fix-the-stale-date-crash.json"}));

  auto similar = (*index)->similar(second, 5);
  ASSERT_TRUE(similar) << similar.error().message;
  ASSERT_FALSE(similar->empty());
  EXPECT_EQ(similar->front().kind, "lesson");
  EXPECT_EQ(similar->front().id, "2026-07-11-fix-the-stale-date-crash");
  EXPECT_GE(similar->front().score, kSimilarThreshold);
  ASSERT_GE(similar->size(), 2u);
  EXPECT_EQ((*similar)[1].kind, "trace");  // the same score: the lesson wins the tie
  EXPECT_DOUBLE_EQ((*similar)[1].score, similar->front().score);

  auto pack = pack_context(**index, second, 3000);
  ASSERT_TRUE(pack);
  ASSERT_FALSE(pack->items.empty());
  EXPECT_EQ(pack->items.front().id, "2026-07-11-fix-the-stale-date-crash");
  EXPECT_NE(pack->items.front().content.find("cleared the cached date on resume"), std::string::npos);
}

// A lesson is recalled for its own words, not for the template every lesson
// shares ("What fixed it", "Not recorded.", "What VERIFY failed on"): an
// unrelated lesson is not packed into a request that says "fix" or "failed".
TEST_F(LearningLoopTest, ALessonIsNotRecalledForItsTemplatesWords) {
  LessonInput greeting = lesson("t-hello", "say hello there", "pass");
  greeting.intent = "documentation";
  ASSERT_TRUE(harvest_lesson(paths, greeting));
  LessonInput login = lesson("t-login", "the login page rejects good passwords", "fail", {"tests pass"});
  login.fix = "trimmed the password field";
  ASSERT_TRUE(harvest_lesson(paths, login));
  auto index = MemoryIndex::open(paths);
  ASSERT_TRUE(index);
  ASSERT_TRUE((*index)->reindex());
  // Words of the template only: no lesson (the login one matches "fix" and
  // "fail" through its intent and result tags, bug_fix and fail, as it should).
  for (const char* words : {"recorded", "what failed", "what fixed it", "summary none", "verify item"}) {
    auto hits = (*index)->recall(words, 5);
    ASSERT_TRUE(hits) << hits.error().message;
    for (const auto& h : *hits) EXPECT_EQ(h.id, "t-login") << words;
  }
  auto pack = pack_context(**index, "the login page is broken, fix it", 3000);
  ASSERT_TRUE(pack);
  ASSERT_EQ(pack->items.size(), 1u);
  EXPECT_EQ(pack->items.front().id, "t-login");
  EXPECT_NE(pack->items.front().content.find("trimmed the password field"), std::string::npos);
}

TEST_F(LearningLoopTest, LessonNotesAreRecalledEvenWhenTheDatabaseIsLost) {
  ASSERT_TRUE(harvest_lesson(paths, lesson("t1", "migrate the billing tables", "pass")));
  fs::remove(paths.db);
  auto index = MemoryIndex::open(paths);
  ASSERT_TRUE(index);
  auto stats = (*index)->reindex();
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->lessons, 1);
  auto hits = (*index)->similar("migrate billing tables", 1);
  ASSERT_TRUE(hits);
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ(hits->front().id, "t1");
  EXPECT_DOUBLE_EQ(hits->front().score, 1.0);
}

TEST_F(LearningLoopTest, TheDatabaseIsVersionedAndForeignFilesAreRefused) {
  auto index = MemoryIndex::open(paths);
  ASSERT_TRUE(index) << index.error().message;
  index->reset();
  EXPECT_EQ(count("PRAGMA user_version"), memory_schema_version());
  EXPECT_EQ(count("PRAGMA application_id"), kMemoryApplicationId);
  EXPECT_EQ(
      count("SELECT count(*) FROM sqlite_master WHERE name IN ('lessons', 'faults', 'documents', 'meta')"),
      4);

  TempDir other;
  const MemoryPaths text_file = memory_paths(other.path());
  write_file(text_file.db, "these are my notes, not a database\n");
  auto refused = MemoryIndex::open(text_file);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::Store);
  EXPECT_NE(refused.error().message.find("not a SQLite database"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(read_file(text_file.db), "these are my notes, not a database\n");

  TempDir third;
  const MemoryPaths foreign = memory_paths(third.path());
  fs::create_directories(foreign.root);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.db.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE lessons (x)", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  auto foreign_db = harvest_lesson(foreign, lesson("t1", "r", "pass"));
  ASSERT_FALSE(foreign_db);
  EXPECT_NE(foreign_db.error().message.find("not orch's memory"), std::string::npos)
      << foreign_db.error().message;

  auto missing = MemoryIndex::open(memory_paths(dir / "no-such-workspace"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::NotFound);
  EXPECT_FALSE(fs::exists(dir / "no-such-workspace"));
}

}  // namespace
}  // namespace orch::memory
