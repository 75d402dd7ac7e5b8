#include "flows/task_run.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "engine/phase_runner.h"
#include "flows/plan_template.h"
#include "flows/stage_plan.h"
#include "flows/task_engines.h"
#include "flows/tool_direct.h"
#include "route/classify.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::flows {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kExecuteStep = "execute";
constexpr const char* kReviewStep = "review";
constexpr const char* kSummarizeStep = "summarize";
// A failed review or summary call is tried once more: the work has passed
// VERIFY, and one flaky call should not escalate it.
constexpr int kStageAttempts = 2;

std::string run_name(const std::string& trace_id) {
  return "task " + trace_id;
}

// The VERIFY stage as the execute step's postconditions, after `first` (what
// the executor produced): every command of the checklist, in order.
ojson verify_post(const Trace& trace, const char* first) {
  ojson post = ojson::array({first});
  for (const auto& item : trace.verify)
    if (is_command_item(item)) post.push_back({{"shell_zero", item["command"].get<std::string>()}});
  return post;
}

ojson with_budget(ojson plan, const Trace& trace) {
  const std::int64_t tokens = trace.budget.value("tokens", std::int64_t{0});
  if (tokens > 0) plan["budget"] = {{"tokens", tokens}};
  return plan;
}

// The plan of a tool-direct trace (see task_run.h): the tool, then a summary
// that states what it did, with no model.
ojson build_tool_direct_plan(const Trace& trace, const ToolDirectCall& call,
                             const std::string& unused_executor) {
  ojson inputs = ojson::object();
  for (auto it = call.inputs.begin(); it != call.inputs.end(); ++it) {
    const std::string& name = it.key();
    const ojson& value = it.value();
    if (value.is_array()) {
      ojson items = ojson::array();
      for (const auto& item : value) items.push_back(escape_placeholders(item.get<std::string>()));
      inputs[name] = items;
    } else {
      inputs[name] = value.is_string() ? ojson(escape_placeholders(value.get<std::string>())) : value;
    }
  }
  ojson steps = ojson::array();
  steps.push_back({{"id", kExecuteStep},
                   {"goal", trace.request},
                   {"executor", "tool:" + call.tool},
                   {"attempts", 1},  // the same inputs give the same output: a retry cannot help
                   {"inputs", inputs},
                   {"post", verify_post(trace, "exit_zero")}});
  std::string said =
      fmt::format("tool-direct, no model: tool {} (capability {}) gave ", call.describe(), call.capability);
  std::string after;
  if (!unused_executor.empty())
    after = fmt::format(" ({} was not used: the capability gate found no model is needed)", unused_executor);
  steps.push_back(
      {{"id", kSummarizeStep},
       {"goal", "state what the tool did for: " + trace.request},
       {"deps", {kExecuteStep}},
       {"executor", "builtin:echo"},
       {"inputs",
        {{"text", escape_placeholders(said) + "${steps.execute.result}" + escape_placeholders(after)}}},
       {"post", {"result_nonempty"}}});
  return with_budget({{"name", run_name(trace.id)}, {"concurrency", 1}, {"steps", steps}}, trace);
}

