// orch task plan|log|close|show|list|gc|run — the request runtime (docs/task.md).
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "cli/task_env.h"
#include "cli/task_run.h"
#include "orch/plan_loader.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {

using flows::Trace;
using json = nlohmann::json;

struct TaskArgs {
  TaskFlags flags;
  // plan
  std::string request;
  std::string project;
  std::string assume;
  // log / close / show
  std::string trace;
  std::string state;
  std::string note;
  std::vector<std::string> attest;
  std::vector<std::string> refute;
  std::string result;
  std::string summary;
  // list / gc
  bool open_only = false;
  std::string older_than;
};

void print_trace(const Trace& trace, bool as_json) {
  if (as_json)
    std::printf("%s\n", json_text(flows::to_json(trace), 2).c_str());
  else
    std::fputs(describe_trace(trace).c_str(), stdout);
}

int run_plan(const TaskArgs& a) {
  auto open = open_task(a.flags, true, true);
  if (!open) return report_error(open.error());
  flows::PlanTaskOptions options;
  options.project = a.project;
  if (!a.assume.empty()) options.assume_intent = a.assume;
  catch_stop_signals();  // and the planning call's engine while it runs
  auto planned = flows::plan_task(open->env, a.request, options);
  run_has_ended();
  if (!planned) return report_error(planned.error());
  for (const auto& id : planned->abandoned)
    std::fprintf(stderr, "orch task: trace %s was abandoned (untouched too long) and harvested\n",
                 id.c_str());
  if (planned->ambiguous) {
    if (a.flags.json)
      std::printf("%s\n", json_text(json{{"ambiguous", true},
                                         {"question", planned->ambiguous->question},
                                         {"intents", planned->ambiguous->intents}},
                                    2)
                              .c_str());
    else
      std::printf("%s\n", planned->ambiguous->question.c_str());
    return kExitEscalated;
  }
  print_trace(*planned->trace, a.flags.json);
  return kExitSucceeded;
}

int run_log(const TaskArgs& a) {
  auto state = flows::parse_task_state(a.state);
  if (!state)
    return report_error(
        Error{ErrorCode::InvalidInput,
              fmt::format("--state '{}': not a state (CLASSIFY, ROUTE, RECALL, SIMILARITY, PLAN, "
                          "EXECUTE, VERIFY, REVIEW, SUMMARIZE)",
                          a.state)});
  auto open = open_task(a.flags, *state == flows::TaskState::Verify, true);
  if (!open) return report_error(open.error());
  flows::VerifyOptions verify;
  verify.timeout = open->env.settings.verify_timeout;
  if (!a.attest.empty() || !a.refute.empty()) {
    auto trace = flows::find_task(open->env, a.trace);
    if (!trace) return report_error(trace.error());
    const int items = static_cast<int>(trace->verify.size());
    for (const auto& spec : a.attest)
      if (auto ok = flows::add_attestation(verify, spec, false, items); !ok) return report_error(ok.error());
    for (const auto& spec : a.refute)
      if (auto ok = flows::add_attestation(verify, spec, true, items); !ok) return report_error(ok.error());
  }
  bool interrupted = false;
  catch_stop_signals();  // and the VERIFY checks' engine while it runs
  auto trace = flows::log_task(open->env, a.trace, *state, a.note, verify, &interrupted);
  run_has_ended();
  if (!trace) return report_error(trace.error());
  if (interrupted) {
    std::fprintf(stderr, "orch task: VERIFY was interrupted; nothing was recorded\n");
    return kExitInterrupted;
  }
  if (a.flags.json) {
    print_trace(*trace, true);
  } else {
    std::printf("%s: entered %s\n", trace->id.c_str(), flows::task_state_name(trace->state()));
    if (*state == flows::TaskState::Verify) {
      const auto& v = trace->verifications.back();
      std::printf("verdict %s (confidence %.2f)\n", flows::verdict_name(v.verdict), v.confidence);
      for (const auto& o : v.items) {
        std::string detail = o.detail;
        if (auto nl = detail.find('\n'); nl != std::string::npos) detail = detail.substr(0, nl);
        std::printf("  %-10s %s%s\n", flows::check_status_name(o.status), o.check.c_str(),
                    detail.empty() ? "" : ("  (" + detail + ")").c_str());
      }
    }
    std::string next;
    for (auto s : flows::legal_next_states(*trace))
      next += (next.empty() ? "" : " or ") + std::string(flows::task_state_name(s));
    if (trace->state() == flows::TaskState::Summarize) next += next.empty() ? "close" : " or close";
    std::printf("next: %s\n", next.empty() ? "close --result fail" : next.c_str());
  }
  // A failing verdict is recorded (the log succeeded) but the caller learns it.
  if (*state == flows::TaskState::Verify && trace->verifications.back().verdict == flows::Verdict::Fail)
    return kExitFailed;
  return kExitSucceeded;
}

