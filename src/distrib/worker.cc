// `orch worker`'s loop. See worker.h.
#include "distrib/worker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <map>
#include <set>

#include "distrib/attempt_wire.h"
#include "distrib/work_queue.h"
#include "engine/signals.h"
#include "exec/subprocess.h"
#include "orch/postgres_store.h"
#include "postgres/pg_connection.h"
#include "postgres/pg_reconnect.h"
#include "util/secrets.h"

extern char** environ;

namespace orch::distrib {

namespace fs = std::filesystem;
using detail::PgConnection;
using std::chrono::milliseconds;

namespace {

// How often a worker looks for runs that no process drives.
constexpr milliseconds kDriverCheck{3000};

class Worker {
 public:
  Worker(const WorkerOptions& options, std::shared_ptr<ExecutorRegistry> executors, PgConnection conn,
         detail::PgReconnectPolicy policy)
      : o_(options),
        policy_(policy),
        executors_(std::move(executors)),
        conn_(std::move(conn)),
        queue_(conn_),
        secrets_(SecretMasker::from_environment()) {
    for (const std::string& name : executors_->secret_env())
      if (const char* value = std::getenv(name.c_str())) secrets_.add_value(value);
  }

  Expected<void> run();

 private:
  struct Job {
    AttemptSpec spec;
    std::unique_ptr<RunningAttempt> attempt;
    bool lost = false;       // its lease is gone: stopped, its outcome dropped
    bool cancelled = false;  // its driver asked to stop it (asked once)
  };
  struct Finished {
    WorkKey key;
    AttemptOutcome outcome;
  };

  void note(const std::string& text) const {
    if (o_.note) o_.note(text);
  }
  void claim();
  void start(ClaimedItem item);
  void finish(Finished f);
  void beat();
  void drive_orphaned_runs();
  void on_connection_error(const Error& e);
  // LISTENs on the connection's session now (again, after a reconnect), and
  // watches its socket.
  Expected<void> listening();
  // Reads the notifications that came (on the socket, or with an answer) and acts on them.
  void take_notifications();

