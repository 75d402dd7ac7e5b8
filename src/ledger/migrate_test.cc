// What open_sqlite_store accepts and refuses, and that refused files are left untouched.
#include "ledger/migrate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ledger/ledger_test_support.h"
#include "ledger/schema.h"
#include "orch/ledger.h"
#include "orch/review_store.h"
#include "orch/store.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace lt = ledger_test;
using testing::read_file;
using testing::write_file;

// Expects opening `path` to fail with a Store error naming the file and containing `fragment`.
void expect_refused(const std::filesystem::path& path, const std::string& fragment) {
  auto store = open_sqlite_store(path);
  ASSERT_FALSE(store) << "opened " << path;
  EXPECT_EQ(store.error().code, ErrorCode::Store);
  EXPECT_NE(store.error().message.find(path.string()), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find(fragment), std::string::npos) << store.error().message;
}

// Attempt 2 of step 'a' of the old ledgers' run 'old-run', succeeded; the test
// sets what it checks.
AttemptRecord second_attempt() {
  AttemptRecord a;
  a.run_id = "old-run";
  a.step_id = "a";
  a.number = 2;
  a.status = AttemptStatus::Succeeded;
  return a;
}

// Records `a` as orch does: inserted running, then finished, in one transaction.
void record_attempt(Store& store, AttemptRecord a) {
  ASSERT_TRUE(store.begin());
  const AttemptStatus status = a.status;
  a.status = AttemptStatus::Running;
  ASSERT_TRUE(store.insert_attempt(a));
  a.status = status;
  ASSERT_TRUE(store.finish_attempt(a));
  ASSERT_TRUE(store.commit());
}

TEST(LedgerFile, AFileThatIsNotADatabaseIsRefusedAndLeftAlone) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  std::string garbage;
  for (int i = 0; i < 400; ++i) garbage += "this is not a database, it is a diary entry\n";
  write_file(path, garbage);
  expect_refused(path, "not a SQLite database");
  EXPECT_EQ(read_file(path), garbage);
  EXPECT_FALSE(std::filesystem::exists(dir / "orch.db-wal"));
}

TEST(LedgerFile, AForeignSqliteDatabaseIsRefusedAndLeftAlone) {
  testing::TempDir dir;
  const auto path = dir / "app.db";
  {
    lt::RawDb raw(path);
    ASSERT_EQ(raw.exec("CREATE TABLE runs (id TEXT); CREATE TABLE schema_version (version INTEGER);"
                       "INSERT INTO schema_version VALUES (1);"),
              "");
  }
  expect_refused(path, "not an orch ledger");
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA journal_mode"), "delete") << "the journal mode was not changed";
  EXPECT_EQ(raw.query("SELECT count(*) FROM sqlite_master"), "2");
}

TEST(LedgerFile, ALedgerFromANewerOrchIsRefused) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  ASSERT_TRUE(open_sqlite_store(path));
  {
    lt::RawDb raw(path);
    ASSERT_EQ(raw.exec("INSERT INTO schema_version VALUES (99, 1, 'from the future')"), "");
  }
  expect_refused(path, "schema version 99, newer than this orch");
}

TEST(LedgerFile, AMarkedFileWithoutVersionsIsCalledDamaged) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_EQ(
        raw.exec("PRAGMA application_id = " + std::to_string(kOrchApplicationId) + "; CREATE TABLE x (y);"),
        "");
  }
  expect_refused(path, "damaged");
}

TEST(LedgerFile, AnEmptyFileBecomesALedger) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  write_file(path, "");
  auto store = open_sqlite_store(path);
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_TRUE((*store)->insert_run(lt::sample_run("r1")));
}

