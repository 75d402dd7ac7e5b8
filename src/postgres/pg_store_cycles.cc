// postgres/pg_store_cycles.cc — PgStore's CycleStore: the cycle runs of
// `orch cycle` and the transitions their writer applied (tables `cycles` and
// `cycle_transitions`; the statements in pg_runtime_rows.cc).
#include <fmt/format.h>

#include "postgres/pg_runtime_rows.h"
#include "postgres/pg_store.h"

namespace orch {

namespace pg_cycle_rows = detail::pg_rows;

Expected<void> PgStore::insert_cycle(const CycleRecord& cycle) {
  ORCH_TRY(conn_->exec(fmt::format("inserting cycle run '{}'", cycle.id), pg_cycle_rows::kInsertCycle,
                       pg_cycle_rows::cycle_params(cycle)));
  return {};
}

Expected<void> PgStore::update_cycle(const CycleRecord& cycle) {
  auto updated = ORCH_TRY(conn_->exec(fmt::format("updating cycle run '{}'", cycle.id),
                                      pg_cycle_rows::kUpdateCycle, pg_cycle_rows::cycle_params(cycle)));
  if (updated.affected() == 0)
    return std::unexpected(not_found(fmt::format("updating cycle run '{}': no such cycle run", cycle.id)));
  return {};
}

Expected<std::optional<CycleRecord>> PgStore::find_cycle(const std::string& id) {
  auto found = ORCH_TRY(conn_->exec(fmt::format("reading cycle run '{}'", id), pg_cycle_rows::kFindCycle,
                                    detail::PgParams().text(id)));
  if (found.rows() == 0) return std::nullopt;
  return pg_cycle_rows::read_cycle(found, 0);
}

Expected<std::vector<CycleRecord>> PgStore::list_cycles() {
  return pg_cycle_rows::read_all_rows(ORCH_TRY(conn_->exec("listing cycle runs", pg_cycle_rows::kListCycles)),
                                      pg_cycle_rows::read_cycle);
}

Expected<bool> PgStore::insert_transition(const CycleTransition& transition) {
  const std::string what = fmt::format("recording the transition of item '{}' in cycle {} of cycle run '{}'",
                                       transition.item, transition.cycle, transition.run);
  // The run is looked up first: its foreign key is checked only at COMMIT, which
  // would fail the caller's whole transaction instead of this transition. Cycle
  // runs are never deleted, so one found here is still there at the COMMIT.
  auto run =
      ORCH_TRY(conn_->exec(what, pg_cycle_rows::kCycleExists, detail::PgParams().text(transition.run)));
  if (run.rows() == 0) return std::unexpected(not_found(fmt::format("{}: no such cycle run", what)));
  auto inserted = ORCH_TRY(
      conn_->exec(what, pg_cycle_rows::kInsertTransition, pg_cycle_rows::transition_params(transition)));
  return inserted.affected() > 0;
}

Expected<std::vector<CycleTransition>> PgStore::transitions(const std::string& run) {
  auto listed = ORCH_TRY(conn_->exec(fmt::format("reading the transitions of cycle run '{}'", run),
                                     pg_cycle_rows::kTransitionsOfRun, detail::PgParams().text(run)));
  return pg_cycle_rows::read_all_rows(listed, pg_cycle_rows::read_transition);
}

}  // namespace orch
