// Executors whose attempts run on `orch worker` processes. See remote_executor.h.
#include "distrib/remote_executor.h"

#include <fmt/format.h>
#include <poll.h>

#include <set>

#include "distrib/attempt_wire.h"
#include "postgres/pg_reconnect.h"
#include "postgres/pg_store.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::distrib {

using detail::PgConnection;
using detail::PgParams;

namespace {

// An attempt out on the workers. Destroyed without cancel() while running (the
// engine gave up on it), it is withdrawn or its worker asked to stop.
class RemoteAttempt final : public RunningAttempt {
 public:
  RemoteAttempt(std::shared_ptr<RemoteDispatch> dispatch, WorkKey key)
      : dispatch_(std::move(dispatch)), key_(std::move(key)) {}
  ~RemoteAttempt() override { dispatch_->forget(key_); }
  void cancel(const std::string& reason) override { dispatch_->cancel(key_, reason); }

 private:
  std::shared_ptr<RemoteDispatch> dispatch_;
  WorkKey key_;
};

class RemoteExecutor final : public Executor {
 public:
  RemoteExecutor(std::shared_ptr<Executor> local, std::shared_ptr<RemoteDispatch> dispatch)
      : local_(std::move(local)), dispatch_(std::move(dispatch)) {}

  void check_step(const Step& step, Diagnostics& out) const override { local_->check_step(step, out); }
  std::vector<Postcondition> default_post() const override { return local_->default_post(); }
  std::vector<Postcondition> required_post(const Step& step) const override {
    return local_->required_post(step);
  }
  RiskLevel risk(const Step& step) const override { return local_->risk(step); }
  std::string risk_reason(const Step& step) const override { return local_->risk_reason(step); }
  std::string describe(const AttemptSpec& spec) const override { return local_->describe(spec); }
  SpendEstimate estimate(const Step& step) const override { return local_->estimate(step); }
  std::vector<std::string> secret_env() const override { return local_->secret_env(); }
  // The attempt holds no descriptor here (an MCP tool's, run in the driver,
  // holds one eventfd); what this machine has installed says nothing of the
  // workers' (each checks at start, and says so in the outcome).
  int open_files_per_attempt() const override { return 0; }
  bool runs_in_driver(const AttemptSpec& spec) const override { return local_->runs_in_driver(spec); }

  // An attempt that runs in the driver (an MCP server's tool) is never queued
  // for workers: nothing to record, nothing to take back.
  Expected<void> record(const AttemptSpec& spec, Store& store) override {
    if (local_->runs_in_driver(spec)) return local_->record(spec, store);
    return dispatch_->record(spec, store);
  }
  void withdraw(const AttemptSpec& spec, const std::string& reason) override {
    if (local_->runs_in_driver(spec)) return local_->withdraw(spec, reason);
    dispatch_->withdraw(WorkKey{spec.run_id, spec.step_id, spec.attempt}, reason);
  }

  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                  DoneCallback done) override {
    // A tool of an MCP server: the driver's own server runs it (docs/tools.md).
    if (local_->runs_in_driver(spec)) return local_->start(spec, loop, std::move(done));
    ORCH_TRY(dispatch_->start(spec, loop, std::move(done)));
    return std::make_unique<RemoteAttempt>(dispatch_, WorkKey{spec.run_id, spec.step_id, spec.attempt});
  }

 private:
  std::shared_ptr<Executor> local_;
  std::shared_ptr<RemoteDispatch> dispatch_;
};

AttemptOutcome ended(AttemptEnding ending, std::string message) {
  AttemptOutcome o;
  o.ending = ending;
  o.message = std::move(message);
  return o;
}

}  // namespace

RemoteDispatch::RemoteDispatch(std::string url, PgConnection conn, Options options)
    : url_(std::move(url)),
      conn_(std::make_unique<PgConnection>(std::move(conn))),
      queue_(std::make_unique<WorkQueue>(*conn_)),
      options_(std::move(options)) {}

// The loop is the engine's, gone by now: the engine holds its executors, which
// hold this dispatch, so the engine (and its loop) always ends first.
// What it took last is acknowledged now (best effort: a later driver of the
// run reads those again and acknowledges them; the engine has them already).
RemoteDispatch::~RemoteDispatch() {
  if (conn_->lost()) return;
  for (const auto& [run, keys] : unsettled_)
    if (!keys.empty()) (void)queue_->settle(run, keys);
}