// Everything SQLite records about a ledger's schema, in one string.
std::string schema_of(const std::filesystem::path& path) {
  lt::RawDb raw(path);
  return raw.query(
      "SELECT group_concat(type || ' ' || name || ' ' || tbl_name || ': ' || coalesce(sql, ''), char(10))"
      " FROM (SELECT * FROM sqlite_schema ORDER BY type, name)") +
         " application_id=" + raw.query("PRAGMA application_id") +
         " journal_mode=" + raw.query("PRAGMA journal_mode") + " versions=" +
         raw.query("SELECT group_concat(version || ':' || description, ',') FROM schema_version") +
         " integrity=" + raw.query("PRAGMA integrity_check");
}

// A new ledger is built under a temporary name and renamed into place: it has
// exactly the schema the migrations give a ledger created in place, and no
// temporary file is left behind.
TEST(LedgerFile, ANewLedgerAppearsWholeWithTheSchemaTheMigrationsGive) {
  testing::TempDir dir;
  const auto fresh = dir / "fresh.db";
  const auto in_place = dir / "in-place.db";
  write_file(in_place, "");  // an empty file is created in place, by the migrations
  ASSERT_TRUE(open_sqlite_store(fresh));
  ASSERT_TRUE(open_sqlite_store(in_place));
  const std::string schema = schema_of(fresh);
  EXPECT_NE(schema.find("table traces traces"), std::string::npos) << schema;
  EXPECT_NE(schema.find("journal_mode=wal"), std::string::npos) << schema;
  EXPECT_NE(schema.find("integrity=ok"), std::string::npos) << schema;
  EXPECT_EQ(schema, schema_of(in_place));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find(".new-"), std::string::npos) << entry.path();
  auto store = open_sqlite_store(fresh);
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_TRUE((*store)->insert_run(lt::sample_run("r1")));
}

// Creating over an existing file never replaces it: the caller opens that one.
TEST(LedgerFile, CreatingALedgerThatAppearedMeanwhileLeavesItAlone) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  write_file(path, "someone else's");
  auto created = create_ledger_file(path, 1);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(*created, LedgerCreation::Exists);
  EXPECT_EQ(read_file(path), "someone else's");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1) << "the temporary ledger was left behind";
}

// A creation killed before its rename leaves `<path>.new-<pid>-<n>` behind; the
// next creation removes those of dead processes and leaves a live one's alone.
TEST(LedgerFile, ANewLedgerClearsWhatKilledCreationsLeftBehind) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  const pid_t dead = fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(dead, &status, 0), dead);
  const auto dead_file = dir / fmt::format("orch.db.new-{}-0", dead);
  const auto dead_wal = dir / fmt::format("orch.db.new-{}-0-wal", dead);
  const auto live_file = dir / fmt::format("orch.db.new-{}-3", getppid());
  const auto other_file = dir / fmt::format("other.db.new-{}-0", dead);
  for (const auto& p : {dead_file, dead_wal, live_file, other_file}) write_file(p, "half-built");
  auto created = create_ledger_file(path, 1);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_EQ(*created, LedgerCreation::Created);
  EXPECT_FALSE(std::filesystem::exists(dead_file));
  EXPECT_FALSE(std::filesystem::exists(dead_wal));
  EXPECT_TRUE(std::filesystem::exists(live_file)) << "a live process's creation was removed";
  EXPECT_TRUE(std::filesystem::exists(other_file)) << "another ledger's file was removed";
}

TEST(LedgerFile, AFolderInTheWayIsAnError) {
  testing::TempDir dir;
  write_file(dir / "file", "x");
  auto store = open_sqlite_store(dir / "file/orch.db");  // its parent is a file
  ASSERT_FALSE(store);
  EXPECT_NE(store.error().message.find((dir / "file").string()), std::string::npos) << store.error().message;
}

