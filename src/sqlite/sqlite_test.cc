// The SQLite wrappers' contracts (sqlite_db.h, sqlite_statement.h,
// connection_settings.h), on files of no orch schema. What the ledger and the
// memory build on them is tested in their own layers.
#include <gtest/gtest.h>

#include <string>

#include "sqlite/connection_settings.h"
#include "sqlite/sqlite_db.h"
#include "sqlite/sqlite_statement.h"
#include "testing/testing.h"

namespace orch {
namespace {

SqliteDb open_db(const std::filesystem::path& path) {
  auto db = SqliteDb::open(path, "a test database");
  EXPECT_TRUE(db) << db.error().message;
  return std::move(*db);
}

TEST(SqliteStatement, TextSurvivesARoundTripWhateverItsBytes) {
  testing::TempDir dir;
  SqliteDb db = open_db(dir / "t.db");
  ASSERT_TRUE(db.exec("CREATE TABLE t (v TEXT)", "creating t"));
  const std::string odd("nul\0byte \xff\xfe not UTF-8", 22);
  auto insert = Statement::prepare(db, "INSERT INTO t (v) VALUES (?1)");
  ASSERT_TRUE(insert) << insert.error().message;
  for (const std::string& value : {odd, std::string()}) {
    insert->bind_text(1, value);
    ASSERT_TRUE(insert->run([] { return "inserting"; }));
  }
  auto select = Statement::prepare(db, "SELECT v, v IS NULL FROM t ORDER BY rowid");
  ASSERT_TRUE(select);
  ResetOnExit reset(*select);
  ASSERT_TRUE(*select->step([] { return "reading"; }));
  EXPECT_EQ(select->column_text(0), odd);
  ASSERT_TRUE(*select->step([] { return "reading"; }));
  EXPECT_EQ(select->column_text(0), "");
  EXPECT_FALSE(select->column_bool(1)) << "an empty string is stored as '', not NULL";
  EXPECT_FALSE(*select->step([] { return "reading"; }));
}

TEST(SqliteStatement, AFailureNamesTheFileWhatWasBeingDoneAndWhy) {
  testing::TempDir dir;
  SqliteDb db = open_db(dir / "t.db");
  ASSERT_TRUE(db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)", "creating t"));
  auto insert = Statement::prepare(db, "INSERT INTO t (id) VALUES (?1)");
  ASSERT_TRUE(insert);
  insert->bind_int(1, 7);
  ASSERT_TRUE(insert->run([] { return "inserting row 7"; }));
  insert->bind_int(1, 7);
  auto again = insert->run([] { return "inserting row 7 again"; });
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::Store);
  EXPECT_EQ(again.error().message,
            (dir / "t.db").string() + ": inserting row 7 again: UNIQUE constraint failed: t.id");
  EXPECT_FALSE(db.in_transaction());
}

TEST(SqliteDb, AFileThatIsNoDatabaseIsRefusedNamingWhatItShouldHold) {
  testing::TempDir dir;
  testing::write_file(dir / "notes.db", "these are my notes, and long enough to be read as a header\n");
  SqliteDb db = open_db(dir / "notes.db");
  auto read = db.query_int("SELECT count(*) FROM sqlite_master", "listing the tables");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message, (dir / "notes.db").string() +
                                      ": not a SQLite database, so not a test database; refusing to use it");
  EXPECT_EQ(testing::read_file(dir / "notes.db"),
            "these are my notes, and long enough to be read as a header\n");
}

TEST(ConnectionSettings, WalForeignKeysAndTheRequestedSync) {
  testing::TempDir dir;
  SqliteDb db = open_db(dir / "t.db");
  set_busy_timeout(db);
  ASSERT_TRUE(apply_connection_settings(db, SyncMode::Full));
  EXPECT_EQ(*db.query_text("PRAGMA journal_mode", "test"), "wal");
  EXPECT_EQ(*db.query_int("PRAGMA synchronous", "test"), 2);  // FULL
  EXPECT_EQ(*db.query_int("PRAGMA foreign_keys", "test"), 1);
}

TEST(ConnectionSettings, SyncModeParsing) {
  EXPECT_EQ(*sync_mode_from_env(nullptr), SyncMode::Normal);
  EXPECT_EQ(*sync_mode_from_env(""), SyncMode::Normal);
  EXPECT_EQ(*sync_mode_from_env("normal"), SyncMode::Normal);
  EXPECT_EQ(*sync_mode_from_env("Full"), SyncMode::Full);
  EXPECT_FALSE(sync_mode_from_env("off"));
}

}  // namespace
}  // namespace orch
