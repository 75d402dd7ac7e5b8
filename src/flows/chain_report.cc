// `orch chain`: the report, the skill output contract
// (schemas/skill-output.schema.json), built from the ledger only, so it can be
// rebuilt for a chain run at any time; the dry-run and error reports; the text
// a person reads; the exit code.
#include <fmt/format.h>

#include <sstream>

#include "engine/attempt_render.h"
#include "flows/chain.h"
#include "flows/chain_internal.h"
#include "orch/clock.h"
#include "orch/report.h"
#include "route/skill_output.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::flows {

using ojson = nlohmann::ordered_json;

namespace chain_detail {

constexpr const char* kSkillName = "orch chain";
// A step's result larger than this is cut in the report (result_truncated: true);
// the whole result stays in the ledger.
constexpr std::size_t kMaxReportedResult = 64 * 1024;
constexpr std::size_t kTruncatedResult = 4 * 1024;

// A result as the report shows it: parsed when it is JSON, else the text.
ojson result_value(const std::string& result) {
  ojson parsed = ojson::parse(result, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  return result;
}

const char* chain_step_status(StepStatus s) {
  switch (s) {
    case StepStatus::Done:
      return "success";
    case StepStatus::Failed:
      return "error";
    case StepStatus::Skipped:
      return "skipped";
    case StepStatus::Pending:
      return "pending";
    case StepStatus::Running:
      return "running";
    case StepStatus::Cancelled:
      return "cancelled";
    case StepStatus::AwaitingApproval:
      return "awaiting_approval";
  }
  return "pending";
}

// The skill-output envelope (route/skill_output.h) with a chain's own fields.
ojson report_skeleton(const std::string& status, int max_steps) {
  ojson r = route::skill_output_skeleton(kSkillName, status, iso_time(Clock::system().wall_ms()));
  r["chain_policy"] = "abort_on_failure";
  r["chain_limit"] = max_steps;
  r["execution_chain"] = ojson::array();
  return r;
}
// Whether the engine recorded attempt `a` as a transient failure (a provider's
// 429/5xx, a dropped connection: its attempt_finished event says so).
bool was_transient(Store& store, const std::string& run_id, const AttemptRecord& a) {
  auto events = store.events_of_kind(run_id, "attempt_finished");
  if (!events) return false;
  for (const auto& e : *events) {
    if (e.step_id != a.step_id || e.attempt != a.number) continue;
    auto data = nlohmann::json::parse(e.data_json, nullptr, false);
    return data.is_object() && data.value("transient", false);
  }
  return false;
}

}  // namespace chain_detail

Expected<ojson> build_chain_report(Store& store, const std::string& run_id,
                                   const ExecutorRegistry& executors) {
  ojson run_report = ORCH_TRY(build_run_report(store, run_id, ReportDetail::Summary));
  PlanVersion version = ORCH_TRY(store.latest_plan(run_id));
  ojson plan_doc = ojson::parse(version.text, nullptr, false);
  if (!plan_doc.is_object() || !plan_doc.contains(kChainPlanKey))
    return fail(ErrorCode::InvalidInput,
                fmt::format("run {} is not a chain (it was not started by `orch chain`)", run_id));
  const ojson& marker = plan_doc[kChainPlanKey];
  const int max_steps =
      marker.is_object() ? marker.value("max_steps", kDefaultChainMaxSteps) : kDefaultChainMaxSteps;
  // Recorded when the chain was built; else (a plan edited with --replan) asked again.
  const ojson recorded_risks = marker.is_object() ? marker.value("risks", ojson::array()) : ojson::array();
  LoadResult loaded = parse_plan(version.text, version.path.empty() ? "chain" : version.path);
  std::map<std::string, const Step*> plan_steps;
  for (const auto& s : loaded.plan.steps) plan_steps[s.id] = &s;
  std::vector<StepRecord> steps = ORCH_TRY(store.steps(run_id));
  std::vector<AttemptRecord> attempts = ORCH_TRY(store.attempts(run_id));
  std::map<std::string, const AttemptRecord*> last_attempt;
  std::map<std::string, int> attempt_count;
  for (const auto& a : attempts) {
    last_attempt[a.step_id] = &a;
    ++attempt_count[a.step_id];
  }

  const auto& run = run_report["run"];
  const std::string run_status = run["status"];
  const RunStatus status = parse_run_status(run_status).value_or(RunStatus::Failed);
  ojson r = chain_detail::report_skeleton(chain_status_name(ChainStatus::Success), max_steps);
  r["run_id"] = run_id;
  r["timestamp"] = run["created_at"];
  r["duration_ms"] = run["elapsed_ms"];

  std::int64_t tin = 0, tout = 0;
  double cost = 0;
  int done = 0;
  const StepRecord* stop = nullptr;  // the step the chain stopped at
  const StepRecord* last_done = nullptr;
  ojson chain_list = ojson::array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepRecord& s = steps[i];
    tin += s.tokens_in;
    tout += s.tokens_out;
    cost += s.cost_usd;
    if (s.status == StepStatus::Done) {
      ++done;
      last_done = &s;
    }
    // Where the chain stopped: the first failed step, else the first not done.
    if (s.status == StepStatus::Failed && (stop == nullptr || stop->status != StepStatus::Failed)) stop = &s;
    if (s.status != StepStatus::Done && stop == nullptr) stop = &s;
    ojson e = ojson::object();
    e["step"] = static_cast<int>(i) + 1;
    e["id"] = s.step_id;
    e["executor"] = s.executor;
    e["goal"] = s.goal;
    e["status"] = chain_detail::chain_step_status(s.status);
    auto ps = plan_steps.find(s.step_id);
    RiskLevel risk = ps != plan_steps.end() ? chain_detail::risk_of(*ps->second, executors) : RiskLevel::Low;
    if (i < recorded_risks.size() && recorded_risks[i].is_string())
      if (auto level = parse_risk_level(recorded_risks[i].get<std::string>())) risk = *level;
    e["risk"] = risk_level_name(risk);
    e["duration_ms"] = s.wall_ms;
    e["attempts"] = attempt_count[s.step_id];
    e["tokens"] = route::skill_output_tokens(s.tokens_in, s.tokens_out);
    e["cost_usd"] = s.cost_usd;
    if (s.status == StepStatus::Done) {
      e["result_bytes"] = s.result.size();
      if (s.result.size() <= chain_detail::kMaxReportedResult) {
        e["result"] = chain_detail::result_value(s.result);
        e["result_truncated"] = false;
      } else {
        e["result"] = utf8_prefix(s.result, chain_detail::kTruncatedResult);
        e["result_truncated"] = true;
      }
    }
    e["reason"] = s.reason;
    chain_list.push_back(std::move(e));
  }
  r["tokens_used"] = route::skill_output_tokens(tin, tout);
  r["cost_usd"] = cost;
  r["execution_chain"] = std::move(chain_list);
  if (last_done != nullptr) {
    r["output"]["data"] = last_done->result.size() <= chain_detail::kMaxReportedResult
                              ? chain_detail::result_value(last_done->result)
                              : ojson(utf8_prefix(last_done->result, chain_detail::kTruncatedResult));
  }