TEST(LedgerFile, ManyProcessesCreatingOneLedgerAtOnceCreateItOnce) {
  testing::TempDir dir;
  const auto path = dir / ".orch/orch.db";
  std::vector<pid_t> children;
  for (int i = 0; i < 6; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto store = open_sqlite_store(path);
      if (!store) {
        fprintf(stderr, "child: %s\n", store.error().message.c_str());
        _exit(1);
      }
      auto inserted = (*store)->insert_run(lt::sample_run("run-" + std::to_string(i)));
      _exit(inserted ? 0 : 2);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("SELECT count(*) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.query("SELECT count(*) FROM runs"), "6");
}

// A ledger written by an orch that knew only schema v1 opens, is migrated in
// place, and keeps its runs; columns added later read as their defaults.
TEST(LedgerFile, AVersion1LedgerIsMigratedAndKeepsItsRuns) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 1));
    ASSERT_EQ(
        raw.exec("INSERT INTO schema_version VALUES (1, 1, 'v1');"
                 "INSERT INTO runs VALUES ('old-run', 'n', 'succeeded', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                 " 1, 2, 3, 10, 0.5, 1, 100, 0, 0)"),
        "");
  }
  auto store = open_sqlite_store(path);
  ASSERT_TRUE(store) << store.error().message;
  auto run = (*store)->find_run("old-run");
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->status, RunStatus::Succeeded);
  EXPECT_EQ((*run)->spent_tokens, 10);
  EXPECT_EQ((*run)->budget_json, "{}");
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.exec("UPDATE runs SET budget_json = 'not json'").empty(), false)
      << "budget_json must be JSON";
}

// v3 widened three CHECK constraints by rewriting the CREATE text: the new
// statuses are accepted, everything else is still refused, the old rows are
// kept, and the file passes SQLite's integrity check.
TEST(LedgerFile, AVersion2LedgerAcceptsTheVersion3StatusesAndStillRefusesOthers) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 2));
    ASSERT_EQ(raw.exec("INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2');"
                       "INSERT INTO runs VALUES ('old-run', 'n', 'failed', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                       " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}')"),
              "");
    // Refused before the migration: the constraint is real.
    EXPECT_NE(raw.exec("UPDATE runs SET status = 'awaiting_approval'"), "");
  }
  {
    auto store = open_sqlite_store(path);
    ASSERT_TRUE(store) << store.error().message;
    auto run = (*store)->find_run("old-run");
    ASSERT_TRUE(run && *run);
    RunRecord r = **run;
    r.status = RunStatus::AwaitingApproval;
    ASSERT_TRUE((*store)->update_run(r));
    StepRecord s;
    s.run_id = "old-run";
    s.step_id = "deploy";
    s.status = StepStatus::AwaitingApproval;
    ASSERT_TRUE((*store)->begin());
    ASSERT_TRUE((*store)->upsert_step(s));
    AttemptRecord a;
    a.run_id = "old-run";
    a.step_id = "deploy";
    a.number = 1;
    a.status = AttemptStatus::Running;
    ASSERT_TRUE((*store)->insert_attempt(a));
    a.status = AttemptStatus::Stalled;
    ASSERT_TRUE((*store)->finish_attempt(a));
    ASSERT_TRUE((*store)->commit());
    auto steps = (*store)->steps("old-run");
    ASSERT_TRUE(steps);
    ASSERT_EQ(steps->size(), 1u);
    EXPECT_EQ((*steps)[0].status, StepStatus::AwaitingApproval);
    auto attempts = (*store)->attempts("old-run");
    ASSERT_TRUE(attempts && attempts->size() == 1);
    EXPECT_EQ((*attempts)[0].status, AttemptStatus::Stalled);
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.query("SELECT status FROM runs"), "awaiting_approval");
  EXPECT_NE(raw.exec("UPDATE runs SET status = 'paused'"), "") << "only the listed statuses";
  EXPECT_NE(raw.exec("UPDATE steps SET status = 'paused'"), "");
  // The append-only triggers on attempts survived the rewrite.
  EXPECT_NE(raw.exec("DELETE FROM attempts"), "");
}