// The plan of the stages after the engine head (see task_run.h).
ojson build_plan(const Trace& trace, const std::string& executor) {
  const std::string context = trace.engine_results.contains("context")
                                  ? trace.engine_results["context"].value("text", std::string())
                                  : std::string();
  const std::string planned = trace.engine_results.contains("planner")
                                  ? trace.engine_results["planner"].value("plan", std::string())
                                  : std::string();
  ojson steps = ojson::array();
  steps.push_back({{"id", "context"},
                   {"goal", "what RECALL found for the request"},
                   {"executor", "builtin:echo"},
                   {"inputs", {{"text", context.empty() ? std::string("(nothing recalled)") : context}}}});

  // execute: its postconditions are the VERIFY stage.
  const ojson post = verify_post(trace, "result_nonempty");
  std::vector<std::pair<std::string, std::string>> extra = {{"context", "${steps.context.result}"}};
  if (!planned.empty()) extra.emplace_back("plan", planned);
  std::string checklist;
  for (const auto& item : trace.verify)
    checklist += "- " + (item.is_object() ? item.value("check", std::string()) : item.dump()) + "\n";
  if (!checklist.empty()) extra.emplace_back("checklist", "Your work is verified against:\n" + checklist);
  steps.push_back(
      {{"id", kExecuteStep},
       {"goal", trace.request},
       {"deps", {"context"}},
       {"executor", executor},
       {"attempts", 1 + kMaxRetries},
       {"inputs", stage_inputs(executor,
                               fmt::format("Do this {} task in the workspace: {}\nReply with what you did.",
                                           trace.intent.empty() ? "" : trace.intent, trace.request),
                               extra, true)},
       {"post", post}});
  std::string last = kExecuteStep;
  for (TaskState s : trace.pipeline) {
    if (s != TaskState::Review) continue;
    steps.push_back(
        {{"id", kReviewStep},
         {"goal", "review the work done for: " + trace.request},
         {"deps", {kExecuteStep}},
         {"executor", executor},
         {"attempts", kStageAttempts},
         {"inputs", stage_inputs(executor,
                                 "Review the work below for correctness and completeness. "
                                 "List any defect; say LGTM if there is none.",
                                 {{"request", trace.request}, {"work", "${steps.execute.result}"}}, false)},
         {"post", {"result_nonempty"}}});
    last = kReviewStep;
  }
  std::vector<std::pair<std::string, std::string>> summary_inputs = {{"request", trace.request},
                                                                     {"work", "${steps.execute.result}"}};
  if (last == kReviewStep) summary_inputs.emplace_back("review", "${steps.review.result}");
  steps.push_back(
      {{"id", kSummarizeStep},
       {"goal", "summarise what was done for: " + trace.request},
       {"deps", {last}},
       {"executor", executor},
       {"attempts", kStageAttempts},
       {"inputs", stage_inputs(executor, "Summarise in two or three sentences what was done and why.",
                               summary_inputs, false)},
       {"post", {"result_nonempty"}}});
  return with_budget({{"name", run_name(trace.id)}, {"concurrency", 1}, {"steps", steps}}, trace);
}

Expected<Plan> load_built_plan(TaskEnv& env, const std::string& text, const std::string& name) {
  return flows::load_built_plan(env.workspace, *env.executors, text, name, "the task's plan");
}

bool is_setup_failure(const AttemptRecord& a) {
  return a.ending == AttemptEnding::SetupFailed;
}

// Why the run failed for its set-up rather than its work — the reason of a failed
// step whose last attempt ended setup_failed — or "" when it did not.
Expected<std::string> setup_failure_of(TaskEnv& env, const std::string& run_id) {
  const auto steps = ORCH_TRY(env.store->steps(run_id));
  const auto attempts = ORCH_TRY(env.store->attempts(run_id));
  for (const auto& s : steps) {
    if (s.status != StepStatus::Failed) continue;
    for (const auto& a : attempts)
      if (a.step_id == s.step_id && a.number == s.last_attempt && is_setup_failure(a))
        return fmt::format("step '{}': {}", s.step_id, a.reason);
  }
  return std::string();
}

// The verdict of one finished execute attempt, from its checks (in post order:
// result_nonempty — exit_zero for a tool —, then the checklist's commands).
VerifyRecord verdict_of(const Trace& trace, const AttemptRecord& a) {
  VerifyRecord v;
  auto checks = json::parse(a.checks_json.empty() ? "[]" : a.checks_json, nullptr, false);
  if (!checks.is_array()) checks = json::array();
  auto check = [&](std::size_t i) -> const json* { return i < checks.size() ? &checks[i] : nullptr; };
  CheckOutcome produced;
  produced.check =
      is_tool_direct(trace) ? "the tool kept its output contract and exited 0" : "EXECUTE produced a result";
  produced.kind = "check";
  if (const json* c = check(0); c && c->value("held", false)) {
    produced.status = CheckStatus::Passed;
  } else {
    produced.status = CheckStatus::Failed;
    produced.detail = c ? c->value("reason", std::string()) : a.reason;
  }
  v.items.push_back(produced);
  std::size_t index = 1;
  for (const auto& item : trace.verify) {
    CheckOutcome o;
    o.check = item.is_object() ? item.value("check", std::string()) : item.dump();
    if (is_command_item(item)) {
      o.kind = "command";
      o.command = item["command"].get<std::string>();
      const json* c = check(index++);
      if (!c) {
        o.status = CheckStatus::NotRun;
        o.detail = "not run: an earlier check failed";
      } else {
        o.status = c->value("held", false) ? CheckStatus::Passed : CheckStatus::Failed;
        o.detail = c->value("reason", std::string());
      }
    } else {
      o.kind = "attest";
      o.status = CheckStatus::Unattested;
      o.detail = "task run does not attest: a person may, with `orch task log`";
    }
    v.items.push_back(std::move(o));
  }
  decide_verdict(v);
  return v;
}

