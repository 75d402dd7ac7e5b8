// orch/cycle_store.h — where the cycle runtime (`orch cycle`) keeps its cycle
// runs and the transitions they applied.
//
// A cycle run is one `orch cycle run CYCLE.yaml` from its first cycle to its end:
// the config it started with, every cycle's objectives, jobs, milestones and the
// writer's decisions (the document, schemas/cycle-report.schema.json), its
// status and the number of cycles finished. One record per cycle run, updated in
// place as a whole, never half-written (the SQLite ledger's table `cycles`,
// schema v13, docs/store.md). Its plan, work, review and verify phases are engine
// runs owned by it (RunOwner: cycle, ID, N, PHASE).
//
// A transition is one change of an item's state the writer applied: the
// ledger's audit (table `cycle_transitions`), exported to
// .orch/cycles/RUN/audit/transitions.jsonl. At most one per (cycle run, cycle,
// item): insert_transition reports a second as already there, so a writer
// resumed after kill -9 never applies one twice.
//
// One process drives a cycle run at a time (the runtime holds the store's lock
// on "cycle-ID": Store::lock). One CycleStore is one connection, used from one
// thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch {

// running: not finished (interrupted, or killed: `orch cycle resume ID`);
// converged: no item can advance (each is done or stuck); max_iterations: the
// limit was reached with items left; budget: the token cap stopped it
// (resumable with a higher one); failed: something outside the items stopped it
// (the status file unreadable, a phase that could not run).
enum class CycleStatus { Running, Converged, MaxIterations, Budget, Failed };

const char* cycle_status_name(CycleStatus status);  // running, converged, max_iterations, budget, failed
std::optional<CycleStatus> parse_cycle_status(std::string_view name);

struct CycleRecord {
  std::string id;           // e.g. 20261207-160000-proofs
  std::string name;         // the config's name
  std::string workspace;    // absolute
  std::string config_file;  // cycle.yaml, absolute
  CycleStatus status = CycleStatus::Running;
  int cycles = 0;        // cycles finished (their writer done)
  std::string doc_json;  // the cycle run's document
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;
};

// One applied change of an item's state (seed 003: AuditEntry).
struct CycleTransition {
  std::string run;   // the cycle run's id
  int cycle = 0;     // 1, 2, ...
  std::string job;   // the job's slug
  std::string item;  // the item's id
  std::string from;
  std::string to;
  std::string gate;  // the gate command as run
  int gate_exit = 0;
  std::string hash_before;  // the file's content hash before the job
  std::string hash_after;   // and as the gate checked it
  std::int64_t time_ms = 0;
  std::int64_t seq = 0;  // its place in the ledger's audit (set by the store)
};

class CycleStore {
 public:
  virtual ~CycleStore() = default;
  // Fails (Store) when the id exists.
  virtual Expected<void> insert_cycle(const CycleRecord& cycle) = 0;
  // Every column but id; NotFound for an unknown cycle run.
  virtual Expected<void> update_cycle(const CycleRecord& cycle) = 0;
  virtual Expected<std::optional<CycleRecord>> find_cycle(const std::string& id) = 0;
  virtual Expected<std::vector<CycleRecord>> list_cycles() = 0;  // newest first
  // Records an applied transition; false (and nothing written) when one for the
  // same (run, cycle, item) is recorded already. NotFound for an unknown run.
  virtual Expected<bool> insert_transition(const CycleTransition& transition) = 0;
  // A cycle run's transitions in the order they were recorded.
  virtual Expected<std::vector<CycleTransition>> transitions(const std::string& run) = 0;
};

}  // namespace orch