// v6 added attempts.stdout_text and stderr_text: a v5 ledger's attempts keep
// their files (and read back with no text), new ones may keep their output in
// the row, and a finished attempt's new columns are as append-only as the rest.
TEST(LedgerFile, AVersion5LedgerKeepsItsAttemptsAndTakesOutputsInTheRow) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 5));
    ASSERT_EQ(
        raw.exec("INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2'), (3, 3, 'v3'), (4, 4, 'v4'),"
                 " (5, 5, 'v5');"
                 "INSERT INTO runs VALUES ('old-run', 'n', 'failed', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                 " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}');"
                 "INSERT INTO steps VALUES ('old-run', 'a', 0, '', 'shell', 'failed', 'r', '', '', 1, 1,"
                 " 0, 0, 0, 5, 1, 2);"
                 "INSERT INTO attempts VALUES ('old-run', 'a', 1, 'failed', 1, 'exited', 1, 0, 'r', '[]', '',"
                 " '/s/a.1.stdout', '/s/a.1.stderr', 3, 0, 0, 0, 'out', 0, 0, 0, 1, 2, 1, '')"),
        "");
  }
  {
    auto store = open_sqlite_store(path);
    ASSERT_TRUE(store) << store.error().message;
    auto old = (*store)->attempts("old-run", "a");
    ASSERT_TRUE(old && old->size() == 1u);
    EXPECT_EQ((*old)[0].stdout_path, "/s/a.1.stdout");
    EXPECT_EQ((*old)[0].stdout_text, "");
    AttemptRecord a = second_attempt();
    a.stdout_text = std::string("forty-two\0\xff", 11);  // bytes, as a stream may hold them
    a.stderr_text = "warning";
    ASSERT_NO_FATAL_FAILURE(record_attempt(**store, a));
    auto both = (*store)->attempts("old-run", "a");
    ASSERT_TRUE(both && both->size() == 2u);
    EXPECT_EQ((*both)[1].stdout_text, a.stdout_text);
    EXPECT_EQ((*both)[1].stderr_text, "warning");
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_NE(raw.exec("UPDATE attempts SET stdout_text = 'forged' WHERE number = 2"), "")
      << "a finished attempt never changes";
}