  const int total = static_cast<int>(steps.size());
  const int n = stop ? stop->idx + 1 : 0;
  const std::string stop_desc =
      stop ? fmt::format("step {}/{} '{}' ({})", n, total, stop->step_id, stop->executor) : std::string();
  auto set_error = [&](const std::string& code, const std::string& message, bool recoverable) {
    r["error"] =
        route::skill_output_error(code, message, recoverable, stop ? std::optional<int>(n) : std::nullopt);
  };
  switch (status) {
    case RunStatus::Succeeded:
      r["status"] = chain_status_name(ChainStatus::Success);
      r["output"]["summary"] = fmt::format("chain of {} step{} succeeded", total, total == 1 ? "" : "s");
      break;
    case RunStatus::Running:
      r["status"] = chain_status_name(ChainStatus::Running);
      r["output"]["summary"] = fmt::format("chain running: {} of {} steps done", done, total);
      break;
    case RunStatus::AwaitingApproval: {
      // The first step waiting is where the chain paused.
      for (const auto& s : steps)
        if (s.status == StepStatus::AwaitingApproval) {
          stop = &s;
          break;
        }
      const int k = stop ? stop->idx + 1 : 0;
      r["status"] = chain_status_name(ChainStatus::AwaitingApproval);
      r["output"]["summary"] = fmt::format("chain paused at step {}/{}: awaiting approval", k, total);
      r["error"] = route::skill_output_error(fmt::format("CHAIN_PAUSED_STEP_{}", k),
                                             stop ? fmt::format("step {}/{} '{}' ({}): {}", k, total,
                                                                stop->step_id, stop->executor, stop->reason)
                                                  : run["reason"].get<std::string>(),
                                             true, stop ? std::optional<int>(k) : std::nullopt);
      break;
    }
    case RunStatus::Interrupted:
    case RunStatus::Cancelled: {
      const bool interrupted = status == RunStatus::Interrupted;
      r["status"] = chain_status_name(interrupted ? ChainStatus::Interrupted : ChainStatus::Cancelled);
      r["output"]["summary"] =
          fmt::format("chain {} at {}", interrupted ? "interrupted" : "cancelled", stop_desc);
      std::string why = run["reason"].get<std::string>();
      if (why.find("orch resume") == std::string::npos)
        why += fmt::format("; `orch resume {}` continues it", run_id);
      set_error(fmt::format("CHAIN_{}_STEP_{}", interrupted ? "INTERRUPTED" : "CANCELLED", n), why, true);
      break;
    }
    case RunStatus::BudgetExhausted:
      r["status"] = chain_status_name(done > 0 ? ChainStatus::Partial : ChainStatus::Error);
      r["output"]["summary"] = fmt::format("chain stopped at {}: budget exhausted", stop_desc);
      set_error(fmt::format("CHAIN_BUDGET_EXHAUSTED_STEP_{}", n),
                fmt::format("{}: {}", stop_desc,
                            stop && !stop->reason.empty() ? stop->reason : run["reason"].get<std::string>()),
                false);
      break;
    case RunStatus::Failed:
    case RunStatus::Escalated: {
      // Recoverable: the step's last attempt ended in a way that may not repeat
      // (timed out, stalled, killed, interrupted), so `orch resume` may well finish it.
      bool recoverable = false;
      if (stop) {
        if (auto it = last_attempt.find(stop->step_id); it != last_attempt.end()) {
          const AttemptRecord& a = *it->second;
          recoverable = a.status == AttemptStatus::TimedOut || a.status == AttemptStatus::Stalled ||
                        a.status == AttemptStatus::Interrupted || a.status == AttemptStatus::Cancelled ||
                        a.ending == AttemptEnding::Signaled || chain_detail::was_transient(store, run_id, a);
        }
      }
      const int skipped = total - n;
      r["status"] = chain_status_name(done > 0 ? ChainStatus::Partial : ChainStatus::Error);
      r["output"]["summary"] = fmt::format("chain aborted at {}; {} later step{} skipped", stop_desc, skipped,
                                           skipped == 1 ? "" : "s");
      set_error(
          fmt::format("CHAIN_ABORTED_STEP_{}", n),
          fmt::format("{} failed: {}", stop_desc, stop ? stop->reason : run["reason"].get<std::string>()),
          recoverable);
      break;
    }
  }
  return r;
}