  const WorkerOptions& o_;
  detail::PgReconnectPolicy policy_;
  std::shared_ptr<ExecutorRegistry> executors_;
  PgConnection conn_;
  WorkQueue queue_;
  SecretMasker secrets_;
  EventLoop loop_;
  std::unique_ptr<SignalWatch> signals_;
  std::unique_ptr<Store> store_;  // for the runs' locks (drive_orphaned_runs)
  std::map<WorkKey, Job> jobs_;
  std::deque<Finished> finished_;
  std::map<std::string, pid_t> drivers_;  // runs this worker started a driver for
  int stops_ = 0;
  bool claim_now_ = true;
  // Work may be queued that this worker had no free slot for (a claim that
  // filled every slot, or a wake-up while none was free): a slot that frees
  // claims at once. Else a freed slot waits to be woken (or the poll timer):
  // a claim after every completion would mostly find nothing, and cost the
  // server a query (the chain's every step, docs/benchmarks.md, session 44).
  bool room_wanted_ = true;
  bool broken_ = false;       // a statement failed this turn: wait, then try again
  bool outage_said_ = false;  // said once an outage
  int listened_session_ = 0;
  bool beat_due_ = false;
  bool drivers_due_ = true;
  int watched_fd_ = -1;
};

Expected<void> Worker::listening() {
  // A connection seen lost (by its notifications) comes back here: a LISTEN is
  // not a statement sent again by itself.
  if (conn_.lost()) ORCH_TRY(conn_.reconnect(policy_));
  const int session = conn_.backend_pid();
  if (session == listened_session_) return {};
  ORCH_TRY(queue_.listen(kWorkChannel));
  ORCH_TRY(queue_.listen(kCancelChannel));
  if (listened_session_ != 0) note(fmt::format("worker '{}': listening again after reconnecting", o_.name));
  listened_session_ = session;
  if (watched_fd_ >= 0) loop_.unwatch(watched_fd_);
  watched_fd_ = conn_.socket();
  if (watched_fd_ < 0) return {};
  loop_.watch(watched_fd_, POLLIN, [this](short) { take_notifications(); });
  return {};
}

void Worker::take_notifications() {
  auto channels = conn_.notifications();
  if (!channels) {
    // Its socket is gone: not watched again until listening() is back.
    if (watched_fd_ >= 0) loop_.unwatch(watched_fd_);
    watched_fd_ = -1;
    listened_session_ = -1;
    return on_connection_error(channels.error());
  }
  for (const detail::PgNotification& n : *channels) {
    if (n.channel == kCancelChannel) {
      beat_due_ = true;  // the heartbeat's answer names the attempts to stop
    } else {
      claim_now_ = true;
    }
  }
}

void Worker::on_connection_error(const Error& e) {
  // Said once an outage; what failed is tried again (and reconnects) later.
  if (!outage_said_) note(fmt::format("worker '{}': {} (trying again)", o_.name, e.message));
  outage_said_ = true;
  broken_ = true;
}

void Worker::claim() {
  const int free = o_.slots - static_cast<int>(jobs_.size());
  if (stops_ > 0) return;
  if (free <= 0) {
    room_wanted_ = true;
    return;
  }
  room_wanted_ = false;
  auto items = queue_.claim(o_.name, o_.host, o_.labels, free, o_.lease.count());
  if (!items) {
    room_wanted_ = true;  // not claimed: tried again (broken_), and when a slot frees
    return on_connection_error(items.error());
  }
  for (ClaimedItem& item : *items) start(std::move(item));
  // A full batch: there may be more queued than a notification said.
  if (static_cast<int>(items->size()) == free) claim_now_ = true;
}

void Worker::start(ClaimedItem item) {
  auto queue_outcome = [this, &item](AttemptEnding ending, std::string message) {
    AttemptOutcome o;
    o.ending = ending;
    o.message = std::move(message);
    finished_.push_back({item.key, std::move(o)});
  };
  Job& job = jobs_[item.key];
  auto spec = decode_spec(item.spec);
  if (!spec) return queue_outcome(AttemptEnding::Error, spec.error().message);
  job.spec = std::move(*spec);
  AttemptSpec& s = job.spec;
  // This machine's files: the logs while it runs, the usage file a step may write.
  const fs::path folder = o_.workdir / "runs" / s.run_id;
  std::error_code ec;
  fs::create_directories(folder / "usage", ec);
  if (ec)
    return queue_outcome(AttemptEnding::SetupFailed, fmt::format("worker '{}': cannot make {}: {}", o_.name,
                                                                 (folder / "usage").string(), ec.message()));
  const std::string base = fmt::format("{}.{}", s.step_id, s.attempt);
  s.stdout_path = folder / (base + ".stdout");
  s.stderr_path = folder / (base + ".stderr");
  s.usage_path = folder / "usage" / (base + ".json");
  for (auto& [name, value] : s.env)
    if (name == "ORCH_USAGE_FILE") value = s.usage_path.string();
  s.env.emplace_back("ORCH_WORKER", o_.name);
  auto secrets = std::make_shared<SecretMasker>(secrets_);
  for (const auto& [name, value] : s.env) secrets->add_if_secret(name, value);
  if (s.inputs.is_object())
    for (const auto& [name, value] : s.inputs.items())
      if (value.is_string()) secrets->add_if_secret(name, value.get_ref<const std::string&>());
  s.secrets = secrets;
  Executor* executor = executors_->find(s.executor);
  if (executor == nullptr)
    return queue_outcome(
        AttemptEnding::SetupFailed,
        fmt::format("worker '{}' on {} has no executor '{}' (give it the --models, --workers "
                    "or --registry file that defines it)",
                    o_.name, o_.host, s.executor));
  auto started = executor->start(s, loop_, [this, key = item.key](AttemptOutcome outcome) {
    finished_.push_back({key, std::move(outcome)});
  });
  if (!started) return queue_outcome(AttemptEnding::SpawnFailed, started.error().message);
  job.attempt = std::move(*started);
}

void Worker::finish(Finished f) {
  auto it = jobs_.find(f.key);
  if (it == jobs_.end()) return;
  std::error_code ec;
  if (it->second.lost) {
    // Its lease is gone: nothing of it is reported (the ledger would refuse it).
    fs::remove(it->second.spec.stdout_path, ec);
    fs::remove(it->second.spec.stderr_path, ec);
    fs::remove(it->second.spec.usage_path, ec);
    jobs_.erase(it);
    claim_now_ = claim_now_ || room_wanted_;
    return;
  }
  f.outcome.host = o_.host;
  // A set-up failure is this machine's (its files, its environment): said as such.
  if (f.outcome.ending == AttemptEnding::SetupFailed && !f.outcome.message.starts_with("worker '"))
    f.outcome.message = fmt::format("worker '{}' on {}: {}", o_.name, o_.host, f.outcome.message);
  std::vector<OutputFile> outputs;
  if (!f.outcome.stdout_text) outputs.push_back({"stdout", it->second.spec.stdout_path.string()});
  if (!f.outcome.stderr_text) outputs.push_back({"stderr", it->second.spec.stderr_path.string()});
  auto accepted = queue_.complete(o_.name, f.key, encode_outcome(f.outcome), outputs);
  if (!accepted) {
    // Not written: tried again once the connection is back (the lease may be
    // lost by then, and the completion refused — never recorded twice).
    on_connection_error(accepted.error());
    finished_.push_front(std::move(f));
    return;
  }
  if (!*accepted)
    note(
        fmt::format("worker '{}': the completion of attempt {} of step '{}' (run {}) was refused: its lease "
                    "was lost, and the attempt was handed to another worker",
                    o_.name, f.key.attempt, f.key.step_id, f.key.run_id));
  for (const OutputFile& out : outputs) fs::remove(out.path, ec);
  fs::remove(it->second.spec.usage_path, ec);
  jobs_.erase(it);
  claim_now_ = claim_now_ || room_wanted_;
}

void Worker::beat() {
  auto reply = queue_.heartbeat(o_.name, o_.lease.count());
  if (!reply) return on_connection_error(reply.error());
  const std::set<WorkKey> held(reply->held.begin(), reply->held.end());
  for (const WorkKey& key : reply->held) {
    // Claimed under this name, unknown here: a claim whose answer a lost
    // connection took. Handed back, so that its driver starts it again now.
    if (jobs_.contains(key)) continue;
    note(
        fmt::format("worker '{}': handing back attempt {} of step '{}' (run {}), claimed by a request whose "
                    "answer was lost",
                    o_.name, key.attempt, key.step_id, key.run_id));
    if (auto r = queue_.release(o_.name, &key); !r) return on_connection_error(r.error());
  }
  for (auto& [key, job] : jobs_) {
    if (!job.attempt || job.lost) continue;
    if (!held.contains(key)) {
      // Its lease is gone (expired while this worker was paused or cut off, or
      // its driver gave it up): whatever it would report is refused.
      job.lost = true;
      note(fmt::format("worker '{}': lost the lease of attempt {} of step '{}' (run {}): stopping it",
                       o_.name, key.attempt, key.step_id, key.run_id));
      job.attempt->cancel("its worker lost the lease");
    }
  }
  for (const WorkKey& key : reply->cancelled) {
    auto it = jobs_.find(key);
    if (it == jobs_.end() || !it->second.attempt || it->second.cancelled || it->second.lost) continue;
    it->second.cancelled = true;
    it->second.attempt->cancel("cancelled by its driver");
  }
}

void Worker::drive_orphaned_runs() {
  if (o_.orch_binary.empty()) return;
  for (auto it = drivers_.begin(); it != drivers_.end();) {
    int status = 0;
    if (::waitpid(it->second, &status, WNOHANG) == it->second) {
      it = drivers_.erase(it);
    } else {
      ++it;
    }
  }
  if (!store_) {
    auto store = open_postgres_store(o_.url, o_.workdir / "store");
    if (!store) return on_connection_error(store.error());
    store_ = std::move(*store);
  }
  auto runs = queue_.running_worker_runs();
  if (!runs) return on_connection_error(runs.error());
  for (const std::string& run : *runs) {
    if (drivers_.contains(run) || store_->locked(run)) continue;
    std::error_code ec;
    fs::create_directories(o_.workdir / "drivers", ec);
    const std::string log = (o_.workdir / "drivers" / (run + ".log")).string();
    std::vector<std::string> args{o_.orch_binary.string(), "resume", run, "--store", o_.url, "--quiet"};
    args.insert(args.end(), o_.resume_args.begin(), o_.resume_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawnattr_init(&attr);
    // A session of its own: a Ctrl-C meant for this worker does not stop the run.
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      note(fmt::format("worker '{}': cannot start a driver for run {}: {}", o_.name, run, std::strerror(rc)));
      continue;
    }
    drivers_[run] = pid;
    note(fmt::format("worker '{}': run {} had no driver; started `orch resume {}` (pid {}, log {})", o_.name,
                     run, run, pid, log));
  }
}

Expected<void> Worker::run() {
  WorkerRow row;
  row.name = o_.name;
  row.host = o_.host;
  row.pid = static_cast<int>(::getpid());
  row.slots = o_.slots;
  row.labels = o_.labels;
  row.lease_ms = o_.lease.count();
  ORCH_TRY(queue_.register_worker(row));
  ORCH_TRY(listening());
  children_die_with_orch();
  signals_ = std::make_unique<SignalWatch>(loop_, [this](int) {
    if (++stops_ == 1) {
      note(
          fmt::format("worker '{}': stopping: no new attempts; waiting for the {} running (signal again to "
                      "hand them back now)",
                      o_.name, jobs_.size()));
    } else {
      for (auto& [key, job] : jobs_) {
        if (job.attempt && !job.lost) {
          job.lost = true;
          job.attempt->cancel("its worker was stopped");
        }
      }
    }
  });
  note(fmt::format("worker '{}' on {}: {} slot{}, labels [{}], lease {} s", o_.name, o_.host, o_.slots,
                   o_.slots == 1 ? "" : "s", fmt::join(o_.labels, ","), o_.lease.count() / 1000.0));

  std::function<void()> poll_tick = [this, &poll_tick] {
    claim_now_ = true;
    loop_.add_timer(o_.poll_interval, poll_tick);
  };
  std::function<void()> beat_tick = [this, &beat_tick] {
    beat_due_ = true;
    loop_.add_timer(std::max(o_.lease / 3, milliseconds(50)), beat_tick);
  };
  std::function<void()> driver_tick = [this, &driver_tick] {
    drivers_due_ = true;
    loop_.add_timer(kDriverCheck, driver_tick);
  };
  loop_.add_timer(o_.poll_interval, poll_tick);
  loop_.add_timer(std::max(o_.lease / 3, milliseconds(50)), beat_tick);
  loop_.add_timer(kDriverCheck, driver_tick);

  while (!(stops_ > 0 && jobs_.empty())) {
    if (broken_) {
      // The server could not be reached (after the back-off of pg_reconnect.h):
      // everything is tried again after a poll interval.
      loop_.run_once(o_.poll_interval);
      broken_ = false;
    }
    if (auto l = listening(); !l) {
      on_connection_error(l.error());
      continue;
    }
    while (!finished_.empty() && !broken_) {
      Finished f = std::move(finished_.front());
      finished_.pop_front();
      finish(std::move(f));
    }
    if (beat_due_ && !broken_) {
      beat_due_ = false;
      beat();
    }
    if (drivers_due_ && !broken_ && stops_ == 0) {
      drivers_due_ = false;
      drive_orphaned_runs();
    }
    if (claim_now_ && !broken_) {
      claim_now_ = false;
      claim();
    }
    if (!broken_) outage_said_ = false;
    // Those that came with the answers to this turn's statements: no poll of
    // the socket would see them.
    if (conn_.notifications_waiting()) take_notifications();
    if (!finished_.empty() || (claim_now_ && !broken_) || beat_due_) {
      loop_.run_once(milliseconds(0));
    } else {
      loop_.run_once(o_.poll_interval);
    }
  }
  // Hand back what is still claimed (stopped attempts whose outcome was dropped).
  (void)queue_.release(o_.name, nullptr);
  ORCH_TRY(queue_.stop_worker(o_.name));
  note(fmt::format("worker '{}' stopped", o_.name));
  return {};
}

}  // namespace

Expected<void> run_worker(const WorkerOptions& options, std::shared_ptr<ExecutorRegistry> executors) {
  const detail::PgReconnectPolicy policy = ORCH_TRY(detail::PgReconnectPolicy::from_environment());
  PgConnection conn = ORCH_TRY(PgConnection::open(options.url));
  // Statements outside a transaction are sent again once a lost connection is
  // back (each is safe to send twice: work_queue.h); LISTEN by listening().
  conn.keep_reconnecting(policy);
  Worker worker(options, std::move(executors), std::move(conn), policy);
  return worker.run();
}

}  // namespace orch::distrib