// v7 rewrote the status constraints of five tables as OR chains (no temporary
// b-tree per row written): a v6 ledger keeps its rows, its constraints still
// accept and refuse what they did, its append-only triggers survive, and a step
// upsert no longer builds a temporary table on it.
TEST(LedgerFile, AVersion6LedgerKeepsItsRowsAndConstraintsWithoutTemporaryTables) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  const std::string upsert =
      "INSERT INTO steps VALUES ('old-run', 'b', 1, '', 'shell', 'pending', '', '', '', 0, 0,"
      " 0, 0, 0, 0, 0, 0) ON CONFLICT (run_id, step_id) DO UPDATE SET status = 'done'";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 6));
    ASSERT_EQ(
        raw.exec(
            "INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2'), (3, 3, 'v3'), (4, 4, 'v4'),"
            " (5, 5, 'v5'), (6, 6, 'v6');"
            "INSERT INTO runs VALUES ('old-run', 'n', 'awaiting_approval', '', '/p.yaml', '/w', 1, 2, 0, 0,"
            " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}');"
            "INSERT INTO steps VALUES ('old-run', 'a', 0, '', 'shell', 'skipped', 'r', '', '', 1, 1,"
            " 0, 0, 0, 5, 1, 2);"
            "INSERT INTO attempts VALUES ('old-run', 'a', 1, 'stalled', 1, 'exited', 1, 0, 'r', '[]', '',"
            " '', '', 3, 0, 0, 0, 'out', 0, 0, 0, 1, 2, 1, '', 'text', '');"
            "INSERT INTO traces VALUES ('t', 'r', '', '/w', 'DONE', 'abandoned', '{}', '', 1, 1, 0);"
            "INSERT INTO reviews VALUES ('v', 'n', '/w', 'spend_cap', '', 0, '{}', 1, 1);"),
        "");
    EXPECT_EQ(raw.count_opcode(upsert, "OpenEphemeral"), 2) << "the v6 lists build one table per check";
  }
  {
    auto store = open_sqlite_store(path);
    ASSERT_TRUE(store) << store.error().message;
    auto steps = (*store)->steps("old-run");
    ASSERT_TRUE(steps && steps->size() == 1u);
    EXPECT_EQ((*steps)[0].status, StepStatus::Skipped);
    auto attempts = (*store)->attempts("old-run");
    ASSERT_TRUE(attempts && attempts->size() == 1u);
    EXPECT_EQ((*attempts)[0].status, AttemptStatus::Stalled);
    EXPECT_EQ((*attempts)[0].stdout_text, "text");
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.count_opcode(upsert, "OpenEphemeral"), 0);
  EXPECT_EQ(raw.exec(upsert), "");
  EXPECT_EQ(raw.query("SELECT status FROM steps WHERE step_id = 'b'"), "pending");
  EXPECT_EQ(raw.exec("UPDATE steps SET status = 'awaiting_approval' WHERE step_id = 'b'"), "");
  EXPECT_NE(raw.exec("UPDATE steps SET status = 'paused'"), "") << "only the listed statuses";
  EXPECT_NE(raw.exec("UPDATE runs SET status = 'paused'"), "");
  EXPECT_NE(raw.exec("UPDATE traces SET status = 'paused'"), "");
  EXPECT_NE(raw.exec("UPDATE reviews SET status = 'paused'"), "");
  EXPECT_NE(raw.exec("UPDATE reviews SET verdict = 'pass'"), "");
  EXPECT_EQ(raw.exec("UPDATE reviews SET status = 'passed', verdict = 'PASS'"), "");
  EXPECT_NE(raw.exec("DELETE FROM attempts"), "") << "the append-only triggers survived the rewrite";
  EXPECT_NE(raw.exec("UPDATE attempts SET status = 'running'"), "");
}

// A v6 file whose table text is not what orch wrote (edited by hand) is not
// half-migrated: the migration's check fails and the file stays at v6.
TEST(LedgerFile, AVersion6LedgerWithUnexpectedTableTextIsRefusedAndLeftAtVersion6) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 6));
    ASSERT_EQ(
        raw.exec("INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2'), (3, 3, 'v3'), (4, 4, 'v4'),"
                 " (5, 5, 'v5'), (6, 6, 'v6');"
                 "PRAGMA writable_schema = ON;"
                 "UPDATE sqlite_schema SET sql = replace(sql, '''skipped'',', '''skipped'',  ')"
                 " WHERE name = 'steps';"
                 "PRAGMA writable_schema = OFF;"),
        "");
  }
  expect_refused(path, "migrating to schema version 7: the table definitions were not rewritten as expected");
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), "6");
  EXPECT_EQ(raw.query("SELECT count(*) FROM sqlite_schema WHERE sql LIKE '%CHECK (status = %'"), "0");
}