ojson chain_dry_run_report(const Chain& chain, const ExecutorRegistry& executors,
                           const DryRunOptions& options) {
  ojson r = chain_detail::report_skeleton(chain_status_name(ChainStatus::DryRun), chain.max_steps);
  const std::filesystem::path workspace = std::filesystem::absolute(options.workspace);
  ojson list = ojson::array();
  int refused = 0, waiting = 0;
  const ResultLookup none{[](const std::string&) -> std::optional<std::string> { return std::nullopt; },
                          [](int) -> std::optional<std::string> { return std::nullopt; }, nullptr};
  for (std::size_t i = 0; i < chain.plan.steps.size(); ++i) {
    const Step& step = chain.plan.steps[i];
    const Executor* executor = executors.find(step.executor);
    const RiskLevel risk = chain_detail::risk_of(step, executors);
    std::string guard = "runs";
    if (risk == RiskLevel::Critical) {
      guard = "refused";
      ++refused;
    } else if (risk != RiskLevel::Low) {
      const bool approved =
          options.approve_steps.contains(step.id) || (risk == RiskLevel::Medium && options.approve_medium);
      guard = approved ? "approved" : "needs_approval";
      if (!approved) ++waiting;
    }
    AttemptSpec spec;
    spec.run_id = "dry-run";
    spec.step_id = step.id;
    spec.executor = step.executor;
    spec.goal = step.goal;
    spec.workspace = workspace;
    // Filled when nothing depends on an earlier result; otherwise shown as written.
    if (auto rendered = render_step(step, none, 1, "")) {
      spec.argv = rendered->argv;
      spec.env = rendered->env;
      spec.inputs = rendered->inputs;
    } else {
      spec.inputs = step.inputs;
      spec.argv = step.run;
      if (step.sh) spec.argv = {"/bin/sh", "-c", *step.sh};
    }
    ojson e = ojson::object();
    e["step"] = static_cast<int>(i) + 1;
    e["id"] = step.id;
    e["executor"] = step.executor;
    e["goal"] = step.goal;
    e["status"] = "planned";
    e["risk"] = risk_level_name(risk);
    e["guard"] = guard;
    std::string command = executor ? executor->describe(spec) : std::string();
    if (i > 0 && step.env.contains("ORCH_CHAIN_PREVIOUS"))
      command += fmt::format("\nenv ORCH_CHAIN_PREVIOUS: the result of step {}", i);
    e["command"] = command;
    e["duration_ms"] = 0;
    e["attempts"] = 0;
    e["tokens"] = route::skill_output_tokens(0, 0);
    e["cost_usd"] = 0.0;
    e["reason"] = "";
    list.push_back(std::move(e));
  }
  const std::size_t n = chain.plan.steps.size();
  std::string summary =
      fmt::format("{} step{} (limit {}), nothing was run", n, n == 1 ? "" : "s", chain.max_steps);
  if (refused > 0) summary += fmt::format("; {} would be refused (critical risk)", refused);
  if (waiting > 0) summary += fmt::format("; {} would wait for approval", waiting);
  r["output"]["summary"] = summary;
  r["execution_chain"] = std::move(list);
  return r;
}

