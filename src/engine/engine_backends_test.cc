// The engine's tests (engine_*_test.cc) on each backend of the ledger (issue 34):
// one suite, instantiated once per backend, the backend in each test's name
// (Backends/EngineTest.NAME/sqlite, .../postgres). The few about SQLite itself
// (EngineSqliteTest: the ledger's file, its WAL) run on SQLite only.
#include <gtest/gtest.h>

#include "testing/engine_fixture.h"

namespace orch {
namespace {

using orch::testing::EngineSqliteTest;
using orch::testing::EngineTest;

INSTANTIATE_TEST_SUITE_P(Backends, EngineTest, ::testing::ValuesIn(orch::testing::kEngineBackends),
                         orch::testing::engine_backend_name);
INSTANTIATE_TEST_SUITE_P(SqliteOnly, EngineSqliteTest, ::testing::Values("sqlite"),
                         orch::testing::engine_backend_name);

}  // namespace
}  // namespace orch