// v8 dropped AUTOINCREMENT from events.seq: a v7 ledger keeps its events, a new
// event's seq is past every old one, the events row of sqlite_sequence is gone,
// and events are still append-only.
TEST(LedgerFile, AVersion7LedgerKeepsItsEventsAndTheirOrder) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 7));
    ASSERT_EQ(
        raw.exec("INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2'), (3, 3, 'v3'), (4, 4, 'v4'),"
                 " (5, 5, 'v5'), (6, 6, 'v6'), (7, 7, 'v7');"
                 "INSERT INTO runs VALUES ('old-run', 'n', 'failed', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                 " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}');"
                 "INSERT INTO events (seq, run_id, ts, kind, step_id, attempt, data)"
                 " VALUES (41, 'old-run', 1, 'run_started', '', 0, '{}');"),
        "");
    EXPECT_EQ(raw.query("SELECT seq FROM sqlite_sequence WHERE name = 'events'"), "41");
  }
  {
    auto store = open_sqlite_store(path);
    ASSERT_TRUE(store) << store.error().message;
    EventRecord e;
    e.run_id = "old-run";
    e.kind = "run_finished";
    e.data_json = "{}";
    ASSERT_TRUE((*store)->begin());
    auto seq = (*store)->append_event(e);
    ASSERT_TRUE(seq) << seq.error().message;
    EXPECT_EQ(*seq, 42);
    ASSERT_TRUE((*store)->commit());
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.query("SELECT group_concat(seq || ':' || kind) FROM events"),
            "41:run_started,42:run_finished");
  EXPECT_EQ(raw.query("SELECT count(*) FROM sqlite_sequence WHERE name = 'events'"), "0");
  EXPECT_EQ(
      raw.query("SELECT count(*) FROM sqlite_schema WHERE name = 'events' AND sql LIKE '%AUTOINCREMENT%'"),
      "0");
  EXPECT_NE(raw.exec("DELETE FROM events"), "") << "the append-only triggers survived the rewrite";
  EXPECT_NE(raw.exec("INSERT OR REPLACE INTO events VALUES (42, 'old-run', 1, 'x', '', 0, '{}')"), "");
}

// v9 let a review be abandoned: a v8 ledger keeps its reviews, and the status
// accepts 'abandoned' and still refuses what is not a status.
TEST(LedgerFile, AVersion8LedgerKeepsItsReviewsAndAcceptsAbandoned) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 8));
    ASSERT_EQ(
        raw.exec("INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2'), (3, 3, 'v3'), (4, 4, 'v4'),"
                 " (5, 5, 'v5'), (6, 6, 'v6'), (7, 7, 'v7'), (8, 8, 'v8');"
                 "INSERT INTO reviews VALUES ('v', 'n', '/w', 'spend_cap', '', 1, '{}', 1, 1);"),
        "");
    EXPECT_NE(raw.exec("UPDATE reviews SET status = 'abandoned'"), "") << "v8 knows no such status";
  }
  {
    auto ledger = open_sqlite_ledger(path);
    ASSERT_TRUE(ledger) << ledger.error().message;
    ReviewStore* reviews = &(*ledger)->reviews();
    auto found = reviews->find_review("v");
    ASSERT_TRUE(found && found->has_value());
    EXPECT_EQ((*found)->status, ReviewStatus::SpendCap);
    ReviewRecord r = **found;
    r.status = ReviewStatus::Abandoned;
    ASSERT_TRUE(reviews->update_review(r));
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.query("SELECT status || ':' || rounds FROM reviews"), "abandoned:1");
  EXPECT_NE(raw.exec("UPDATE reviews SET status = 'paused'"), "");
  EXPECT_EQ(raw.exec("UPDATE reviews SET status = 'running'"), "");
}

