// ledger/statement_rows.h — stepping a query's statement into records.
//
// Every read of the store is one of two shapes: all the rows of a query, or the
// first one. Both reset the statement however they return, so no read leaves a
// read transaction open (pinning an old snapshot of the WAL). Shared by the
// files that implement SqliteStore (sqlite_store.cc, sqlite_cycles.cc).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "orch/error.h"
#include "sqlite/sqlite_statement.h"

namespace orch::detail {

// Steps `statement` to the end, reading each row with `read`; resets it whatever happens.
// `expected`: how many rows there will be, if known (saves re-allocating a
// 100,000-row vector as it grows).
template <class Read, class Describe>
auto collect(Statement& statement, const Read& read, const Describe& describe, std::size_t expected = 0)
    -> Expected<std::vector<decltype(read(statement))>> {
  ResetOnExit reset(statement);
  std::vector<decltype(read(statement))> rows;
  rows.reserve(expected);
  for (;;) {
    const bool row = ORCH_TRY(statement.step(describe));
    if (!row) return rows;
    rows.push_back(read(statement));
  }
}

// Steps once: the first row read with `read`, or nullopt. Resets the statement.
template <class Read, class Describe>
auto first_row(Statement& statement, const Read& read, const Describe& describe)
    -> Expected<std::optional<decltype(read(statement))>> {
  ResetOnExit reset(statement);
  const bool row = ORCH_TRY(statement.step(describe));
  if (!row) return std::nullopt;
  return read(statement);
}

}  // namespace orch::detail
