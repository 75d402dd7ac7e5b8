// engine/check_runner.h — the postconditions of an attempt that exited.
//
// An attempt's checks are the step's `post` (or its executor's defaults when
// it gives none), then those its executor always adds (Executor::required_post),
// in that order, each once, stopping at the first that does not hold. Every
// kind but shell_zero is evaluated in process (verify/evaluate_post); a
// shell_zero's command is a process — `/bin/sh -c CMD` through the shell
// executor, on the run's event loop — whose end comes back later as a
// completion. The result reaches it in ORCH_RESULT_FILE (written beside the
// attempt's output), and in ORCH_RESULT when an environment variable can hold
// it (Linux caps one at 128 KiB; no NUL), else ORCH_RESULT is set empty.
//
// The scheduler owns the attempt (Flight::checks, next_check, check_running):
// CheckRunner says what to do next and starts the processes; it writes nothing
// to the ledger. One thread, on the loop's.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/step_state.h"
#include "orch/event_loop.h"
#include "orch/executor.h"
#include "orch/postcondition.h"
#include "util/secrets.h"

namespace orch {

// What the checks of one attempt are run with.
struct CheckSite {
  std::string run_id;
  std::string step_id;
  int attempt = 0;
  std::filesystem::path workspace;
  std::filesystem::path plan_dir;  // for result_json's schema_path
  // The attempt's files' common start (<store>/runs/<run>/<step>.<n>): a
  // shell_zero check's output and result files are named after it.
  std::string files;
  std::chrono::milliseconds kill_grace{2000};
  std::shared_ptr<const SecretMasker> secrets;
};

// Where the checks of an attempt stand after CheckRunner::run.
struct CheckProgress {
  enum class Kind {
    AllHeld,  // every check held: the attempt succeeded
    Failed,   // one did not hold (or its process could not start): `reason`
    Started,  // a shell_zero's process is running: `process`; run() again when it ends
  };
  Kind kind = Kind::AllHeld;
  std::string reason;
  std::unique_ptr<RunningAttempt> process;
};

class CheckRunner {
 public:
  // A result longer than this reaches a shell_zero check only in ORCH_RESULT_FILE.
  static constexpr std::size_t kResultEnvMax = 64 * 1024;
  static constexpr std::int64_t kCheckMaxOutput = 1024 * 1024;

  // `executors`: where the shell executor is found (looked up at each check).
  CheckRunner(const ExecutorRegistry* executors, EventLoop& loop) : executors_(executors), loop_(loop) {}

  // The checks of an attempt of `step` (see the top of this file).
  static std::vector<Postcondition> checks_of(const Step& step, const Executor& executor);

  // Goes on with the checks of `f` from f.next_check: the in-process ones are
  // evaluated and recorded in f.checks (next_check moves past each), up to the
  // first that fails or a shell_zero, whose process is started with `done`
  // called when it ends (and f.next_check left on it).
  CheckProgress run(const std::vector<Postcondition>& checks, Flight& f, const CheckSite& site,
                    std::function<void(AttemptOutcome)> done);

  // What a shell_zero check's process ending as `outcome` means for `check`.
  static CheckResult shell_check_result(const Postcondition& check, const AttemptOutcome& outcome);

  // The process of a shell_zero check, the `index`th of its attempt.
  static AttemptSpec shell_check_spec(const Postcondition& check, std::size_t index, const CheckSite& site,
                                      const std::filesystem::path& result_file, const std::string& result);

 private:
  const ExecutorRegistry* executors_;
  EventLoop& loop_;
};

}  // namespace orch
