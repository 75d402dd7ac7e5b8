// orch/attempt_outcome.h — how one attempt of a step ended: what an executor
// reports (executor.h) and what postconditions check (postcondition.h).
//
// A plain value: every executor fills the same fields, so the engine, the
// postconditions and the ledger read any attempt alike. Its own header so that
// what checks an outcome needs nothing of what runs one (executor.h's event
// loop, specs and registry); what the ledger keeps of one too (store.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace orch {

enum class AttemptEnding {
  Exited,       // ran to completion (exit_code says how; builtins: 0)
  Signaled,     // killed by a signal it did not get from orch
  TimedOut,     // orch killed it at its timeout
  Stalled,      // orch killed it for making no progress (a worker's stall_after)
  Cancelled,    // orch killed it on request (cancel, interrupt, abort)
  SpawnFailed,  // could not be started (missing executable, ...)
  Error,        // the executor failed (bad input to a builtin, unreadable output file, ...)
  // The executor's set-up is wrong, not the work: an llm provider's key variable
  // is not set, or the provider refused the credentials (HTTP 401/403). No
  // attempt can pass until a person fixes the configuration, so the engine does
  // not retry it; the message names the cause (the variable, or the status and URL).
  SetupFailed,
  // Its orch stopped before it ended (a signal to orch, or orch killed: the
  // attempt is closed by the resume that finds it); or, reported by an executor
  // that runs attempts elsewhere, the process running it was lost (an `orch
  // worker` whose lease expired): the engine starts it again as a new attempt,
  // told why. Not counted against the attempts cap.
  Interrupted,
};

// The ending's name as the ledger and the reports write it: "exited",
// "signaled", "timed_out", "stalled", "cancelled", "spawn_failed", "error",
// "setup_failed", "interrupted".
const char* attempt_ending_name(AttemptEnding ending);
std::optional<AttemptEnding> parse_attempt_ending(std::string_view name);

struct AttemptOutcome {
  AttemptEnding ending = AttemptEnding::Error;
  int exit_code = -1;
  int signal = 0;
  std::string result;       // stdout with one trailing newline trimmed, or the output file
  std::string message;      // why it ended, for anything but a clean exit
  std::string output_tail;  // last 2 KiB of stdout+stderr, for the retry's previous_failure
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::int64_t stdout_bytes = 0;  // bytes the process wrote (including any beyond the cap)
  std::int64_t stderr_bytes = 0;
  std::int64_t tokens_in = 0;  // every input token: the cache's below included
  std::int64_t tokens_out = 0;
  // Of tokens_in, those read from and written to the provider's prompt cache
  // (claude's cache_read_input_tokens / cache_creation_input_tokens): tokens
  // too, counted against the budgets, and shown apart in the report.
  std::int64_t cache_read_tokens = 0;
  std::int64_t cache_write_tokens = 0;
  double cost_usd = 0;
  std::chrono::milliseconds duration{0};
  // The attempt spent, but what could not be read (a worker's output cut at
  // max_output, where its usage was): the engine charges what it reserved for
  // the attempt instead of nothing, and says so.
  bool spend_unknown = false;
  // A failure that may pass by itself (a provider's 429 or 5xx, a dropped
  // connection): the engine retries it with exponential back-off and jitter, and
  // "same failure twice" does not stop it (the attempts cap still does).
  bool transient = false;
  // The provider's Retry-After: the retry waits at least this long.
  std::optional<std::chrono::milliseconds> retry_after;
  // A stream the executor kept whole in memory instead of writing the spec's
  // file (OutputSink's hold): the engine stores it in the attempt's row and
  // records no path for it. Unset: the stream is in its file (none if empty).
  std::optional<std::string> stdout_text;
  std::optional<std::string> stderr_text;
  // The machine that ran it, when its executor ran it on another one (an `orch
  // worker`'s host name): the attempt's record names it instead of this one.
  std::string host;
  // The model a call went to, as "PROVIDER/MODEL" (the llm executor's; "" for
  // an attempt that called none, or did not say).
  std::string model;
};

}  // namespace orch
