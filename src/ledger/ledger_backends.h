// ledger/ledger_backends.h — one ledger (orch/ledger.h) on each backend, for the
// tests of the runtimes' stores (traces, reviews, cycle runs) that every
// backend must pass: a GoogleTest fixture parametrised by the backend's name.
//
// "sqlite": a ledger file in a temporary folder. "postgres": a fresh schema of
// the server ORCH_TEST_PG_URL_FILE names (testing/pg_test_schema.h; without
// one the test fails, it never skips), dropped after the test. raw_exec and
// raw_query reach the tables without orch, as a user's sqlite3 or psql would.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "ledger/ledger_test_support.h"
#include "orch/ledger.h"
#include "orch/postgres_store.h"
#include "testing/pg_test_schema.h"
#include "testing/testing.h"

namespace orch::ledger_test {

inline constexpr const char* kLedgerBackends[] = {"sqlite", "postgres"};

class LedgerOnBackend : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (is_postgres()) {
      auto schema = testing::PgTestSchema::create();
      ASSERT_TRUE(schema) << schema.error().message;
      schema_ = std::move(*schema);
    }
    ASSERT_NO_FATAL_FAILURE(reopen());
  }
  void TearDown() override {
    ledger_.reset();  // before the schema is dropped
    schema_.reset();
  }

  bool is_postgres() const { return std::string(GetParam()) == "postgres"; }

  // Closes the ledger and opens it again (one connection at a time, as a
  // process restarted after kill -9).
  void reopen() {
    ledger_.reset();
    auto opened = is_postgres() ? open_postgres_ledger(schema_->url(), dir_.path() / ".orch")
                                : open_sqlite_ledger(db_path());
    ASSERT_TRUE(opened) << opened.error().message;
    ledger_ = std::move(*opened);
  }

  // Runs `sql` outside orch: "" when it worked, else the database's message.
  std::string raw_exec(const std::string& sql) {
    if (is_postgres()) return schema_->exec(sql);
    RawDb raw(db_path());
    return raw.exec(sql);
  }
  // The first column of the first row of `sql`, as text ("" when none).
  std::string raw_query(const std::string& sql) {
    if (is_postgres()) return schema_->query(sql);
    RawDb raw(db_path());
    return raw.query(sql);
  }

  std::filesystem::path db_path() const { return dir_.path() / ".orch/orch.db"; }

  testing::TempDir dir_;
  std::unique_ptr<testing::PgTestSchema> schema_;  // declared before ledger_: dropped after it closes
  std::unique_ptr<Ledger> ledger_;
};

// The test's name suffix: its backend.
inline std::string ledger_backend_name(const ::testing::TestParamInfo<const char*>& info) {
  return info.param;
}

}  // namespace orch::ledger_test
