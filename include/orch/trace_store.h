// orch/trace_store.h — where the request runtime (`orch task`) keeps its traces.
//
// A trace is one request's way through the task runtime's state machine
// (src/flows/task/): its classification, pipeline, every state it entered, the
// verifier's verdicts, how it closed. The contract: one record per trace,
// updated in place (the current state and the whole trace document), and its
// events, every transition and outcome in order, append-only like the run
// events (the SQLite ledger's tables `traces` and `trace_events`, schema v4,
// docs/store.md).
//
// The state machine's rules live in the runtime, not here: the store keeps what it
// is given. A runtime that reads a trace, decides, and writes it back does so
// between begin() and commit(): a transaction that serialises writers from the
// start (SQLite: BEGIN IMMEDIATE), so two processes logging the same trace never
// decide on a stale row.
//
// One TraceStore is one connection, used from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "orch/error.h"

namespace orch {

enum class TraceStatus { Open, Done, Escalated, Abandoned };

struct TraceRecord {
  std::string id;         // e.g. 20261130-121500-fix-the-stale-date-crash
  std::string request;    // verbatim
  std::string project;    // --project, "" when none
  std::string workspace;  // absolute
  std::string state;      // the state entered last: CLASSIFY, RECALL, ..., DONE, ESCALATED, ABANDONED
  TraceStatus status = TraceStatus::Open;
  std::string doc_json;  // the trace document (schemas/trace.schema.json)
  std::string run_id;    // the run `orch task run` drives for it; "" when none
  std::int64_t created_at = 0;
  std::int64_t updated_at = 0;  // last transition: `task gc` measures idleness from it
  std::int64_t closed_at = 0;   // 0 while open
};

struct TraceEventRecord {
  std::int64_t seq = 0;  // assigned by the store
  std::string trace_id;
  std::int64_t ts = 0;
  std::string kind;   // trace_created, state_entered, verify_verdict, engine_result, closed, learning_result
  std::string state;  // the state the event is about ("" when none)
  std::string data_json;  // "{}" or a JSON object with details
};

const char* trace_status_name(TraceStatus status);  // open, done, escalated, abandoned
std::optional<TraceStatus> parse_trace_status(std::string_view name);

class TraceStore {
 public:
  virtual ~TraceStore() = default;

  virtual Expected<void> begin() = 0;
  virtual Expected<void> commit() = 0;
  virtual Expected<void> rollback() = 0;

  // Fails (Store) when the id exists.
  virtual Expected<void> insert_trace(const TraceRecord& trace) = 0;
  // Every column but id; NotFound for an unknown trace.
  virtual Expected<void> update_trace(const TraceRecord& trace) = 0;
  virtual Expected<std::optional<TraceRecord>> find_trace(const std::string& id) = 0;
  virtual Expected<std::vector<TraceRecord>> list_traces() = 0;  // newest first
  virtual Expected<std::int64_t> append_trace_event(const TraceEventRecord& event) = 0;
  virtual Expected<std::vector<TraceEventRecord>> trace_events(const std::string& trace_id) = 0;  // in order
};

}  // namespace orch
