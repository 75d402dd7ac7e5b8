// Schema v13, the tables of the cycle runtime: a v12 ledger (the last before
// them) is migrated in place, keeps what it had, and serves cycle runs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ledger/ledger_test_support.h"
#include "ledger/schema.h"
#include "orch/cycle_store.h"
#include "orch/ledger.h"
#include "orch/store.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace lt = ledger_test;

// The schema_version rows of a ledger migrated to `version` by older orchs.
std::string v13_version_rows(int version) {
  std::string sql = "INSERT INTO schema_version VALUES ";
  for (int v = 1; v <= version; ++v) sql += fmt::format("{}({}, {}, 'v{}')", v > 1 ? ", " : "", v, v, v);
  return sql + ";";
}

TEST(LedgerFile, Version13IsTheCycleTables) {
  ASSERT_GE(schema_migrations().size(), 13u);
  EXPECT_EQ(schema_migrations()[12].version, 13);
  EXPECT_NE(std::string(schema_migrations()[12].description).find("cycles"), std::string::npos);
}

TEST(LedgerFile, AVersion12LedgerGainsTheCycleTablesAndKeepsItsRuns) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 12));
    ASSERT_EQ(
        raw.exec(v13_version_rows(12) +
                 "INSERT INTO runs VALUES ('old-run', 'n', 'succeeded', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                 " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}', 'cycle', 'c-old', 1, 'work');"
                 "INSERT INTO reviews VALUES ('rv-1', 'n', '/w', 'passed', 'PASS', 1, '{}', 1, 1);"),
        "");
    EXPECT_EQ(raw.query("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'cycle%'"), "0");
  }
  auto ledger = open_sqlite_ledger(path);
  ASSERT_TRUE(ledger) << ledger.error().message;
  auto run = (*ledger)->runs().find_run("old-run");
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->owner, (RunOwner{OwnerKind::Cycle, "c-old", 1, "work"}));
  auto review = (*ledger)->reviews().find_review("rv-1");
  ASSERT_TRUE(review && *review);
  EXPECT_EQ((*review)->verdict, "PASS");

  CycleStore& cycles = (*ledger)->cycles();
  auto none = cycles.list_cycles();
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
  CycleRecord c;
  c.id = "c1";
  c.name = "proofs";
  c.workspace = "/w";
  c.config_file = "/w/cycle.yaml";
  c.status = CycleStatus::Budget;
  c.cycles = 3;
  ASSERT_TRUE(cycles.insert_cycle(c));
  CycleTransition t;
  t.run = "c1";
  t.cycle = 3;
  t.item = "lemma-a";
  auto written = cycles.insert_transition(t);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_TRUE(*written);
  auto found = cycles.find_cycle("c1");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->status, CycleStatus::Budget);

  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), std::to_string(store_schema_version()));
  EXPECT_EQ(raw.query("SELECT description FROM schema_version WHERE version = 13"),
            schema_migrations()[12].description);
  EXPECT_EQ(
      raw.query("SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_schema"
                " WHERE tbl_name IN ('cycles', 'cycle_transitions') AND name NOT LIKE 'sqlite_%'"
                " ORDER BY type, name)"),
      "cycles_by_created cycle_transitions cycles cycle_transitions_never_change"
      " cycle_transitions_never_deleted cycle_transitions_never_replaced cycle_transitions_recorded_once");
  EXPECT_EQ(
      raw.query(
          "SELECT count(*) FROM pragma_foreign_key_list('cycle_transitions') WHERE \"table\" = 'cycles'"),
      "1");
  EXPECT_EQ(raw.query("SELECT count(*) FROM pragma_index_list('cycle_transitions') WHERE \"unique\" = 1"),
            "1");
}

}  // namespace
}  // namespace orch
