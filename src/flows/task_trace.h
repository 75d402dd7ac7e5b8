// flows/task_trace.h — the trace of one request through `orch task`, and its
// state machine.
//
// A trace records how the request runtime handled a request: how it was
// classified, which pipeline of stages it follows, every state it entered (with
// the time and a note), each VERIFY verdict, what the engines and the learning
// loop did, and how it closed. Its JSON form (to_json) is the document kept in
// the ledger's `traces` row and exported to .orch/traces/<id>.json; its shape is
// published as schemas/trace.schema.json (docs/task.md).
//
// The state machine (docs/task.md, "The state machine"):
//   * A trace starts at CLASSIFY. The only legal next state is the next stage of
//     its pipeline after the current one ("next unvisited": a stage is never
//     entered twice in a row, and never skipped).
//   * From VERIFY, EXECUTE may be entered again (a retry) at most kMaxRetries
//     times. A VERIFY whose verdict is FAIL blocks every later stage: the only
//     ways on are a retry, or close fail.
//   * close pass is legal only in SUMMARIZE; close fail in any open state, and
//     the trace ends ESCALATED. ABANDONED is entered only by the runtime's gc.
// These rules are pure functions here (legal_next_states, check_enter,
// check_close), so they are tested without a ledger.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"
#include "util/iso_time.h"

namespace orch::flows {

enum class TaskState {
  Classify,
  Route,
  Recall,
  Similarity,
  Plan,
  Execute,
  Verify,
  Review,
  Summarize,
  Done,
  Escalated,
  Abandoned,
};
const char* task_state_name(TaskState state);                 // "CLASSIFY", ...
std::optional<TaskState> parse_task_state(std::string_view);  // case-insensitive
bool is_final(TaskState state);                               // DONE, ESCALATED, ABANDONED

inline constexpr int kMaxRetries = 2;  // VERIFY -> EXECUTE at most this many times

enum class Verdict { Pass, PassWithWarnings, Fail };
const char* verdict_name(Verdict verdict);  // "PASS", "PASS-WITH-WARNINGS", "FAIL"

// How one item of a VERIFY checklist ended: a command passed or failed (or was
// not run: an earlier one failed), a human-only item was attested, refuted or
// left unattested.
enum class CheckStatus { Passed, Failed, NotRun, Attested, Refuted, Unattested };
const char* check_status_name(CheckStatus status);  // "passed", "failed", "not_run", "attested", ...
std::optional<CheckStatus> parse_check_status(std::string_view name);

// One item of a VERIFY checklist, as run or attested.
struct CheckOutcome {
  std::string check;    // the item's text
  std::string kind;     // "command" | "attest"
  std::string command;  // for commands
  CheckStatus status = CheckStatus::NotRun;
  std::string detail;   // exit status and output tail, or the attestation note
  std::int64_t duration_ms = 0;
};

struct VerifyRecord {
  Verdict verdict = Verdict::Fail;
  double confidence = 0;  // see verifier.h for the formula
  std::vector<CheckOutcome> items;
  std::string t;  // when (ISO-8601 UTC)
  int retry = 0;  // the trace's retries when it ran
};

struct Transition {
  std::string t;  // ISO-8601 UTC
  TaskState state = TaskState::Classify;
  std::string note;
};

struct Trace {
  std::string id;
  std::string request;
  std::string project;
  std::string workspace;
  std::string intent;      // "" when ambiguous
  std::string complexity;  // trivial | standard | complex
  std::string strategy;    // direct | recall-execute-verify | deep | tool-direct
  std::vector<std::string> engines;
  std::vector<TaskState> pipeline;
  std::vector<nlohmann::json> verify;  // the checklist: {check, command?} or {check, attest: true}
  std::vector<std::string> recall_tags;
  bool ambiguous = false;
  std::vector<Transition> transitions;
  int retries = 0;
  std::optional<std::string> result;  // "pass" | "fail" | "abandoned"; null while open
  std::string summary;
  // What fixed it, for a trace that passed after a failed VERIFY: `task run` sets
  // the passing attempt's own account (the lesson's "What fixed it"); "" when none.
  std::string fix;
  nlohmann::json engine_results = nlohmann::json::object();    // engine -> {status, ...}
  nlohmann::json learning_results = nlohmann::json::object();  // step -> {status, ...}
  nlohmann::json budget = nlohmann::json::object();            // {tokens, spent_tokens, ...}
  std::string llm;  // the capability gate: none | cache-first | required
  nlohmann::json classification = nlohmann::json::object();  // scores, reasons, domains
  std::vector<VerifyRecord> verifications;
  std::string run_id;  // `orch task run`'s run, "" when none
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;

  TaskState state() const { return transitions.empty() ? TaskState::Classify : transitions.back().state; }
  const VerifyRecord* last_verification() const {
    return verifications.empty() ? nullptr : &verifications.back();
  }
};

nlohmann::json to_json(const Trace& trace);
// Reads a trace document back; an error names the field that is missing or wrong.
Expected<Trace> trace_from_json(const nlohmann::json& doc);

// True for a checklist item that is a command ({check, command}); otherwise it is
// an attestation.
bool is_command_item(const nlohmann::json& item);

// The pipelines of the four strategies, as stages (docs/task.md).
std::vector<TaskState> parse_pipeline(const std::vector<std::string>& stages, std::string* bad_stage);

// The states that may be entered next, in the order they are offered (empty for a
// closed trace, and after a FAIL verdict with no retries left).
std::vector<TaskState> legal_next_states(const Trace& trace);
// Ok, or an InvalidInput error: "illegal transition RECALL -> VERIFY: the legal
// next state is PLAN" (or "... closed ...", "... VERIFY failed: ...").
Expected<void> check_enter(const Trace& trace, TaskState next);
// Ok when the trace may close with this result ("pass" needs SUMMARIZE and no
// failing verdict since the last EXECUTE; "fail" any open state).
Expected<void> check_close(const Trace& trace, std::string_view result);

// Appends the transition (after check_enter held); counts a retry.
void enter_state(Trace& trace, TaskState next, std::string note, std::string t);

}  // namespace orch::flows