Expected<std::shared_ptr<RemoteDispatch>> RemoteDispatch::open(const std::string& url, Options options) {
  const detail::PgReconnectPolicy policy = ORCH_TRY(detail::PgReconnectPolicy::from_environment());
  PgConnection conn = ORCH_TRY(PgConnection::open(url));
  // A statement outside a transaction — all of this connection's — is sent
  // again once a lost connection is back (each one is safe to send twice:
  // work_queue.h); LISTEN, the session's, is said again by listening().
  conn.keep_reconnecting(policy);
  std::shared_ptr<RemoteDispatch> d(new RemoteDispatch(url, std::move(conn), std::move(options)));
  d->policy_ = policy;
  ORCH_TRY(d->listening());
  return d;
}

std::shared_ptr<ExecutorRegistry> RemoteDispatch::wrap(const ExecutorRegistry& local) {
  auto out = std::make_shared<ExecutorRegistry>();
  for (const std::string& name : local.names()) {
    std::shared_ptr<Executor> shared = local.registered(name);
    if (shared->in_process())
      out->add(name, shared);
    else
      out->add(name, std::make_shared<RemoteExecutor>(shared, shared_from_this()));
  }
  return out;
}

Expected<void> RemoteDispatch::listening() {
  // A connection seen lost (by its notifications) comes back here: a LISTEN is
  // not a statement sent again by itself.
  if (conn_->lost()) ORCH_TRY(conn_->reconnect(policy_));
  const int session = conn_->backend_pid();
  if (session == listened_session_) return {};
  ORCH_TRY(queue_->listen(kDoneChannel));
  if (listened_session_ != 0 && options_.note) options_.note("workers: listening again after reconnecting");
  listened_session_ = session;
  if (loop_ != nullptr) {
    if (watched_fd_ >= 0) loop_->unwatch(watched_fd_);
    watched_fd_ = conn_->socket();
    if (watched_fd_ >= 0) loop_->watch(watched_fd_, POLLIN, [this](short) { on_readable(); });
  }
  return {};
}

void RemoteDispatch::watch(EventLoop& loop) {
  if (loop_ == &loop) return;
  loop_ = &loop;
  watched_fd_ = conn_->socket();
  if (watched_fd_ >= 0) loop.watch(watched_fd_, POLLIN, [this](short) { on_readable(); });
  timer_ = loop.add_timer(options_.poll_interval, [this] {
    timer_ = 0;
    poll(true);
  });
}

Expected<void> RemoteDispatch::record(const AttemptSpec& spec, Store& store) {
  auto* ledger = dynamic_cast<PgStore*>(&store);
  if (ledger == nullptr) return {};
  const WorkKey key{spec.run_id, spec.step_id, spec.attempt};
  // The acknowledgement of what was taken rides on it (undone with the
  // transaction should it not commit: the items are read again, and
  // acknowledged again, by a later statement).
  auto [it, first] = recorded_.try_emplace(key);
  if (first) it->second = std::exchange(unsettled_[spec.run_id], {});
  return WorkQueue(ledger->connection())
      .enqueue_in_transaction(key, spec.executor, spec.runs_on, encode_spec(spec), it->second);
}

Expected<void> RemoteDispatch::start(const AttemptSpec& spec, EventLoop& loop, Done done) {
  watch(loop);
  const WorkKey key{spec.run_id, spec.step_id, spec.attempt};
  if (recorded_.erase(key) == 0) {
    std::vector<WorkKey>& unsettled = unsettled_[spec.run_id];
    ORCH_TRY(queue_->enqueue(key, spec.executor, spec.runs_on, encode_spec(spec), unsettled));
    unsettled.clear();
  }
  pending_[key] = std::move(done);
  if (auto l = listening(); !l) lost_connection(l.error());
  take_waiting_notifications();
  return {};
}

void RemoteDispatch::take_waiting_notifications() {
  // A notification that came with the answer to a statement is read off the
  // socket with it: the socket's poll would not see it.
  if (!conn_->notifications_waiting() || loop_ == nullptr || deferred_read_) return;
  deferred_read_ = true;
  loop_->defer([self = weak_from_this()] {
    if (auto d = self.lock()) {
      d->deferred_read_ = false;
      d->on_readable();
    }
  });
}

void RemoteDispatch::stop(const WorkKey& key, const std::string& reason) {
  // Queued: withdrawn (expired with the reason, delivered by the next poll).
  // Claimed: its worker is asked to stop it and reports the ending; a worker
  // that is gone loses its lease, which ends the attempt too.
  auto withdrawn = queue_->withdraw(key, reason);
  if (!withdrawn) return lost_connection(withdrawn.error());
  if (auto asked = queue_->request_cancel(key); !asked) return lost_connection(asked.error());
  take_waiting_notifications();
}

void RemoteDispatch::withdraw(const WorkKey& key, const std::string& reason) {
  if (recorded_.erase(key) == 0) return;
  stop(key, reason);
}

void RemoteDispatch::cancel(const WorkKey& key, const std::string& reason) {
  if (!pending_.contains(key)) return;
  stop(key, reason);
  if (loop_ != nullptr) loop_->defer([this] { poll(true); });
}

