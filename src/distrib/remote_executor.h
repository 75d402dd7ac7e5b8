// distrib/remote_executor.h — the driver's side of a run executed by workers.
//
// `orch run --workers` drives the run as any other — the same scheduler decides
// what is ready, reserves the budgets, records each attempt before it starts,
// checks postconditions, retries, restores `writes:` — but the attempts'
// processes run on `orch worker` processes. RemoteDispatch::wrap gives the
// engine executors that, instead of starting a process, queue the rendered
// attempt (work_queue.h) and report its outcome when a worker has finished it;
// (in the transaction that records the attempt running: Executor::record);
// everything else (validation, risk, estimates, default postconditions) is the
// local executor's. In-process builtins stay in the driver: they have no
// outside effect to place anywhere; so do the attempts an executor says run in
// the driver (Executor::runs_in_driver: a tool of an MCP server, whose server
// the driver started and shares between the run's steps).
//
// The dispatch listens on orch_done: a notification carries the outcome of the
// attempt that finished (work_queue.h), or makes it read the finished attempts;
// either way it acknowledges them in the run's next statement, not a round
// trip of its own; every poll_interval its timer (also the
// fallback) reads those and expires the attempts whose worker stopped
// heartbeating (the engine starts them again, told "lease expired on
// WORKER"), and says once per attempt when no live worker can take it (no
// worker has its runs-on labels): an attempt_waiting event of the run and a
// note, never a silent wait. Its connection reconnects with back-off and
// LISTENs again; each of its statements is safe to send twice (work_queue.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "distrib/work_queue.h"
#include "orch/executor.h"
#include "postgres/pg_connection.h"
#include "postgres/pg_reconnect.h"

namespace orch::distrib {

class RemoteDispatch : public std::enable_shared_from_this<RemoteDispatch> {
 public:
  struct Options {
    std::chrono::milliseconds poll_interval{1000};
    // Told what a user should know (a step no worker can take, a reconnect).
    std::function<void(const std::string&)> note;
  };
  // Connects to the ledger at `url` (its own connection, which LISTENs).
  static Expected<std::shared_ptr<RemoteDispatch>> open(const std::string& url, Options options);
  ~RemoteDispatch();

  // `local`'s executors, those that start processes or calls (not in_process)
  // replaced by ones that queue their attempts for the workers.
  std::shared_ptr<ExecutorRegistry> wrap(const ExecutorRegistry& local);

  // (RemoteExecutor, RemoteAttempt)
  using Done = std::function<void(AttemptOutcome)>;
  // Executor::record: the attempt queued in `store`'s open transaction — the
  // turn that records it running — when `store` is the PostgreSQL ledger
  // (else start() queues it): durable and claimable in that one commit, the
  // workers woken by it. Called again for a transaction written again, it
  // writes the same rows.
  Expected<void> record(const AttemptSpec& spec, Store& store);
  // Queues the attempt unless record() did; waits for its outcome.
  Expected<void> start(const AttemptSpec& spec, EventLoop& loop, Done done);
  // An attempt record() queued that will not start (cancelled at its commit):
  // withdrawn, or its worker asked to stop it should one have claimed it.
  void withdraw(const WorkKey& key, const std::string& reason);
  void cancel(const WorkKey& key, const std::string& reason);
  void forget(const WorkKey& key);

 private:
  RemoteDispatch(std::string url, detail::PgConnection conn, Options options);
  // LISTENs on the connection's session now (again, after a reconnect), and
  // watches its socket.
  Expected<void> listening();
  void watch(EventLoop& loop);
  void stop(const WorkKey& key, const std::string& reason);
  void on_readable();
  // Delivers what the workers finished; with `all` (the timer's, a cancel's)
  // also what expired, and says what no live worker can take.
  void poll(bool all);
  void say_stranded(const std::string& run);
  // Reads, on the loop's next turn, notifications its statements' answers brought.
  void take_waiting_notifications();
  void deliver(const WorkKey& key, AttemptOutcome outcome);
  // A finished item read (or carried by its notification): delivered, and
  // acknowledged by the run's next statement.
  void taken(TakenOutcome t);
  void lost_connection(const Error& e);

  std::string url_;
  std::unique_ptr<detail::PgConnection> conn_;
  std::unique_ptr<WorkQueue> queue_;
  Options options_;
  EventLoop* loop_ = nullptr;
  EventLoop::TimerId timer_ = 0;
  int watched_fd_ = -1;
  std::map<WorkKey, Done> pending_;         // attempts out on workers
  std::map<WorkKey, std::string> waiting_;  // what was said of those no worker can take
  // Queued by record() in a turn's transaction, not started yet: the finished
  // items its statement acknowledged (the same again when it is written again).
  std::map<WorkKey, std::vector<WorkKey>> recorded_;
  // Finished items taken, by run, not yet acknowledged: their acknowledgement
  // rides on the next enqueue or read of the run (work_queue.h), or the timer's.
  std::map<std::string, std::vector<WorkKey>> unsettled_;
  detail::PgReconnectPolicy policy_;
  int listened_session_ = 0;  // the server process our LISTEN was said to
  bool broken_ = false;       // an outage was said (once)
  bool deferred_read_ = false;  // take_waiting_notifications() has a read on the loop
};

}  // namespace orch::distrib
