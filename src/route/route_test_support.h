// route/route_test_support.h — the shipped route tables, loaded once, for the
// route layer's tests.
#pragma once

#include <gtest/gtest.h>

#include "route/tables.h"
#include "testing/testing.h"

namespace orch::route::test {

// The shipped tables (an empty workspace overrides nothing).
inline const RouteTables& shipped() {
  static const RouteTables tables = [] {
    orch::testing::TempDir empty;
    auto t = RouteTables::load(empty.path());
    if (!t) ADD_FAILURE() << t.error().message;
    return t ? *t : RouteTables{};
  }();
  return tables;
}

}  // namespace orch::route::test