int run_close(const TaskArgs& a) {
  auto open = open_task(a.flags, false, true);
  if (!open) return report_error(open.error());
  auto trace = flows::close_task(open->env, a.trace, a.result, a.summary);
  if (!trace) return report_error(trace.error());
  if (a.flags.json) {
    print_trace(*trace, true);
  } else {
    std::printf("%s: closed %s (%s)\n", trace->id.c_str(), flows::task_state_name(trace->state()),
                trace->result->c_str());
    for (const auto& [step, r] : trace->learning_results.items())
      std::printf("  learning %-10s %s\n", step.c_str(), r.value("status", std::string("?")).c_str());
  }
  return trace->state() == flows::TaskState::Done ? kExitSucceeded : kExitEscalated;
}

int run_show(const TaskArgs& a) {
  auto open = open_task(a.flags, false, true);
  if (!open) return report_error(open.error());
  auto trace = flows::find_task(open->env, a.trace);
  if (!trace) return report_error(trace.error());
  print_trace(*trace, a.flags.json);
  return kExitSucceeded;
}

int run_list(const TaskArgs& a) {
  auto open = open_task(a.flags, false, true);
  if (!open) return report_error(open.error());
  auto traces = flows::list_tasks(open->env, a.open_only);
  if (!traces) return report_error(traces.error());
  if (a.flags.json) {
    json all = json::array();
    for (const auto& t : *traces) all.push_back(flows::to_json(t));
    std::printf("%s\n", json_text(all, 2).c_str());
    return kExitSucceeded;
  }
  if (traces->empty()) {
    std::printf(a.open_only ? "no open traces\n" : "no traces\n");
    return kExitSucceeded;
  }
  std::printf("%-44s %-10s %-11s %-13s %s\n", "TRACE", "STATE", "RESULT", "INTENT", "REQUEST");
  for (const auto& t : *traces) {
    std::string request = t.request.size() > 50 ? t.request.substr(0, 47) + "..." : t.request;
    std::printf("%-44s %-10s %-11s %-13s %s\n", t.id.c_str(), flows::task_state_name(t.state()),
                t.result ? t.result->c_str() : "-", t.intent.empty() ? "?" : t.intent.c_str(),
                request.c_str());
  }
  return kExitSucceeded;
}

int run_gc(const TaskArgs& a) {
  // Checked before the ledger is opened: a bad value records nothing.
  std::optional<Millis> given;
  if (!a.older_than.empty()) {
    auto d = parse_duration(a.older_than);
    if (!d) return report_error(Error{ErrorCode::InvalidInput, "--older-than: " + d.error().message});
    if (d->count() <= 0)
      return report_error(Error{ErrorCode::InvalidInput,
                                fmt::format("--older-than '{}': must be more than 0 (e.g. 30m or 24h): every "
                                            "open trace would be abandoned",
                                            a.older_than)});
    given = *d;
  }
  auto open = open_task(a.flags, false, true);
  if (!open) return report_error(open.error());
  const auto older = given ? *given : open->env.settings.abandon_after;
  auto abandoned = flows::gc_tasks(open->env, older);
  if (!abandoned) return report_error(abandoned.error());
  if (a.flags.json) {
    std::printf("%s\n", json_text(json{{"abandoned", *abandoned}}, 2).c_str());
  } else if (abandoned->empty()) {
    std::printf("no open trace is older than %llds\n", static_cast<long long>(older.count() / 1000));
  } else {
    for (const auto& id : *abandoned) std::printf("abandoned %s\n", id.c_str());
  }
  return kExitSucceeded;
}

}  // namespace