ojson chain_error_report(const std::string& code, const std::string& message, int max_steps,
                         const std::vector<std::string>& problems) {
  ojson r = chain_detail::report_skeleton("error", max_steps);
  r["output"]["summary"] = message;
  r["error"] = route::skill_output_error(code, message, false, std::nullopt);
  if (!problems.empty()) r["error"]["problems"] = problems;
  return r;
}

std::string format_chain_report(const ojson& report) {
  const std::string status = report["status"];
  std::string out;
  const auto& run_id = report["run_id"];
  out += fmt::format("chain{} {}: {}\n", run_id.is_string() ? " " + run_id.get<std::string>() : std::string(),
                     status, report["output"]["summary"].get<std::string>());
  const auto& list = report["execution_chain"];
  std::size_t id_w = 4, ex_w = 8;
  for (const auto& e : list) {
    id_w = std::max(id_w, e["id"].get<std::string>().size());
    ex_w = std::max(ex_w, e["executor"].get<std::string>().size());
  }
  id_w = std::min<std::size_t>(id_w, 32);
  ex_w = std::min<std::size_t>(ex_w, 32);
  const bool dry = parse_chain_status(status) == ChainStatus::DryRun;
  if (!list.empty()) {
    if (dry)
      out += fmt::format("  {:>2}  {:<{}}  {:<{}}  {:<8}  {}\n", "#", "STEP", id_w, "EXECUTOR", ex_w, "RISK",
                         "GUARD");
    else
      out += fmt::format("  {:>2}  {:<{}}  {:<{}}  {:<8}  {:<17}  {:>8}  {:>8}  {}\n", "#", "STEP", id_w,
                         "EXECUTOR", ex_w, "RISK", "STATUS", "TIME", "TOKENS", "REASON");
  }
  for (const auto& e : list) {
    if (dry) {
      out += fmt::format("  {:>2}  {:<{}}  {:<{}}  {:<8}  {}\n", e["step"].get<int>(),
                         e["id"].get<std::string>(), id_w, e["executor"].get<std::string>(), ex_w,
                         e["risk"].get<std::string>(), e["guard"].get<std::string>());
      std::string command = e["command"];
      std::istringstream lines(command);
      for (std::string line; std::getline(lines, line);) out += "        " + line + "\n";
      continue;
    }
    std::string reason = e["reason"];
    if (auto nl = reason.find('\n'); nl != std::string::npos) reason = reason.substr(0, nl);
    if (reason.size() > 100) reason = utf8_prefix(reason, 97) + "...";
    out += fmt::format("  {:>2}  {:<{}}  {:<{}}  {:<8}  {:<17}  {:>8}  {:>8}  {}\n", e["step"].get<int>(),
                       e["id"].get<std::string>(), id_w, e["executor"].get<std::string>(), ex_w,
                       e["risk"].get<std::string>(), e["status"].get<std::string>(),
                       human_duration(e["duration_ms"].get<std::int64_t>()),
                       e["tokens"]["total"].get<std::int64_t>(), reason);
  }
  if (!dry && report["run_id"].is_string())
    out += fmt::format(
        "tokens {} (in {}, out {}), cost {}, {}\n", report["tokens_used"]["total"].get<std::int64_t>(),
        report["tokens_used"]["input"].get<std::int64_t>(),
        report["tokens_used"]["output"].get<std::int64_t>(), dollars(report["cost_usd"].get<double>()),
        human_duration(report["duration_ms"].get<std::int64_t>()));
  if (report["error"].is_object()) {
    const auto& e = report["error"];
    out += fmt::format(
        "error {} ({}): {}\n", e["code"].get<std::string>(),
        e["recoverable"].get<bool>() ? "recoverable: `orch resume` may continue it" : "not recoverable",
        e["message"].get<std::string>());
    if (e.contains("problems"))
      for (const auto& p : e["problems"]) out += "  " + p.get<std::string>() + "\n";
  }
  return out;
}