void RemoteDispatch::forget(const WorkKey& key) {
  if (pending_.erase(key) == 0) return;
  // The engine dropped an attempt it had not seen end: nothing must go on with it.
  stop(key, "its driver gave it up");
  waiting_.erase(key);
}

void RemoteDispatch::on_readable() {
  auto channels = conn_->notifications();
  if (!channels) {
    // Its socket is gone: not watched again until listening() is back.
    if (loop_ != nullptr && watched_fd_ >= 0) loop_->unwatch(watched_fd_);
    watched_fd_ = -1;
    listened_session_ = -1;
    lost_connection(channels.error());
    return;
  }
  // An outcome the notification carries is delivered as read (and
  // acknowledged by the run's next statement); any other makes it read.
  bool read = false;
  for (const detail::PgNotification& n : *channels) {
    std::optional<TakenOutcome> note = done_note(n.payload);
    if (!note || !pending_.contains(note->key)) {
      read = read || !note;
      continue;
    }
    taken(std::move(*note));
  }
  if (read) poll(false);
  take_waiting_notifications();
}

void RemoteDispatch::taken(TakenOutcome t) {
  auto outcome = decode_outcome(t.outcome);
  std::vector<WorkKey>& unsettled = unsettled_[t.key.run_id];
  unsettled.push_back(t.key);
  deliver(t.key, outcome ? std::move(*outcome)
                         : ended(AttemptEnding::Error,
                                 fmt::format("worker '{}': {}", t.worker, outcome.error().message)));
}

void RemoteDispatch::deliver(const WorkKey& key, AttemptOutcome outcome) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;  // not ours (any more)
  Done done = std::move(it->second);
  pending_.erase(it);
  waiting_.erase(key);
  done(std::move(outcome));
}

void RemoteDispatch::lost_connection(const Error& e) {
  // Said once an outage; the next poll tries again (and reconnects).
  if (!broken_ && options_.note) options_.note(fmt::format("workers: {} (trying again)", e.message));
  broken_ = true;
}

void RemoteDispatch::poll(bool all) {
  if (all && loop_ != nullptr && timer_ == 0)
    timer_ = loop_->add_timer(options_.poll_interval, [this] {
      timer_ = 0;
      poll(true);
    });
  if (pending_.empty()) return;
  if (auto l = listening(); !l) return lost_connection(l.error());
  std::set<std::string> runs;
  for (const auto& [key, done] : pending_) runs.insert(key.run_id);
  for (const std::string& run : runs) {
    // Acknowledges what the last read took, and reads the rest.
    std::vector<WorkKey>& unsettled = unsettled_[run];
    auto finished = queue_->finished(run, unsettled);
    if (!finished) return lost_connection(finished.error());
    unsettled.clear();
    for (TakenOutcome& t : *finished) taken(std::move(t));
    // A notification says an attempt finished; the rest is the timer's.
    if (!all) continue;
    if (auto settled = queue_->settle(run, unsettled); !settled) return lost_connection(settled.error());
    unsettled.clear();
    auto expired = queue_->expired(run);
    if (!expired) return lost_connection(expired.error());
    std::vector<WorkKey> taken;
    for (LostItem& l : *expired) {
      deliver(l.key, ended(AttemptEnding::Interrupted, l.reason));
      taken.push_back(l.key);
    }
    if (auto forgot = queue_->forget(run, taken); !forgot) return lost_connection(forgot.error());
    say_stranded(run);
  }
  broken_ = false;
  take_waiting_notifications();
}

void RemoteDispatch::say_stranded(const std::string& run) {
  auto stranded = queue_->stranded(run);
  if (!stranded) return lost_connection(stranded.error());
  for (const StrandedItem& s : *stranded) {
    if (!pending_.contains(s.key)) continue;
    const std::string why = s.labels.empty()
                                ? std::string("no live worker")
                                : fmt::format("no live worker has the labels {}", join(s.labels, ","));
    std::string& said = waiting_[s.key];
    if (said == why) continue;
    said = why;
    (void)conn_->exec(
        "recording a step no worker can take",
        "INSERT INTO events (run_id, ts, kind, step_id, attempt, data) VALUES ($1, "
        "(extract(epoch from clock_timestamp()) * 1000)::bigint, 'attempt_waiting', $2, $3, $4)",
        PgParams()
            .text(s.key.run_id)
            .text(s.key.step_id)
            .integer(s.key.attempt)
            .text(json_text(nlohmann::json{{"reason", why}})));
    if (options_.note)
      options_.note(fmt::format("step '{}' (attempt {}) waits: {}", s.key.step_id, s.key.attempt, why));
  }
}

}  // namespace orch::distrib