struct Expected_transition {
  TaskState state;
  std::optional<VerifyRecord> verdict;
  std::string note;
};

// The transitions (from the first EXECUTE on) the run's attempts imply.
std::vector<Expected_transition> implied_transitions(const Trace& trace,
                                                     const std::vector<AttemptRecord>& attempts) {
  std::vector<Expected_transition> out;
  std::optional<TaskState> state;
  std::string what;  // a tool-direct EXECUTE names its tool
  if (is_tool_direct(trace)) {
    const json tool = trace.engine_results.value("route", json::object()).value("tool", json::object());
    what =
        fmt::format("tool {} {}, ", tool.value("tool", std::string()), tool.value("command", std::string()));
  }
  for (const auto& a : attempts) {
    if (a.step_id != kExecuteStep) continue;
    if (state != TaskState::Execute) {
      out.push_back({TaskState::Execute, std::nullopt,
                     fmt::format("task run: {}attempt {}{}", what, a.number,
                                 a.number == 1 ? "" : " (retry after VERIFY)")});
      state = TaskState::Execute;
    }
    // A set-up failure (a key not set, credentials refused) did no work: there
    // is nothing to verify, and a resume after the fix tries again.
    if (a.status == AttemptStatus::Running || a.status == AttemptStatus::Interrupted ||
        a.status == AttemptStatus::Cancelled || is_setup_failure(a))
      continue;
    VerifyRecord v = verdict_of(trace, a);
    out.push_back({TaskState::Verify, v,
                   fmt::format("attempt {}: {}", a.number,
                               a.status == AttemptStatus::Succeeded ? "checks held" : a.reason)});
    state = TaskState::Verify;
  }
  for (const char* step : {kReviewStep, kSummarizeStep}) {
    for (const auto& a : attempts) {
      if (a.step_id != step) continue;
      out.push_back({step == std::string(kReviewStep) ? TaskState::Review : TaskState::Summarize,
                     std::nullopt, "task run"});
      break;
    }
  }
  return out;
}

// The trace's run: the one it recorded, or the one owned by it (a trace killed
// before it recorded its run); "" when it has none yet.
Expected<std::string> find_run_of(TaskEnv& env, const Trace& trace) {
  if (!trace.run_id.empty()) return trace.run_id;
  const auto owned = ORCH_TRY(env.store->owned_runs(OwnerKind::Task, trace.id));  // newest first
  return owned.empty() ? std::string() : owned.front().id;
}