namespace {
constexpr std::pair<ChainStatus, const char*> kChainStatusNames[] = {
    {ChainStatus::Success, "success"},
    {ChainStatus::Running, "running"},
    {ChainStatus::AwaitingApproval, "awaiting_approval"},
    {ChainStatus::Interrupted, "interrupted"},
    {ChainStatus::Cancelled, "cancelled"},
    {ChainStatus::Partial, "partial"},
    {ChainStatus::Error, "error"},
    {ChainStatus::DryRun, "dry_run"},
};
}  // namespace

const char* chain_status_name(ChainStatus status) {
  for (const auto& [s, name] : kChainStatusNames)
    if (s == status) return name;
  return "error";
}

std::optional<ChainStatus> parse_chain_status(std::string_view name) {
  for (const auto& [s, n] : kChainStatusNames)
    if (name == n) return s;
  return std::nullopt;
}

int chain_exit_code(const ojson& report) {
  switch (parse_chain_status(report["status"].get<std::string>()).value_or(ChainStatus::Error)) {
    case ChainStatus::Success:
    case ChainStatus::DryRun:
      return kExitSucceeded;
    case ChainStatus::AwaitingApproval:
      return kExitEscalated;
    case ChainStatus::Interrupted:
    case ChainStatus::Cancelled:
      return kExitInterrupted;
    case ChainStatus::Running:
    case ChainStatus::Partial:
    case ChainStatus::Error:
      break;
  }
  if (report["error"].is_object()) {
    const std::string code = report["error"]["code"];
    if (code == "chain_limit_exceeded" || code == "invalid_chain") return kExitInvalid;
    if (code.starts_with("CHAIN_BUDGET_EXHAUSTED_")) return kExitBudget;
  }
  return kExitFailed;
}

}  // namespace orch::flows
