// mcp/task_tools.cc — seed 000's trace over MCP: task_plan, task_log,
// task_close, task_show (the runtime of `orch task`, flows/task_runtime.h).
#include <fmt/format.h>

#include "mcp/orch_tools.h"

namespace orch::mcp {

namespace {

using json = nlohmann::json;

std::string str(const json& args, const char* key) {
  return args.value(key, std::string());
}

// "next: VERIFY or REVIEW" — what may be logged after this trace's state.
std::string next_states(const flows::Trace& t) {
  if (t.result) return "closed " + *t.result;
  std::string next;
  for (auto s : flows::legal_next_states(t))
    next += (next.empty() ? "" : " or ") + std::string(flows::task_state_name(s));
  if (t.state() == flows::TaskState::Summarize) next += next.empty() ? "task_close" : " or task_close";
  return "next: " + (next.empty() ? std::string("task_close with result fail") : next);
}

ToolResult trace_result(const flows::Trace& t, const std::string& what) {
  return ToolResult::ok(flows::to_json(t), fmt::format("trace {} {} ({})", t.id, what, next_states(t)));
}

}  // namespace

Expected<ToolResult> OrchTools::task_plan(const json& args) {
  flows::PlanTaskOptions options;
  options.project = str(args, "project");
  if (args.contains("assume")) options.assume_intent = str(args, "assume");
  auto planned = ORCH_TRY(flows::plan_task(open_.env, str(args, "request"), options));
  if (planned.ambiguous) {
    std::string intents;
    for (const auto& i : planned.ambiguous->intents) intents += (intents.empty() ? "" : ", ") + i;
    return ToolResult::error(
        fmt::format("the request is ambiguous: {} Call task_plan again with assume set to "
                    "one of: {}",
                    planned.ambiguous->question, intents));
  }
  const flows::Trace& t = *planned.trace;
  return trace_result(t,
                      fmt::format("planned at {}: intent {}", flows::task_state_name(t.state()), t.intent));
}

Expected<ToolResult> OrchTools::task_log(const json& args) {
  const std::string state_name = str(args, "state");
  auto state = flows::parse_task_state(state_name);
  if (!state) return fail(ErrorCode::InvalidInput, fmt::format("state '{}' is not a state", state_name));
  flows::VerifyOptions verify;
  verify.timeout = open_.env.settings.verify_timeout;
  const json attest = args.value("attest", json::array());
  const json refute = args.value("refute", json::array());
  if (!attest.empty() || !refute.empty()) {
    if (*state != flows::TaskState::Verify)
      return fail(ErrorCode::InvalidInput, "attest and refute apply to state VERIFY only");
    auto trace = ORCH_TRY(flows::find_task(open_.env, str(args, "trace")));
    const int items = static_cast<int>(trace.verify.size());
    for (const auto& spec : attest)
      ORCH_TRY(flows::add_attestation(verify, spec.get<std::string>(), false, items));
    for (const auto& spec : refute)
      ORCH_TRY(flows::add_attestation(verify, spec.get<std::string>(), true, items));
  }
  bool interrupted = false;
  auto trace = ORCH_TRY(
      flows::log_task(open_.env, str(args, "trace"), *state, str(args, "note"), verify, &interrupted));
  if (interrupted) return fail(ErrorCode::Interrupted, "VERIFY was interrupted; nothing was recorded");
  if (*state != flows::TaskState::Verify) return trace_result(trace, std::string("entered ") + state_name);
  const auto& v = trace.verifications.back();
  // A failing verdict is recorded (the call succeeded); the text says so first.
  return trace_result(trace, fmt::format("entered VERIFY: verdict {} (confidence {:.2f})",
                                         flows::verdict_name(v.verdict), v.confidence));
}

Expected<ToolResult> OrchTools::task_close(const json& args) {
  auto trace =
      ORCH_TRY(flows::close_task(open_.env, str(args, "trace"), str(args, "result"), str(args, "summary")));
  return trace_result(trace, fmt::format("closed {} ({})", flows::task_state_name(trace.state()),
                                         trace.result ? *trace.result : std::string("?")));
}

Expected<ToolResult> OrchTools::task_show(const json& args) {
  auto trace = ORCH_TRY(flows::find_task(open_.env, str(args, "trace")));
  return trace_result(trace, fmt::format("at {}", flows::task_state_name(trace.state())));
}

}  // namespace orch::mcp
