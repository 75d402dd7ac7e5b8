// ledger/sqlite_cycles.cc — SqliteStore's CycleStore: the cycle runs of
// `orch cycle` and the transitions their writer applied (tables `cycles` and
// `cycle_transitions`, schema v13; the statements in cycle_rows.cc).
#include <fmt/format.h>

#include "ledger/cycle_rows.h"
#include "ledger/sqlite_store.h"
#include "ledger/statement_rows.h"

namespace orch {

namespace cycle_rows = detail::rows;

Expected<void> SqliteStore::insert_cycle(const CycleRecord& cycle) {
  Statement& insert_cycle_sql = *ORCH_TRY(prepared(sql_.insert_cycle, cycle_rows::kInsertCycle));
  cycle_rows::bind_cycle(insert_cycle_sql, cycle);
  return insert_cycle_sql.run([&] { return fmt::format("inserting cycle run '{}'", cycle.id); });
}

Expected<void> SqliteStore::update_cycle(const CycleRecord& cycle) {
  Statement& update_cycle_sql = *ORCH_TRY(prepared(sql_.update_cycle, cycle_rows::kUpdateCycle));
  cycle_rows::bind_cycle(update_cycle_sql, cycle);
  ORCH_TRY(update_cycle_sql.run([&] { return fmt::format("updating cycle run '{}'", cycle.id); }));
  if (db_.changes() == 0)
    return std::unexpected(not_found(fmt::format("updating cycle run '{}': no such cycle run", cycle.id)));
  return {};
}

Expected<std::optional<CycleRecord>> SqliteStore::find_cycle(const std::string& id) {
  Statement& find_cycle_sql = *ORCH_TRY(prepared(sql_.find_cycle, cycle_rows::kFindCycle));
  find_cycle_sql.bind_text(1, id);
  return detail::first_row(find_cycle_sql, cycle_rows::read_cycle,
                           [&] { return fmt::format("reading cycle run '{}'", id); });
}

Expected<std::vector<CycleRecord>> SqliteStore::list_cycles() {
  Statement& list_cycles_sql = *ORCH_TRY(prepared(sql_.list_cycles, cycle_rows::kListCycles));
  return detail::collect(list_cycles_sql, cycle_rows::read_cycle, [] { return "listing cycle runs"; });
}

Expected<bool> SqliteStore::insert_transition(const CycleTransition& transition) {
  Statement& exists_sql = *ORCH_TRY(prepared(sql_.cycle_exists, cycle_rows::kCycleExists));
  Statement& insert_sql = *ORCH_TRY(prepared(sql_.insert_transition, cycle_rows::kInsertTransition));
  auto describe = [&] {
    return fmt::format("recording the transition of item '{}' in cycle {} of cycle run '{}'", transition.item,
                       transition.cycle, transition.run);
  };
  // The run is looked up first: its foreign key is checked only at COMMIT, which
  // would fail the caller's whole transaction instead of this transition. Cycle
  // runs are never deleted, so one found here is still there at the COMMIT.
  exists_sql.bind_text(1, transition.run);
  const auto run = ORCH_TRY(detail::first_row(
      exists_sql, [](const Statement&) { return true; }, describe));
  if (!run) return std::unexpected(not_found(fmt::format("{}: no such cycle run", describe())));
  cycle_rows::bind_transition(insert_sql, transition);
  ORCH_TRY(insert_sql.run(describe));
  return db_.changes() > 0;
}

Expected<std::vector<CycleTransition>> SqliteStore::transitions(const std::string& run) {
  Statement& transitions_sql = *ORCH_TRY(prepared(sql_.transitions_of_run, cycle_rows::kTransitionsOfRun));
  transitions_sql.bind_text(1, run);
  return detail::collect(transitions_sql, cycle_rows::read_transition,
                         [&] { return fmt::format("reading the transitions of cycle run '{}'", run); });
}

}  // namespace orch
