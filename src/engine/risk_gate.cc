// The risk guard. See risk_gate.h.
#include "engine/risk_gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace orch {

Expected<void> RiskGate::load_approvals(Store& store, const std::string& run_id) {
  for (const EventRecord& e : ORCH_TRY(store.events_of_kind(run_id, "step_approved"))) {
    auto data = nlohmann::json::parse(e.data_json, nullptr, false);
    ledger_approvals_[e.step_id] = data.is_object() ? data.value("fingerprint", "") : "";
  }
  return {};
}

RiskGate::ByLevel RiskGate::by_level(const Step& step, RiskLevel level, const std::string& risk_reason) {
  if (level == RiskLevel::Low) return {ByLevel::Kind::Go, ""};
  if (level != RiskLevel::Critical) return {ByLevel::Kind::NeedsApproval, ""};
  std::string why = step.risk == RiskLevel::Critical
                        ? "the step is declared risk: critical"
                        : fmt::format("executor '{}' rates it critical", step.executor);
  if (!risk_reason.empty() && step.risk != RiskLevel::Critical) why += ": " + risk_reason;
  return {ByLevel::Kind::Refused,
          fmt::format("refused by the risk guard: critical risk ({}); critical steps never run", why)};
}

RiskGate::Approval RiskGate::approval(const std::string& step_id, RiskLevel level,
                                      const std::string& fingerprint, std::int8_t answer) const {
  using Kind = Approval::Kind;
  if (approve_steps_.contains(step_id)) return {Kind::Approved, "--approve"};
  if (level == RiskLevel::Medium && approve_medium_) return {Kind::Approved, "--approve-medium"};
  if (auto it = ledger_approvals_.find(step_id);
      it != ledger_approvals_.end() && (it->second.empty() || it->second == fingerprint))
    return {Kind::Approved, "orch approve"};
  if (can_ask_ && answer == 0) return {Kind::Ask, ""};
  if (answer > 0) return {Kind::Approved, "prompt"};
  return {Kind::Wait, ""};
}

void RiskGate::queue_question(int i, ApprovalRequest request) {
  if (std::none_of(asks_.begin(), asks_.end(), [i](const auto& a) { return a.first == i; }))
    asks_.emplace_back(i, std::move(request));
}

void RiskGate::ask_questions(const std::function<bool(const ApprovalRequest&)>& ask,
                             const std::function<bool()>& stopping,
                             const std::function<void(int, bool)>& answered) {
  std::vector<std::pair<int, ApprovalRequest>> asks = std::move(asks_);
  asks_.clear();
  for (auto& [i, request] : asks) {
    if (stopping()) break;  // stopping: nothing more to ask
    const bool yes = ask(request);
    // A question cut short by Ctrl-C was not answered: the loop delivers the signal next.
    if (stopping()) break;
    answered(i, yes);
  }
}

std::string RiskGate::awaiting_reason(RiskLevel level, const std::string& run_id,
                                      const std::string& step_id) {
  return fmt::format("awaiting approval ({} risk): `orch approve {} {}`, then `orch resume {}`",
                     risk_level_name(level), run_id, step_id, run_id);
}

std::string describe_for_approval(const Step& step, const Executor& executor, const ResultLookup& results,
                                  const std::string& run_id, const std::string& workspace, int attempt,
                                  const std::string& previous_failure, SecretMasker& secrets, bool masked) {
  auto rendered = render_step(step, results, attempt, previous_failure);
  if (!rendered) return "(cannot render the step: " + rendered.error().message + ")";
  AttemptSpec preview;
  preview.run_id = run_id;
  preview.step_id = step.id;
  preview.executor = step.executor;
  preview.workspace = workspace;
  preview.argv = std::move(rendered->argv);
  preview.env = std::move(rendered->env);
  preview.inputs = std::move(rendered->inputs);
  // The description shows the environment's values: a secret among them is
  // known as one before it is shown or recorded (as an attempt would make it).
  for (const auto& [name, value] : preview.env) secrets.add_if_secret(name, value);
  if (preview.inputs.is_object())
    for (const auto& [name, value] : preview.inputs.items())
      if (value.is_string()) secrets.add_if_secret(name, value.get_ref<const std::string&>());
  std::string text = executor.describe(preview);
  return masked ? secrets.mask(text) : text;
}

}  // namespace orch
