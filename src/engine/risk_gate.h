// engine/risk_gate.h — the risk guard: whether a step may start (docs/plan-format.md, "The risk guard").
//
// Asked before a step's first attempt in this process, with the step's level
// (Executor::risk: the step's `risk`, raised by its executor). LOW goes;
// CRITICAL is refused, always; MEDIUM and HIGH go when approved — by
// EngineOptions::approve_steps (--approve ID), approve_medium (MEDIUM only),
// an `orch approve` recorded in the ledger (a step_approved event, read once
// when the loop starts, bound to the fingerprint of the step and its command
// so that a --replan that changes either asks again), or a person's answer to
// EngineOptions::ask_approval. Otherwise the step waits (awaiting_approval).
//
// A question is never put inside the turn's transaction (a person would hold
// SQLite's write lock): it is queued, the step stays ready, and the scheduler
// asks after the commit; the answer counts from the next turn on.
//
// RiskGate decides and keeps the approvals and questions; the scheduler
// records what it decided (events, the step's row). One thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/attempt_render.h"
#include "orch/engine.h"
#include "orch/error.h"
#include "orch/executor.h"
#include "orch/plan.h"
#include "orch/store.h"
#include "util/secrets.h"

namespace orch {

class RiskGate {
 public:
  RiskGate(std::set<std::string> approve_steps, bool approve_medium, bool can_ask)
      : approve_steps_(std::move(approve_steps)), approve_medium_(approve_medium), can_ask_(can_ask) {}

  // Reads the approvals `orch approve` recorded for the run (step_approved events).
  Expected<void> load_approvals(Store& store, const std::string& run_id);

  // What the level alone says: LOW goes, CRITICAL is refused (with why: the
  // step declared it, or its executor rates it so — `risk_reason` says why),
  // anything else needs an approval (approval()).
  struct ByLevel {
    enum class Kind { Go, Refused, NeedsApproval };
    Kind kind = Kind::Go;
    std::string reason;  // Refused: the step's reason
  };
  static ByLevel by_level(const Step& step, RiskLevel level, const std::string& risk_reason);

  // Who approves a MEDIUM or HIGH step whose approval is bound to
  // `fingerprint`: Approved with `by` ("--approve", "--approve-medium", "orch
  // approve", "prompt"); Ask (a question is to be put: queue_question); or Wait.
  // `answer`: a person's earlier answer for the step (0 none, 1 yes, -1 no).
  struct Approval {
    enum class Kind { Approved, Ask, Wait };
    Kind kind = Kind::Wait;
    std::string by;
  };
  Approval approval(const std::string& step_id, RiskLevel level, const std::string& fingerprint,
                    std::int8_t answer) const;

  // Queues the question for step `i` (once, however many dispatch rounds see it).
  void queue_question(int i, ApprovalRequest request);
  bool has_questions() const { return !asks_.empty(); }
  // Puts the queued questions with `ask`, in order, until `stopping()` says the
  // run is stopping (checked before each question and after each answer: a
  // question cut short by a signal was not answered). `answered(i, yes)` for each answer.
  void ask_questions(const std::function<bool(const ApprovalRequest&)>& ask,
                     const std::function<bool()>& stopping, const std::function<void(int, bool)>& answered);

  // The reason of a step left awaiting approval.
  static std::string awaiting_reason(RiskLevel level, const std::string& run_id, const std::string& step_id);

 private:
  std::set<std::string> approve_steps_;
  bool approve_medium_ = false;
  bool can_ask_ = false;
  std::map<std::string, std::string> ledger_approvals_;  // step id -> fingerprint approved ("" any)
  std::vector<std::pair<int, ApprovalRequest>> asks_;
};

// What a person is shown of a step before approving it, and what an approval
// is bound to: Executor::describe() of the step rendered as attempt `attempt`
// (the exact command and inputs). The rendered env and inputs that look secret
// are added to `secrets` first (as an attempt would add them); `masked`: the
// text with the secrets masked.
std::string describe_for_approval(const Step& step, const Executor& executor, const ResultLookup& results,
                                  const std::string& run_id, const std::string& workspace, int attempt,
                                  const std::string& previous_failure, SecretMasker& secrets, bool masked);

}  // namespace orch
