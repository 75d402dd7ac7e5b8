// Schema v15, the model an attempt called: a v14 ledger (the last before it) is
// migrated in place; its attempts say none, and new ones keep theirs.
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

TEST(LedgerFile, TheCurrentSchemaVersionIs15) {
  EXPECT_EQ(store_schema_version(), 15);
  EXPECT_EQ(schema_migrations().back().version, 15);
  EXPECT_NE(std::string(schema_migrations().back().description).find("attempts.model"), std::string::npos);
}

TEST(LedgerFile, AVersion14LedgersAttemptsHaveNoModelAndNewOnesKeepTheirs) {
  testing::TempDir dir;
  const auto path = dir / "orch.db";
  {
    lt::RawDb raw(path);
    ASSERT_NO_FATAL_FAILURE(lt::make_old_ledger(raw, 14));
    std::string versions = "INSERT INTO schema_version VALUES ";
    for (int v = 1; v <= 14; ++v) versions += fmt::format("{}({}, {}, 'v{}')", v > 1 ? ", " : "", v, v, v);
    ASSERT_EQ(
        raw.exec(versions +
                 ";INSERT INTO runs VALUES ('old-run', 'n', 'failed', '', '/p.yaml', '/w', 1, 2, 0, 0,"
                 " 1, 2, 3, 10, 0.5, 1, 100, 0, 0, '{}', '', '', 0, '', '');"
                 "INSERT INTO steps VALUES ('old-run', 'a', 0, '', 'llm', 'failed', 'r', '', '', 1, 1,"
                 " 7, 3, 0, 5, 1, 2);"
                 "INSERT INTO attempts VALUES ('old-run', 'a', 1, 'failed', 1, 'exited', 1, 0, 'r', '[]', '',"
                 " '/s/a.1.stdout', '/s/a.1.stderr', 3, 0, 0, 0, 'out', 7, 3, 0, 1, 2, 1, '', '', '', 0, 0,"
                 " 'here')"),
        "");
  }
  {
    auto store = open_sqlite_store(path);
    ASSERT_TRUE(store) << store.error().message;
    auto old = (*store)->attempts("old-run", "a");
    ASSERT_TRUE(old && old->size() == 1u);
    EXPECT_EQ((*old)[0].model, "") << "an attempt from before v15 names no model";
    EXPECT_EQ((*old)[0].host, "here");
    AttemptRecord a = (*old)[0];
    a.number = 2;
    a.status = AttemptStatus::Succeeded;
    a.model = "openai/gpt-test";
    ASSERT_TRUE((*store)->begin());
    ASSERT_TRUE((*store)->insert_attempt(a));
    ASSERT_TRUE((*store)->commit());
    auto both = (*store)->attempts("old-run", "a");
    ASSERT_TRUE(both && both->size() == 2u);
    EXPECT_EQ((*both)[1].model, "openai/gpt-test");
  }
  lt::RawDb raw(path);
  EXPECT_EQ(raw.query("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.query("SELECT max(version) FROM schema_version"), "15");
}

}  // namespace
}  // namespace orch
