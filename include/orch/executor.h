// orch/executor.h — the leaf interface: how one attempt of one step runs.
//
// The engine renders a step (placeholders filled) into an AttemptSpec and asks the
// step's Executor to start it on the shared EventLoop. The executor reports exactly
// once through the `done` callback, from inside the loop (never synchronously from
// start()). Every executor — shell, builtin, and later llm / worker / tool — returns
// the same AttemptOutcome: result text, how it ended, tokens and cost, duration.
// Executors never decide whether a step is done: postconditions do (verify layer).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "orch/attempt_outcome.h"
#include "orch/diagnostic.h"
#include "orch/error.h"
#include "orch/event_loop.h"
#include "orch/plan.h"

namespace orch {

class SecretMasker;  // util/secrets.h
class Store;         // orch/store.h

// One attempt, fully rendered. Paths are absolute.
struct AttemptSpec {
  std::string run_id;
  std::string step_id;
  int attempt = 1;
  std::string executor;
  std::string goal;              // the step's goal (workers put it in their prompt)
  std::string previous_failure;  // why the previous attempt failed ("" on the first)
  std::vector<std::string> argv;  // shell: the command (sh steps: {"/bin/sh", "-c", script})
  // Added to (or overriding) orch's own environment: the step's env, ORCH_IN_<NAME>,
  // ORCH_RUN_ID, ORCH_STEP_ID, ORCH_ATTEMPT, ORCH_PREVIOUS_FAILURE, ORCH_USAGE_FILE.
  std::vector<std::pair<std::string, std::string>> env;
  nlohmann::ordered_json inputs = nlohmann::ordered_json::object();  // rendered
  std::filesystem::path workspace;
  // The step's `runs-on`: the labels a worker needs to run it (a run executed by
  // `orch worker` processes; distrib/remote_executor.h). Empty: any worker.
  std::vector<std::string> runs_on;
  std::filesystem::path stdout_path;  // created only when the stream has output
  std::filesystem::path stderr_path;
  std::filesystem::path usage_path;   // a step may write {"tokens_in":..,"tokens_out":..,"cost_usd":..} here
  std::optional<std::filesystem::path> output_file;  // result = this file instead of stdout
  std::filesystem::path stdin_path;                  // read as the process's stdin; empty: /dev/null
  std::optional<std::chrono::milliseconds> timeout;
  // The most tokens (in and out) the attempt may spend: what the engine reserved
  // for it, for executors that can keep to it (SpendEstimate::min_tokens > 0).
  std::optional<std::int64_t> token_cap;
  std::chrono::milliseconds kill_grace{2000};
  std::int64_t max_output = 16 * 1024 * 1024;  // per stream; beyond it the file ends with a marker
  // Secret values (from orch's environment and the step's env) that executors
  // replace by "***" in everything they write or return: output files, result,
  // output tail, messages. Null: nothing to mask. The engine masks again what it
  // stores, so an executor that forgets cannot leak into the ledger.
  std::shared_ptr<const SecretMasker> secrets;
};

// The name stored in the ledger (AttemptRecord::ending): exited, signaled, timed_out, ...

// A started attempt. Destroying it without cancel() while running kills it.
class RunningAttempt {
 public:
  virtual ~RunningAttempt() = default;
  // Stops the attempt (process group: SIGTERM, SIGKILL after the grace). The
  // done callback still fires, with ending Cancelled and `reason` as message.
  virtual void cancel(const std::string& reason) = 0;
  // The process group the attempt's process runs in (its pid: it leads it), or 0
  // when it runs none (in-process, an HTTP call) or none is running yet. The engine
  // records it so that a resume after kill -9 can find the group's processes even
  // when they cleared their environment.
  virtual int process_group() const { return 0; }
  // The bytes the attempt's process has written to stdout and stderr so far,
  // counting those past max_output that the logs did not keep; -1 when the
  // attempt has no process output to count. (A worker's stall detection.)
  virtual std::int64_t output_bytes() const { return -1; }
};

// What a step is expected to spend, reserved from the budgets before dispatch.
struct SpendEstimate {
  std::int64_t tokens = 0;
  double cost_usd = 0;
  // Above 0: the executor can hold an attempt to fewer tokens than `tokens`
  // (AttemptSpec::token_cap; an llm call asks for a smaller max_tokens) and is
  // still worth starting with this many. When the token budget left (the plan's,
  // or the step's own) cannot cover `tokens`, the engine reserves what is left,
  // down to this floor, and caps the attempt there; below it the step waits, as
  // any step the budget cannot cover.
  std::int64_t min_tokens = 0;
};

class Executor {
 public:
  using DoneCallback = std::function<void(AttemptOutcome)>;
  virtual ~Executor() = default;