Command add_task(CLI::App& app) {
  auto args = std::make_shared<TaskArgs>();
  CLI::App* task = app.add_subcommand(
      "task",
      "The request runtime: classify a request, drive its trace through the state machine, learn on close.");
  task->require_subcommand(1);
  std::map<CLI::App*, std::function<int()>> subs;

  CLI::App* plan =
      task->add_subcommand("plan", "Classify a request, create its trace, run its RECALL (+PLAN) engines.");
  plan->add_option("REQUEST", args->request, "the request, in words")->required();
  plan->add_option("--project", args->project, "the project the request belongs to")
      ->check(not_empty("the project's name"));
  plan->add_option("--assume", args->assume, "the intent to assume when the request is ambiguous")
      ->check(not_empty("an intent (quick_fix, bug_fix, ...)"));
  add_task_flags(*plan, args->flags, true);
  add_request_plan_flags(*plan, args->flags.planner);
  subs[plan] = [args] { return run_plan(*args); };

  CLI::App* log = task->add_subcommand("log", "Enter the next state of a trace; VERIFY runs the verifier.");
  log->add_option("TRACE", args->trace, "trace id, unique id prefix, or the trace's JSON file")
      ->required()
      ->check(not_empty("a trace id (`orch task list` lists them)"));
  log->add_option("--state", args->state, "the state to enter")->required();
  log->add_option("--note", args->note, "what happened");
  // One item per flag (repeatable), so `--attest 1 TRACE` leaves the TRACE alone.
  log->add_option("--attest", args->attest,
                  "VERIFY: attest checklist item N (N, N=note, all, all=note; repeatable)")
      ->allow_extra_args(false)
      ->option_text("N[=note]");
  log->add_option("--refute", args->refute, "VERIFY: refute checklist item N (N=why; repeatable)")
      ->allow_extra_args(false)
      ->option_text("N=why");
  add_task_flags(*log, args->flags, true);
  subs[log] = [args] { return run_log(*args); };

  CLI::App* close =
      task->add_subcommand("close", "Close a trace: pass (after SUMMARIZE) or fail (escalates); then learn.");
  close->add_option("TRACE", args->trace, "trace id, unique id prefix, or the trace's JSON file")
      ->required()
      ->check(not_empty("a trace id (`orch task list` lists them)"));
  close->add_option("--result", args->result, "pass or fail")
      ->required()
      ->check(CLI::IsMember({"pass", "fail"}));
  close->add_option("--summary", args->summary, "what was done, in a sentence or two");
  add_task_flags(*close, args->flags, false);
  subs[close] = [args] { return run_close(*args); };

  CLI::App* show = task->add_subcommand("show", "Show a trace.");
  show->add_option("TRACE", args->trace, "trace id, unique id prefix, or the trace's JSON file")
      ->required()
      ->check(not_empty("a trace id (`orch task list` lists them)"));
  add_task_flags(*show, args->flags, false);
  subs[show] = [args] { return run_show(*args); };

  CLI::App* list = task->add_subcommand("list", "List traces, newest first.");
  list->add_flag("--open", args->open_only, "only open traces");
  add_task_flags(*list, args->flags, false);
  subs[list] = [args] { return run_list(*args); };

  CLI::App* gc =
      task->add_subcommand("gc", "Close (ABANDONED) and harvest open traces untouched for too long.");
  gc->add_option("--older-than", args->older_than,
                 "idle time that makes a trace abandoned (default: abandon_after, 24h)")
      ->check(not_empty("a duration such as 30m or 24h"));
  add_task_flags(*gc, args->flags, false);
  subs[gc] = [args] { return run_gc(*args); };

  CLI::App* run =
      task->add_subcommand("run", "Drive a request through every stage: a plan through the core engine.");
  subs[run] = add_task_run(*run);

  return [task, subs]() -> int {
    for (const auto& [sub, fn] : subs)
      if (sub->parsed()) return fn();
    (void)task;
    return kExitInvalid;
  };
}

}  // namespace orch::cli
