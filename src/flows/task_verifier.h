// flows/task_verifier.h — the VERIFY stage of `orch task`: a trace's checklist,
// checked.
//
// Each checklist item (the trace's `verify` list, from the intent's checklist in
// the route tables, docs/routing.md) is either
//   * a command — {check: "tests pass", command: "ctest --test-dir build"} — run
//     in the workspace by /bin/sh; it passes when it exits 0. The commands run as
//     one plan through the core engine (a run named "verify <trace-id>", one
//     shell step per command, one at a time, every command run even when one
//     fails), so each is recorded in the ledger with its output like any step
//     (`orch logs RUN vN`); or
//   * an attestation — {check: "root cause named, not symptom", attest: true} —
//     which a person (or the agent driving the trace) attests with a note
//     (`--attest N=note`), refutes (`--refute N=why`), or leaves unattested.
//
// The verdict:
//   FAIL                a command failed or an attestation was refuted, or no
//                       item has any evidence at all (nothing was verified);
//   PASS                every command passed and every attestation is attested;
//   PASS-WITH-WARNINGS  otherwise (some attestations were left unattested, or
//                       some commands not run; `orch task run` stops checking at
//                       the first failed command).
// The confidence is the share of evidence behind the verdict, in [0, 1]:
//   (1.0 per command passed + 0.5 per attestation attested) / number of items,
// rounded to two decimals: commands are grounded evidence, an attestation is a
// claim. A FAIL's confidence is computed the same way.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flows/task_trace.h"
#include "orch/engine.h"
#include "orch/error.h"
#include "orch/store.h"

namespace orch::flows {

struct VerifyOptions {
  std::filesystem::path workspace = ".";
  std::map<int, std::string> attest;  // 1-based item number -> note
  std::map<int, std::string> refute;  // 1-based item number -> why
  bool attest_all = false;            // every attestation item, with `note`
  std::string note;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};  // per command
  std::shared_ptr<ExecutorRegistry> executors;                  // null: ExecutorRegistry::with_builtins()
  bool handle_signals = false;
};

// Parses "3", "3=note", "all", "all=note" into `options` (attest) or, with
// `refuting`, "3=why" (refute). An error names the flag's value.
Expected<void> add_attestation(VerifyOptions& options, std::string_view spec, bool refuting, int items);

// Computes the verdict and confidence of checked items (the rule above).
void decide_verdict(VerifyRecord& record);

// Runs the trace's checklist. The caller stores the record on the trace, unless
// the commands' run was interrupted (SIGINT/SIGTERM: `interrupted`, and the
// record means nothing). Fails only when the commands could not be run at all
// (the ledger could not be written, a command item is not runnable); a command
// that fails is a FAIL verdict, not an error.
struct VerifierRun {
  VerifyRecord record;
  std::string run_id;  // the run of the command items; "" when there were none
  bool interrupted = false;
};
Expected<VerifierRun> run_verifier(Store& store, const Trace& trace, const VerifyOptions& options);

}  // namespace orch::flows