// v10 added the prompt cache's share of an attempt's input tokens: a v9
// ledger's attempts read as having none, and new ones keep theirs.
TEST(LedgerFile, AVersion9LedgerReadsItsAttemptsWithNoCacheTokensAndTakesThem) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 9));
    ASSERT_EQ(
        raw.exec("INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2'), (3, 3, 'v3'), (4, 4, 'v4'),"
                 " (5, 5, 'v5'), (6, 6, 'v6'), (7, 7, 'v7'), (8, 8, 'v8'), (9, 9, 'v9');"
                 "INSERT INTO runs VALUES ('old-run', 'n', 'failed', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                 " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}');"
                 "INSERT INTO steps VALUES ('old-run', 'a', 0, '', 'shell', 'failed', 'r', '', '', 1, 1,"
                 " 7, 3, 0, 5, 1, 2);"
                 "INSERT INTO attempts VALUES ('old-run', 'a', 1, 'failed', 1, 'exited', 1, 0, 'r', '[]', '',"
                 " '/s/a.1.stdout', '/s/a.1.stderr', 3, 0, 0, 0, 'out', 7, 3, 0, 1, 2, 1, '', '', '')"),
        "");
  }
  {
    auto store = open_sqlite_store(path);
    ASSERT_TRUE(store) << store.error().message;
    auto old = (*store)->attempts("old-run", "a");
    ASSERT_TRUE(old && old->size() == 1u);
    EXPECT_EQ((*old)[0].tokens_in, 7);
    EXPECT_EQ((*old)[0].cache_read_tokens, 0);
    EXPECT_EQ((*old)[0].cache_write_tokens, 0);
    AttemptRecord a = second_attempt();
    a.tokens_in = 7012;
    a.cache_read_tokens = 5000;
    a.cache_write_tokens = 2000;
    ASSERT_NO_FATAL_FAILURE(record_attempt(**store, a));
    auto both = (*store)->attempts("old-run", "a");
    ASSERT_TRUE(both && both->size() == 2u);
    EXPECT_EQ((*both)[1].cache_read_tokens, 5000);
    EXPECT_EQ((*both)[1].cache_write_tokens, 2000);
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_NE(raw.exec("UPDATE attempts SET cache_read_tokens = 1 WHERE number = 2"), "")
      << "a finished attempt never changes";
}

// v11 gave runs their owners: a v10 ledger's task and review runs are found by
// their owner, from what the runtimes read before (the trace's run, or the run
// named after a trace that recorded none; "review ID round N PHASE" of a review
// that exists); any other run, even one named like a phase, has none.
TEST(LedgerFile, AVersion10LedgerGivesItsTaskAndReviewRunsTheirOwners) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 10));
    std::string sql =
        "INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2'), (3, 3, 'v3'), (4, 4, 'v4'),"
        " (5, 5, 'v5'), (6, 6, 'v6'), (7, 7, 'v7'), (8, 8, 'v8'), (9, 9, 'v9'), (10, 10, 'v10');"
        "INSERT INTO traces VALUES ('t1', 'r', '', '/w', 'DONE', 'done', '{}', 'run-a', 1, 1, 0);"
        "INSERT INTO traces VALUES ('t2', 'r', '', '/w', 'EXECUTE', 'open', '{}', '', 1, 1, 0);"
        "INSERT INTO reviews VALUES ('rv-1', 'n', '/w', 'running', '', 1, '{}', 1, 1);";
    const std::pair<const char*, const char*> runs[] = {
        {"run-a", "my plan"},  // t1's run, whatever its name
        {"run-b", "task t2"},  // t2 was killed before it recorded its run
        {"run-c", "review rv-1 round 1 reviewers"},
        {"run-d", "review rv-1 round 12 fix"},
        {"run-e", "review ghost round 1 judge"},  // no such review
        {"run-f", "review rv-1 round 1 lunch"},   // no such phase
        {"run-g", "task t9"},                     // no such trace
    };
    int created = 0;
    for (const auto& [id, name] : runs)
      sql += fmt::format(
          "INSERT INTO runs VALUES ('{}', '{}', 'succeeded', '', '/p.yaml', '/w', 1, 1, 0, 0, {}, 2, 3, 0, 0,"
          " 0, 0, 0, 0, '{{}}');",
          id, name, ++created);
    ASSERT_EQ(raw.exec(sql), "");
  }
  auto store = open_sqlite_store(path);
  ASSERT_TRUE(store) << store.error().message;
  auto owner_of = [&](const char* id) {
    auto run = (*store)->find_run(id);
    EXPECT_TRUE(run && *run) << id;
    return run && *run ? (*run)->owner : RunOwner{};
  };
  EXPECT_EQ(owner_of("run-a"), (RunOwner{OwnerKind::Task, "t1", 0, ""}));
  EXPECT_EQ(owner_of("run-b"), (RunOwner{OwnerKind::Task, "t2", 0, ""}));
  EXPECT_EQ(owner_of("run-c"), (RunOwner{OwnerKind::Review, "rv-1", 1, "reviewers"}));
  EXPECT_EQ(owner_of("run-d"), (RunOwner{OwnerKind::Review, "rv-1", 12, "fix"}));
  EXPECT_EQ(owner_of("run-e"), RunOwner{});
  EXPECT_EQ(owner_of("run-f"), RunOwner{});
  EXPECT_EQ(owner_of("run-g"), RunOwner{});
  auto review_runs = (*store)->owned_runs(OwnerKind::Review, "rv-1");
  ASSERT_TRUE(review_runs) << review_runs.error().message;
  ASSERT_EQ(review_runs->size(), 2u);
  EXPECT_EQ((*review_runs)[0].id, "run-d") << "newest first";
  EXPECT_EQ((*review_runs)[1].id, "run-c");
  // A new run keeps the owner it is written with.
  RunRecord fresh = (*store)->find_run("run-g")->value();
  fresh.id = "run-h";
  fresh.owner = RunOwner{OwnerKind::Cycle, "c1", 3, "implement"};
  ASSERT_TRUE((*store)->insert_run(fresh));
  EXPECT_EQ(owner_of("run-h"), fresh.owner);
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_NE(raw.exec("UPDATE runs SET owner_kind = 'someone' WHERE id = 'run-a'"), "");
  EXPECT_NE(raw.exec("UPDATE runs SET owner_id = 't2' WHERE id = 'run-a'"), "") << "an owner never changes";
  EXPECT_NE(raw.exec("UPDATE runs SET owner_kind = '' WHERE id = 'run-c'"), "");
  EXPECT_EQ(raw.exec("UPDATE runs SET status = 'failed' WHERE id = 'run-c'"), "") << "the rest may";
}