// Brings the trace up to date with the ended (or paused) run and closes it.
Expected<TaskRunOutcome> finish(TaskEnv& env, const std::string& id, const RunOutcome& outcome) {
  Trace synced = ORCH_TRY(sync_trace_with_run(env, id));
  auto run = ORCH_TRY(env.store->find_run(outcome.run_id));
  const std::int64_t spent = run ? run->spent_tokens : 0;
  synced = ORCH_TRY(update_task(env, id, [&](Trace& t) { t.budget["spent_tokens"] = spent; }));

  TaskRunOutcome out;
  out.run_status = outcome.status;
  out.reason = outcome.reason;
  switch (outcome.status) {
    case RunStatus::Succeeded: {
      std::string summary;
      auto steps = ORCH_TRY(env.store->steps(outcome.run_id));
      for (const auto& s : steps)
        if (s.step_id == kSummarizeStep) summary = s.result;
      // Passed after a failed VERIFY: what the attempt that passed says it did is
      // what fixed it (the lesson's "What fixed it").
      if (synced.retries > 0)
        for (const auto& s : steps)
          if (s.step_id == kExecuteStep && !s.result.empty())
            synced = ORCH_TRY(update_task(env, id, [&](Trace& t) {
              t.fix = fmt::format("attempt {}: {}", s.last_attempt, utf8_prefix(s.result, 1000));
            }));
      synced = ORCH_TRY(close_task(env, id, "pass", summary));
      out.exit_code = kExitSucceeded;
      break;
    }
    case RunStatus::Running:
    case RunStatus::Interrupted:
    case RunStatus::AwaitingApproval:
      out.exit_code = exit_code_for(outcome.status);
      break;
    default: {
      if (outcome.status == RunStatus::Failed) {
        // Not a lesson about the work: the trace stays open (no close, so no
        // lesson), and `task run --resume` tries again once the set-up is fixed.
        out.setup_failure = ORCH_TRY(setup_failure_of(env, outcome.run_id));
        if (!out.setup_failure.empty()) {
          out.exit_code = kExitInvalid;
          break;
        }
      }
      const std::string why = outcome.status == RunStatus::BudgetExhausted
                                  ? "the token budget is exhausted: " + outcome.reason
                                  : outcome.reason;
      synced = ORCH_TRY(close_task(env, id, "fail", why));
      out.exit_code = outcome.status == RunStatus::BudgetExhausted ? kExitBudget : kExitEscalated;
      break;
    }
  }
  out.trace = std::move(synced);
  return out;
}

// Closes the trace as failed before any run: a human decides (exit 3).
Expected<TaskRunOutcome> escalate(TaskEnv& env, const std::string& id, const std::string& why) {
  TaskRunOutcome out;
  out.trace = ORCH_TRY(close_task(env, id, "fail", why));
  out.reason = why;
  out.exit_code = kExitEscalated;
  return out;
}

// Runs the task's one phase through the engine's phase runner: its run is
// started, resumed when it did not end, run again (its failed steps) when it
// failed for its set-up (the person has fixed the key or the models file), or,
// when it ended otherwise (orch died before closing the trace), only reported.
Expected<TaskRunOutcome> drive(TaskEnv& env, Trace trace, const TaskRunOptions& options) {
  EngineOptions eo;
  eo.workspace = env.workspace;
  eo.executors = env.executors;
  eo.handle_signals = env.handle_signals;
  eo.tick_interval = std::chrono::milliseconds(100);
  std::optional<Error> sync_error;
  const std::string id = trace.id;
  std::string run_id = trace.run_id;
  bool run_recorded = !run_id.empty();
  eo.on_started = [&](const std::string& started) {
    run_id = started;
    if (options.on_started) options.on_started(started);
  };
  // Ticks come after the engine's turn has committed: the trace is written
  // outside the engine's transactions.
  eo.on_progress = [&](const ProgressEvent& e) {
    if (options.on_progress) options.on_progress(e);
    if (e.kind != ProgressEvent::Kind::Tick || sync_error || run_id.empty()) return;
    if (!run_recorded) {
      auto recorded = update_task(env, id, [&](Trace& t) { t.run_id = run_id; });
      if (!recorded) {
        sync_error = recorded.error();
        return;
      }
      run_recorded = true;
    }
    if (auto synced = sync_trace_with_run(env, id); !synced) sync_error = synced.error();
  };
  PhaseRunner runner(*env.store, std::move(eo));
  PhaseRequest request;
  request.key = RunOwner{OwnerKind::Task, id, 0, ""};
  // A tool-direct trace's call is made out before its run starts: one that
  // cannot be made escalates the trace, with no run.
  std::optional<ToolDirectCall> call;
  if (is_tool_direct(trace) && !ORCH_TRY(runner.find(request.key))) {
    auto made = tool_direct_call(trace, env.registry, env.workspace);
    if (!made) return escalate(env, id, "tool-direct: " + made.error().message);
    call = std::move(*made);
  }
  request.build = [&](std::int64_t) -> Expected<BuiltPlan> {
    const ojson built =
        call ? build_tool_direct_plan(trace, *call, options.executor_given ? options.executor : "")
             : build_plan(trace, options.executor);
    std::string text = json_text(built, 2);
    Plan plan = ORCH_TRY(load_built_plan(env, text, run_name(id)));
    return BuiltPlan{std::move(plan), std::move(text)};
  };
  request.rerun_ended = [&](const RunRecord& run) -> Expected<bool> {
    return run.status == RunStatus::Failed && !ORCH_TRY(setup_failure_of(env, run.id)).empty();
  };
  request.who = fmt::format("task {}", id);
  request.resume_command = fmt::format("orch task run --resume {}", id);
  const PhaseResult ran = ORCH_TRY(runner.run(request));
  if (sync_error) return std::unexpected(*sync_error);
  if (!run_recorded) ORCH_TRY(update_task(env, id, [&](Trace& t) { t.run_id = ran.run_id; }));
  return finish(env, id, RunOutcome{ran.run_id, ran.status, ran.reason});
}

}  // namespace

