// ledger/cycle_rows.h — how the cycle store's records (orch/cycle_store.h) map
// to the columns of the tables `cycles` and `cycle_transitions` (schema v13).
//
// As record_rows.h does for the other records: the SQL of each statement next
// to the functions that bind a record to its parameters and read it back, the
// parameters numbered in column order.
#pragma once

#include "orch/cycle_store.h"
#include "sqlite/sqlite_statement.h"

namespace orch::detail::rows {

// cycles (v13): ?1..?9 = id, name, workspace, config_file, status, cycles, doc_json,
// created_at, updated_at; kUpdateCycle sets every column but id (?1).
extern const char kInsertCycle[];
extern const char kUpdateCycle[];
extern const char kFindCycle[];    // ?1 = id
extern const char kListCycles[];   // newest first
extern const char kCycleExists[];  // ?1 = id: a row when it exists
void bind_cycle(Statement& statement, const CycleRecord& cycle);
CycleRecord read_cycle(const Statement& row);

// cycle_transitions (v13): the insert binds ?1..?11 in the order of
// CycleTransition (seq is assigned), and writes nothing when the (run, cycle,
// item) has its transition already.
extern const char kInsertTransition[];
extern const char kTransitionsOfRun[];  // ?1 = run, by seq
void bind_transition(Statement& statement, const CycleTransition& transition);
CycleTransition read_transition(const Statement& row);

}  // namespace orch::detail::rows