// v12 added the machine that ran an attempt: a v11 ledger's attempts say none,
// and new ones keep theirs.
TEST(LedgerFile, AVersion11LedgerReadsItsAttemptsWithNoHostAndTakesOne) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 11));
    ASSERT_EQ(
        raw.exec("INSERT INTO schema_version VALUES (1, 1, 'v1'), (2, 2, 'v2'), (3, 3, 'v3'), (4, 4, 'v4'),"
                 " (5, 5, 'v5'), (6, 6, 'v6'), (7, 7, 'v7'), (8, 8, 'v8'), (9, 9, 'v9'), (10, 10, 'v10'),"
                 " (11, 11, 'v11');"
                 "INSERT INTO runs VALUES ('old-run', 'n', 'failed', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                 " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}', '', '', 0, '');"
                 "INSERT INTO steps VALUES ('old-run', 'a', 0, '', 'shell', 'failed', 'r', '', '', 1, 1,"
                 " 7, 3, 0, 5, 1, 2);"
                 "INSERT INTO attempts VALUES ('old-run', 'a', 1, 'failed', 1, 'exited', 1, 0, 'r', '[]', '',"
                 " '/s/a.1.stdout', '/s/a.1.stderr', 3, 0, 0, 0, 'out', 7, 3, 0, 1, 2, 1, '', '', '', 0, 0)"),
        "");
  }
  {
    auto store = open_sqlite_store(path);
    ASSERT_TRUE(store) << store.error().message;
    auto old = (*store)->attempts("old-run", "a");
    ASSERT_TRUE(old && old->size() == 1u);
    EXPECT_EQ((*old)[0].host, "");
    EXPECT_EQ((*old)[0].ending, AttemptEnding::Exited);
    AttemptRecord a = second_attempt();
    a.host = "worker-2";
    ASSERT_NO_FATAL_FAILURE(record_attempt(**store, a));
    auto both = (*store)->attempts("old-run", "a");
    ASSERT_TRUE(both && both->size() == 2u);
    EXPECT_EQ((*both)[1].host, "worker-2");
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
}

}  // namespace
}  // namespace orch
