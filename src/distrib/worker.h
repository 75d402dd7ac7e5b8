// distrib/worker.h — `orch worker`: claims queued attempts and runs them.
//
// A worker registers in the ledger's workers table under its name, LISTENs on
// orch_work, and claims up to `slots` queued attempts whose runs-on labels it
// has (work_queue.h). Each runs with this machine's executors (the same ones
// `orch run` builds: shell, llm, worker:NAME, tool:NAME, with their stall
// detection, timeouts, output caps and secret masking); its log files are kept
// under `workdir` while it runs and go into the ledger with its completion, so
// `orch logs` shows them from anywhere. Heartbeats renew its leases every
// lease/3; an attempt whose lease it lost (its driver gave it up, or it was
// paused past it) is stopped and its outcome dropped — the ledger would refuse it.
// The processes it starts die with it (children_die_with_orch), so a killed
// worker leaves nothing running beside the attempt that replaces its own.
//
// A run executed by workers needs a driver. A worker also looks, every few
// seconds, for such runs that no process drives (their lock is free: the `orch
// run --workers --detach` that submitted one has exited, or its driver died) and
// starts `orch resume RUN` for each, in a session of its own, so the run goes on
// without anyone watching it. (Its log: WORKDIR/drivers/RUN.log.)
//
// Stopping: the first SIGINT/SIGTERM/SIGHUP stops claiming and lets the running
// attempts end; a second stops them and hands them back (their leases are let
// go, so their drivers start them again elsewhere at once).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "orch/error.h"
#include "orch/executor.h"

namespace orch::distrib {

struct WorkerOptions {
  std::string url;   // the ledger (postgresql://...)
  std::string name;  // unique among live workers
  std::string host;  // this machine's name, as attempts record it
  int slots = 1;
  std::vector<std::string> labels;  // sorted (parse_labels)
  std::filesystem::path workdir;    // attempt logs while they run; drivers' logs
  std::chrono::milliseconds lease{30000};
  std::chrono::milliseconds poll_interval{1000};  // the fallback to LISTEN/NOTIFY
  // Start `orch resume RUN` for a workers run that no process drives:
  // `orch_binary` with `resume_args` (the --models/--workers/--registry the
  // worker was given) after RUN and --store URL. Empty binary: never.
  std::filesystem::path orch_binary;
  std::vector<std::string> resume_args;
  std::function<void(const std::string&)> note;  // what a person watching should know
};

// Runs until stopped (see above). Errors: a name a live worker has (Busy), a
// ledger that cannot be reached.
Expected<void> run_worker(const WorkerOptions& options, std::shared_ptr<ExecutorRegistry> executors);

}  // namespace orch::distrib
