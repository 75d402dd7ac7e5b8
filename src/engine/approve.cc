// orch approve RUN STEP: the human half of the risk guard.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "orch/engine.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

Expected<ApprovalRecorded> approve_step(Store& store, const std::string& run_id, const std::string& step_id,
                                        std::int64_t now_ms) {
  auto run = ORCH_TRY(store.find_run(run_id));
  if (!run) return std::unexpected(store.no_run(run_id));
  std::vector<StepRecord> steps = ORCH_TRY(store.steps(run_id));
  const StepRecord* found = nullptr;
  std::vector<std::string> names;
  for (const auto& s : steps) {
    names.push_back(s.step_id);
    if (s.step_id == step_id) found = &s;
  }
  if (!found)
    return fail(ErrorCode::InvalidInput,
                fmt::format("run {} has no step '{}'{}", run_id, step_id, did_you_mean(step_id, names)));
  if (found->status != StepStatus::AwaitingApproval)
    return fail(ErrorCode::InvalidInput,
                fmt::format("step '{}' of run {} is not awaiting approval (it is {})", step_id, run_id,
                            step_status_name(found->status)));
  // The approval is bound to what the human was shown: the fingerprint of the
  // step as it was rendered when it was paused. A resume with a plan that
  // changed the step (--replan) asks again.
  auto requests = ORCH_TRY(store.events_of_kind(run_id, "approval_requested"));
  ApprovalRecorded out;
  for (const auto& e : requests) {
    if (e.step_id != step_id) continue;
    auto data = nlohmann::json::parse(e.data_json, nullptr, false);
    if (!data.is_object()) continue;
    out.risk = data.value("risk", "");
    out.command = data.value("command", "");
    out.fingerprint = data.value("fingerprint", "");
  }
  nlohmann::json data = {
      {"risk", out.risk}, {"by", "orch approve"}, {"fingerprint", out.fingerprint}, {"pid", getpid()}};
  if (const char* user = std::getenv("USER")) data["user"] = user;
  ORCH_TRY(store.begin());
  auto appended =
      store.append_event(EventRecord{0, run_id, now_ms, "step_approved", step_id, 0, json_text(data)});
  if (!appended) {
    (void)store.rollback();
    return std::unexpected(appended.error());
  }
  ORCH_TRY(store.commit());
  return out;
}

}  // namespace orch
