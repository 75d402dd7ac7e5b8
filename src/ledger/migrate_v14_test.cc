// Schema v14, runs executed by `orch worker` processes: a v13 ledger (the last
// before it) is migrated in place, keeps its runs (executed where they were
// driven), and records a run's dispatch.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ledger/ledger_test_support.h"
#include "ledger/schema.h"
#include "orch/ledger.h"
#include "orch/store.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace lt = ledger_test;

TEST(LedgerFile, AVersion13LedgerGainsTheWorkerTablesAndKeepsItsRuns) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 13));
    std::string versions = "INSERT INTO schema_version VALUES ";
    for (int v = 1; v <= 13; ++v) versions += fmt::format("{}({}, {}, 'v{}')", v > 1 ? ", " : "", v, v, v);
    ASSERT_EQ(
        raw.exec(versions +
                 ";INSERT INTO runs VALUES ('old-run', 'n', 'succeeded', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                 " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}', '', '', 0, '');"),
        "");
    EXPECT_EQ(raw.query("SELECT count(*) FROM sqlite_schema WHERE name IN ('work_items', 'workers')"), "0");
  }
  auto ledger = open_sqlite_ledger(path);
  ASSERT_TRUE(ledger) << ledger.error().message;
  auto run = (*ledger)->runs().find_run("old-run");
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->dispatch, Dispatch::Local) << "a run from before v14 was executed where it was driven";

  RunRecord r = **run;
  r.id = "new-run";
  r.dispatch = Dispatch::Workers;
  ASSERT_TRUE((*ledger)->runs().insert_run(r));
  auto back = (*ledger)->runs().find_run("new-run");
  ASSERT_TRUE(back && *back);
  EXPECT_EQ((*back)->dispatch, Dispatch::Workers);

  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.query("SELECT count(*) FROM sqlite_schema WHERE name IN ('work_items', 'workers')"), "2");
  EXPECT_NE(raw.exec("UPDATE runs SET dispatch = 'elsewhere' WHERE id = 'new-run'"), "")
      << "the CHECK refuses a dispatch orch does not know";
}

}  // namespace
}  // namespace orch