  // Checks executor-specific fields of a step at validation time.
  virtual void check_step(const Step& step, Diagnostics& out) const;
  // The default postconditions when a step declares none.
  virtual std::vector<Postcondition> default_post() const;
  // Checks that always apply to the step, after its own `post` (or the defaults):
  // e.g. an llm step's response_format schema, enforced as result_json.
  virtual std::vector<Postcondition> required_post(const Step& step) const;
  // The step's risk for the risk guard: at least the declared `step.risk` (Low
  // when none). An executor may raise it from what it knows (a registry tool's
  // level; a tool missing from the registry or pending is Critical), never lower it.
  virtual RiskLevel risk(const Step& step) const;
  // Why risk() rates the step critical when the step does not declare it so, for
  // the refusal ("tool 'x' has status pending"); "" when it does not say.
  virtual std::string risk_reason(const Step&) const { return ""; }
  // What the risk guard shows a human asked to approve the step: the exact command
  // and its inputs, rendered. Default: the argv, or the inputs as JSON.
  virtual std::string describe(const AttemptSpec& spec) const;
  // Why no attempt of the step could start on this machine as it is set up now —
  // a worker's program that is not installed, an llm provider whose key variable
  // is not set — or nullopt when nothing stops it. A runtime asks before it
  // starts anything (orch review's pre-flight), so that a set-up error is said
  // at once (exit 2) rather than as a failed attempt in every round. start()
  // still checks for itself (the machine may change in between).
  virtual std::optional<std::string> setup_problem(const Step&) const { return std::nullopt; }
  // Upper estimate of what one attempt spends (0 for executors with no token cost).
  virtual SpendEstimate estimate(const Step& step) const;
  // True for executors that run inside orch's process with no outside effect
  // (builtins): the engine may start them before the turn's ledger commit and
  // chain many of them through one transaction, since a crash that loses the
  // uncommitted batch loses nothing a re-run does not reproduce. Executors that
  // spawn processes, call services or touch files keep the default: they start
  // only after the attempt is durable.
  virtual bool in_process() const { return false; }
  // How many file descriptors one running attempt holds open in orch's process,
  // at most: the engine keeps the attempts in flight within the open-files limit
  // by this count. The default fits a spawned process (its two pipes, its pidfd,
  // its log files); builtins hold none, an HTTP call its connection.
  virtual int open_files_per_attempt() const { return 6; }
  // The environment variables whose values the executor sends as credentials (an
  // llm provider's api_key_env). The engine masks their values wherever it masks
  // secrets, whatever the variables are called: a name need not look secret
  // (util/secrets.h) for its value to be kept out of the ledger and the output.
  virtual std::vector<std::string> secret_env() const { return {}; }
  // May begin, in the background, the set-up the executor's first attempt would
  // otherwise pay for (the llm executor loads libcurl on a second thread while
  // the engine creates the ledger). Called before a run's first ledger write for
  // each executor its plan uses, possibly more than once: later calls do nothing.
  // Never blocks and never fails: a warm-up that cannot start leaves the work to
  // the first attempt, which reports any error itself. Work begun here is joined
  // when the executor is destroyed.
  virtual void warm_up() {}
  // True when the attempt must run in the process that drives the run, even in
  // a run whose other attempts `orch worker` processes execute (--on-workers):
  // a tool of an MCP server, whose server the driver starts once and shares
  // between the run's steps (docs/tools.md, "MCP servers"). Default: false.
  virtual bool runs_in_driver(const AttemptSpec&) const { return false; }
  // Writes of the attempt the executor makes in the ledger transaction that
  // records it running, before that commits: an executor whose attempts other
  // processes take from the ledger (distrib/remote_executor.h) queues it there,
  // so that the attempt is durable and claimable in one commit. Called once the
  // attempt's row is written, and called again with the same `spec` should the
  // store lose the transaction and the turn write it again (it writes the same
  // rows). start() follows once the commit succeeded; an attempt recorded but
  // never started (cancelled at the commit) is taken back with withdraw(). The
  // default writes nothing.
  virtual Expected<void> record(const AttemptSpec& spec, Store& store);
  // What record() queued for `spec`, which will not be started: taken back, so
  // that nothing runs it (`reason`: why).
  virtual void withdraw(const AttemptSpec& /*spec*/, const std::string& /*reason*/) {}
  // Starts an attempt; `done` is called exactly once from within `loop`.
  virtual Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                          DoneCallback done) = 0;
};

// Maps executor names to executors: exact names ("shell", "builtin:echo") and
// prefixes ending in ':' ("worker:" serves every "worker:NAME").
class ExecutorRegistry {
 public:
  void add(std::string name, std::shared_ptr<Executor> executor);
  Executor* find(const std::string& name) const;
  bool known(const std::string& name) const { return find(name) != nullptr; }
  std::vector<std::string> names() const;
  // The executor registered under exactly `name` (one of names()), or null.
  std::shared_ptr<Executor> registered(const std::string& name) const;
  // warm_up() on each executor the plan's steps use, once each.
  void warm_up(const Plan& plan) const;
  // Every executor's secret_env(), without repeats.
  std::vector<std::string> secret_env() const;

  // shell, builtin:echo, builtin:json.
  static ExecutorRegistry with_builtins();

 private:
  std::map<std::string, std::shared_ptr<Executor>> executors_;
};

}  // namespace orch
