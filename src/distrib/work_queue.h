// distrib/work_queue.h — the queue of a workers run's attempts, in PostgreSQL.
//
// A run executed by `orch worker` processes (Dispatch::Workers) keeps its
// engine — ready steps, budgets, retries, postconditions — in the process that
// drives it; only the attempts' processes run on the workers. Each attempt the
// driver records running becomes a work_items row (ledger/schema.cc), and:
//   * a worker claims queued rows with SELECT ... FOR UPDATE SKIP LOCKED, under
//     a lease (its name and an expiry on the server's clock) that its heartbeat
//     renews; the step's budget was reserved by the driver in the transaction
//     that recorded the attempt, so budgets hold across workers as in one process;
//   * the worker's completion is fenced: accepted only while the row is still
//     claimed by it and its attempt still running in the ledger — a worker whose
//     lease was lost (paused past it, cut off) has its late completion refused,
//     so an attempt ends once and a step is done once;
//   * the driver reads finished rows, and expires rows whose lease ended
//     ("lease expired on WORKER": the engine closes the attempt interrupted and
//     starts a new one, which any worker may claim), acknowledging each once it
//     has it — every statement may be sent again after a lost connection.
// Waiting sides are woken by LISTEN/NOTIFY (channel orch_work for workers,
// orch_done for drivers), with polling as the fallback. A completion's
// notification (sent only when it committed) carries its outcome when that
// fits (done_note): its driver has it without reading the row, and
// acknowledges it as one it read. Times are the server's
// (clock_timestamp()), so machines whose clocks differ agree on every lease.
// One WorkQueue is one connection's statements, used from one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"
#include "postgres/pg_connection.h"

namespace orch::distrib {

struct WorkKey {
  std::string run_id;
  std::string step_id;
  int attempt = 0;
  auto operator<=>(const WorkKey&) const = default;
};

// The channels: workers LISTEN to the first two (new work; a driver asking to
// stop an attempt), drivers to the third (an attempt finished).
inline constexpr const char* kWorkChannel = "orch_work";
inline constexpr const char* kCancelChannel = "orch_cancel";
inline constexpr const char* kDoneChannel = "orch_done";

struct ClaimedItem {
  WorkKey key;
  std::string spec;  // attempt_wire.h
};

struct TakenOutcome {
  WorkKey key;
  std::string outcome;  // attempt_wire.h
  std::string worker;
};

// The outcome an orch_done notification carries: [run, step, attempt, worker,
// outcome in hex] (JSON); nullopt for one that carries only the run's id (an
// outcome too large for a notification, or a worker of an earlier orch).
std::optional<TakenOutcome> done_note(std::string_view payload);

struct LostItem {
  WorkKey key;
  std::string worker;
  std::string reason;  // "lease expired on WORKER"
};

// A queued item that no live worker can take (runs-on labels none has, or no worker at all).
struct StrandedItem {
  WorkKey key;
  std::vector<std::string> labels;
};

struct WorkerRow {
  std::string name;
  std::string host;
  int pid = 0;
  int slots = 0;
  std::vector<std::string> labels;
  std::int64_t lease_ms = 0;
  std::int64_t started_at = 0;
  std::int64_t heartbeat_at = 0;
  std::int64_t stopped_at = 0;
  bool live = false;             // not stopped, and heartbeating within its lease
  std::vector<WorkKey> running;  // the items it holds claimed
};

// What a worker's heartbeat learns of the items it holds.
struct HeartbeatReply {
  std::vector<WorkKey> held;       // still claimed by it (lease renewed)
  std::vector<WorkKey> cancelled;  // of those, the ones their driver asked to stop
};

// One of an attempt's log files, sent with its completion into attempt_output.
struct OutputFile {
  std::string stream;  // "stdout" or "stderr"
  std::string path;
};

class WorkQueue {
 public:
  explicit WorkQueue(detail::PgConnection& conn) : conn_(conn) {}

  // ---- the driver's side
  // Queues an attempt, and acknowledges `settle` (finished items of the same
  // run the driver has taken) in the same statement.
  Expected<void> enqueue(const WorkKey& key, const std::string& executor,
                         const std::vector<std::string>& labels, const std::string& spec,
                         const std::vector<WorkKey>& settle = {});
  // enqueue() as a write of the connection's open transaction (answered at its
  // commit, PgConnection::exec_later): the item is queued, and the workers
  // woken, only if and when that transaction commits.
  Expected<void> enqueue_in_transaction(const WorkKey& key, const std::string& executor,
                                        const std::vector<std::string>& labels, const std::string& spec,
                                        const std::vector<WorkKey>& settle);
  // The outcomes of the run's finished items, until acknowledged: this
  // acknowledges `settle` (taken by an earlier read) and returns the others.
  Expected<std::vector<TakenOutcome>> finished(const std::string& run_id,
                                               const std::vector<WorkKey>& settle = {});
  Expected<void> settle(const std::string& run_id, const std::vector<WorkKey>& keys);
  // Expires the run's claimed items whose lease has ended, and returns every
  // expired item (those withdrawn too), until forget() acknowledges each.
  Expected<std::vector<LostItem>> expired(const std::string& run_id);
  Expected<void> forget(const std::string& run_id, const std::vector<WorkKey>& keys);
  // Withdraws a queued item (no worker will start it): expired with `reason`.
  // One a worker claimed meanwhile is not touched (request_cancel stops it).
  Expected<void> withdraw(const WorkKey& key, const std::string& reason);
  // Asks the worker running a claimed item to stop it.
  Expected<void> request_cancel(const WorkKey& key);
  Expected<std::vector<StrandedItem>> stranded(const std::string& run_id);

  // ---- a worker's side
  // Registers (or re-registers, after a restart) worker `row.name`; refuses a
  // name a live worker has (Busy, naming its host and pid). A previous life's
  // claimed items get an expired lease, so their drivers hand them on at once.
  Expected<void> register_worker(const WorkerRow& row);
  Expected<std::vector<ClaimedItem>> claim(const std::string& worker, const std::string& host,
                                           const std::vector<std::string>& labels, int count,
                                           std::int64_t lease_ms);
  Expected<HeartbeatReply> heartbeat(const std::string& worker, std::int64_t lease_ms);
  // The fenced completion; its log files go into attempt_output in the same
  // transaction. False: refused (the lease was lost), and nothing was written.
  Expected<bool> complete(const std::string& worker, const WorkKey& key, const std::string& outcome,
                          const std::vector<OutputFile>& outputs);
  Expected<void> stop_worker(const std::string& worker);
  // Hands back a claimed item at once (its lease ends now: its driver expires
  // it and starts the attempt again): one a worker holds without knowing it (a
  // claim whose answer a lost connection took), or all of them (`key` null) as
  // a worker stops.
  Expected<void> release(const std::string& worker, const WorkKey* key);

  // ---- anyone
  Expected<std::vector<WorkerRow>> workers();
  // Runs executed by workers that are still running (a driver may be needed).
  Expected<std::vector<std::string>> running_worker_runs();
  Expected<void> listen(const char* channel);

 private:
  detail::PgConnection& conn_;
};

// "{a,b}": labels as a PostgreSQL text[] literal (labels are [A-Za-z0-9_.-]).
std::string label_array(const std::vector<std::string>& labels);
// Labels from "a,b" (orch worker --labels), sorted and without repeats; an
// InvalidInput error naming a label that is not [A-Za-z0-9_.-]{1,64}.
Expected<std::vector<std::string>> parse_labels(const std::string& text);

}  // namespace orch::distrib