Expected<Trace> sync_trace_with_run(TaskEnv& env, const std::string& trace_id) {
  Trace trace = ORCH_TRY(find_task(env, trace_id));
  const std::string run_id = ORCH_TRY(find_run_of(env, trace));
  if (run_id.empty()) return trace;
  const auto attempts = ORCH_TRY(env.store->attempts(run_id));
  const auto implied = implied_transitions(trace, attempts);
  std::size_t have = 0;
  bool counting = false;
  for (const auto& t : trace.transitions) {
    if (t.state == TaskState::Execute) counting = true;
    if (counting && !is_final(t.state)) ++have;
  }
  for (std::size_t i = have; i < implied.size(); ++i) {
    const auto& next = implied[i];
    trace =
        ORCH_TRY(record_state(env, trace.id, next.state, next.note, next.verdict ? &*next.verdict : nullptr));
  }
  return trace;
}

Expected<TaskRunOutcome> run_task(TaskEnv& env, const std::string& request, const TaskRunOptions& options) {
  // The executor is checked before a trace exists: a typo must not leave one
  // behind. The default one (llm) need not be runnable for a request the
  // capability gate sends tool-direct: no model is called then.
  {
    const ojson probe = {{"name", "probe"},
                         {"steps",
                          {{{"id", "probe"},
                            {"goal", "probe"},
                            {"executor", options.executor},
                            {"inputs", {{"prompt", "probe"}}}}}}};
    auto checked = load_built_plan(env, json_text(probe), "task run");
    if (!checked) {
      bool needs_no_model = false;
      if (!options.executor_given) {
        auto classified = classify_request(env, request, options.plan.assume_intent);
        needs_no_model = classified && classified->llm == route::model_need_name(route::ModelNeed::None);
      }
      if (!needs_no_model)
        return fail(ErrorCode::InvalidInput,
                    fmt::format("task run: executor '{}': {}", options.executor, checked.error().message));
    }
  }
  PlannedTask planned = ORCH_TRY(plan_task(env, request, options.plan));
  TaskRunOutcome out;
  if (planned.ambiguous) {
    out.ambiguous = planned.ambiguous;
    out.exit_code = kExitEscalated;
    return out;
  }
  return drive(env, std::move(*planned.trace), options);
}

Expected<TaskRunOutcome> resume_task(TaskEnv& env, const std::string& trace_ref,
                                     const TaskRunOptions& options) {
  Trace trace = ORCH_TRY(find_task(env, trace_ref));
  if (is_final(trace.state()))
    return fail(ErrorCode::InvalidInput, fmt::format("trace '{}' is closed ({}): nothing to resume", trace.id,
                                                     task_state_name(trace.state())));
  const std::string run_id = ORCH_TRY(find_run_of(env, trace));
  if (!run_id.empty()) {
    if (trace.run_id.empty())
      trace = ORCH_TRY(update_task(env, trace.id, [&](Trace& t) { t.run_id = run_id; }));
    trace = ORCH_TRY(sync_trace_with_run(env, trace.id));
  }
  return drive(env, std::move(trace), options);
}

}  // namespace orch::flows
