// ledger/cycle_rows.cc — the SQL of the cycle store's statements, and how its
// records bind to them and are read back (see cycle_rows.h).
#include "ledger/cycle_rows.h"

namespace orch::detail::rows {

// The column lists, in parameter order for bind_* and column order for read_*.
#define ORCH_CYCLE_COLUMNS \
  "id, name, workspace, config_file, status, cycles, doc_json, created_at, updated_at"
#define ORCH_TRANSITION_COLUMNS \
  "run, cycle, job, item, from_state, to_state, gate, gate_exit, hash_before, hash_after, time_ms"

const char kInsertCycle[] =
    "INSERT INTO cycles (" ORCH_CYCLE_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
const char kUpdateCycle[] =
    "UPDATE cycles SET name = ?2, workspace = ?3, config_file = ?4, status = ?5, cycles = ?6, "
    "doc_json = ?7, created_at = ?8, updated_at = ?9 WHERE id = ?1";
const char kFindCycle[] = "SELECT " ORCH_CYCLE_COLUMNS " FROM cycles WHERE id = ?1";
const char kListCycles[] = "SELECT " ORCH_CYCLE_COLUMNS " FROM cycles ORDER BY created_at DESC, id DESC";
const char kCycleExists[] = "SELECT 1 FROM cycles WHERE id = ?1";

void bind_cycle(Statement& s, const CycleRecord& c) {
  s.bind_text(1, c.id);
  s.bind_text(2, c.name);
  s.bind_text(3, c.workspace);
  s.bind_text(4, c.config_file);
  s.bind_text(5, cycle_status_name(c.status));
  s.bind_int(6, c.cycles);
  s.bind_text(7, c.doc_json.empty() ? std::string_view("{}") : std::string_view(c.doc_json));
  s.bind_int(8, c.created_at);
  s.bind_int(9, c.updated_at);
}

CycleRecord read_cycle(const Statement& s) {
  CycleRecord c;
  c.id = s.column_text(0);
  c.name = s.column_text(1);
  c.workspace = s.column_text(2);
  c.config_file = s.column_text(3);
  c.status = parse_cycle_status(s.column_text(4)).value_or(CycleStatus::Running);
  c.cycles = static_cast<int>(s.column_int(5));
  c.doc_json = s.column_text(6);
  c.created_at = s.column_int(7);
  c.updated_at = s.column_int(8);
  return c;
}

// ON CONFLICT DO NOTHING: a second transition of a (run, cycle, item) writes
// nothing (the schema's trigger cycle_transitions_recorded_once says the same,
// before the constraint is checked, so that a hand-written INSERT OR REPLACE
// cannot delete the first either).
const char kInsertTransition[] = "INSERT INTO cycle_transitions (" ORCH_TRANSITION_COLUMNS
                                 ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
                                 "ON CONFLICT (run, cycle, item) DO NOTHING";
const char kTransitionsOfRun[] =
    "SELECT seq, " ORCH_TRANSITION_COLUMNS " FROM cycle_transitions WHERE run = ?1 ORDER BY seq";

void bind_transition(Statement& s, const CycleTransition& t) {
  s.bind_text(1, t.run);
  s.bind_int(2, t.cycle);
  s.bind_text(3, t.job);
  s.bind_text(4, t.item);
  s.bind_text(5, t.from);
  s.bind_text(6, t.to);
  s.bind_text(7, t.gate);
  s.bind_int(8, t.gate_exit);
  s.bind_text(9, t.hash_before);
  s.bind_text(10, t.hash_after);
  s.bind_int(11, t.time_ms);
}

CycleTransition read_transition(const Statement& s) {
  CycleTransition t;
  t.seq = s.column_int(0);
  t.run = s.column_text(1);
  t.cycle = static_cast<int>(s.column_int(2));
  t.job = s.column_text(3);
  t.item = s.column_text(4);
  t.from = s.column_text(5);
  t.to = s.column_text(6);
  t.gate = s.column_text(7);
  t.gate_exit = static_cast<int>(s.column_int(8));
  t.hash_before = s.column_text(9);
  t.hash_after = s.column_text(10);
  t.time_ms = s.column_int(11);
  return t;
}

#undef ORCH_TRANSITION_COLUMNS
#undef ORCH_CYCLE_COLUMNS

}  // namespace orch::detail::rows
