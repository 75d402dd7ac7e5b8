// orch task run "<request>" [--worker NAME | --model NAME] [--assume INTENT] [--project X]
// orch task run --resume TRACE
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/common.h"
#include "cli/number_option.h"
#include "cli/task_env.h"
#include "cli/task_run.h"
#include "flows/task_run.h"
#include "flows/tool_direct.h"
#include "orch/engine.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {

struct TaskRunArgs {
  TaskFlags flags;
  std::string request;
  std::string worker;
  std::string model;
  std::string assume;
  std::string project;
  std::string resume;
};

// One line per new transition, on stderr, as the trace follows the run.
class TransitionPrinter {
 public:
  explicit TransitionPrinter(bool quiet) : quiet_(quiet) {}
  void print_new(const flows::Trace& t) {
    if (quiet_) return;
    for (std::size_t i = printed_; i < t.transitions.size(); ++i) {
      const auto& tr = t.transitions[i];
      std::string note = tr.note.substr(0, tr.note.find('\n'));
      if (note.size() > 100) note = note.substr(0, 97) + "...";
      std::fprintf(stderr, "orch task: %-10s %s\n", flows::task_state_name(tr.state), note.c_str());
      if (tr.state == flows::TaskState::Verify && !t.verifications.empty()) {
        // The verdict recorded with this VERIFY is the n-th one.
        std::size_t n = 0;
        for (std::size_t k = 0; k <= i; ++k)
          if (t.transitions[k].state == flows::TaskState::Verify) ++n;
        if (n >= 1 && n <= t.verifications.size()) {
          const auto& v = t.verifications[n - 1];
          std::fprintf(stderr, "orch task:            verdict %s (confidence %.2f)\n",
                       flows::verdict_name(v.verdict), v.confidence);
        }
      }
    }
    printed_ = t.transitions.size();
  }

 private:
  bool quiet_;
  std::size_t printed_ = 0;
};

int run(const TaskRunArgs& a) {
  if (a.resume.empty() == a.request.empty())
    return report_error(Error{ErrorCode::InvalidInput, "give a REQUEST, or --resume TRACE (not both)"});
  if (!a.worker.empty() && !a.model.empty())
    return report_error(Error{ErrorCode::InvalidInput, "--worker and --model are alternatives: give one"});
  TaskFlags flags = a.flags;
  flags.planner.model = a.model;  // the PLAN stage's planning call uses the same model
  auto open = open_task(flags, true, true);
  if (!open) return report_error(open.error());
  flows::TaskRunOptions options;
  options.executor = !a.worker.empty() ? "worker:" + a.worker : !a.model.empty() ? "llm:" + a.model : "llm";
  options.executor_given = !a.worker.empty() || !a.model.empty();
  options.plan.project = a.project;
  if (!a.assume.empty()) options.plan.assume_intent = a.assume;
  auto printer = std::make_shared<TransitionPrinter>(a.flags.json);
  flows::TaskEnv* env = &open->env;
  std::string trace_id;
  options.on_progress = [&](const ProgressEvent& e) {
    if (e.kind != ProgressEvent::Kind::Tick || trace_id.empty()) return;
    if (auto t = flows::find_task(*env, trace_id)) printer->print_new(*t);
  };
  Expected<flows::TaskRunOutcome> outcome = std::unexpected(Error{ErrorCode::Internal, "not run"});
  catch_stop_signals();  // and each engine's own handler while it drives a stage
  if (!a.resume.empty()) {
    auto t = flows::find_task(*env, a.resume);
    if (!t) return report_error(t.error());
    trace_id = t->id;
    printer->print_new(*t);
    outcome = flows::resume_task(*env, trace_id, options);
  } else {
    // The trace id is known once plan_task has made it: the newest open trace
    // whose request is this one is looked up on the first tick.
    options.on_started = [&](const std::string& run_id) {
      auto runs = env->store->find_run(run_id);
      if (runs && *runs && (*runs)->owner.kind == OwnerKind::Task) trace_id = (*runs)->owner.id;
    };
    outcome = flows::run_task(*env, a.request, options);
  }
  run_has_ended();  // the trace is printed whatever comes
  if (!outcome) return report_error(outcome.error());
  if (outcome->ambiguous) {
    if (a.flags.json)
      std::printf("%s\n", json_text(nlohmann::json{{"ambiguous", true},
                                                   {"question", outcome->ambiguous->question},
                                                   {"intents", outcome->ambiguous->intents}},
                                    2)
                              .c_str());
    else
      std::printf("%s\n", outcome->ambiguous->question.c_str());
    return outcome->exit_code;
  }
  printer->print_new(*outcome->trace);
  if (!outcome->setup_failure.empty())
    std::fprintf(stderr,
                 "orch: task run: set-up failure, not the work's: %s\n"
                 "orch: trace %s stays open at %s (no retry, no lesson): fix the set-up, then `orch task run "
                 "--resume %s`\n",
                 outcome->setup_failure.c_str(), outcome->trace->id.c_str(),
                 flows::task_state_name(outcome->trace->state()), outcome->trace->id.c_str());
  if (options.executor_given && flows::is_tool_direct(*outcome->trace))
    std::fprintf(stderr,
                 "orch task: %s was not used: the capability gate found no model is needed, so the "
                 "request is a registry tool's (tool-direct)\n",
                 !a.worker.empty() ? ("--worker " + a.worker).c_str() : ("--model " + a.model).c_str());
  if (a.flags.json) {
    std::printf("%s\n", json_text(flows::to_json(*outcome->trace), 2).c_str());
  } else {
    std::fputs(describe_trace(*outcome->trace).c_str(), stdout);
    if (outcome->run_status == RunStatus::Interrupted)
      std::printf("interrupted: continue with `orch task run --resume %s`\n", outcome->trace->id.c_str());
  }
  return outcome->exit_code;
}

}  // namespace

std::function<int()> add_task_run(CLI::App& sub) {
  auto args = std::make_shared<TaskRunArgs>();
  sub.add_option("REQUEST", args->request, "the request, in words");
  sub.add_option("--worker", args->worker, "run the model stages with this worker (workers file)")
      ->check(not_empty("a worker's name (workers file)"));
  sub.add_option("--model", args->model,
                 "run the model stages with this model (models file; default: default_model)")
      ->check(not_empty("a model's name (models file)"));
  sub.add_option("--assume", args->assume, "the intent to assume when the request is ambiguous")
      ->check(not_empty("an intent (quick_fix, bug_fix, ...)"));
  sub.add_option("--project", args->project, "the project the request belongs to")
      ->check(not_empty("the project's name"));
  sub.add_option("--resume", args->resume, "continue the run of this open trace (after a crash or Ctrl-C)")
      ->check(not_empty("a trace id (`orch task list`)"));
  sub.add_option("--templates", args->flags.planner.templates,
                 "folder of user plan templates for the PLAN stage (default: .orch/templates if present)")
      ->check(not_empty("the templates folder"));
  add_task_flags(sub, args->flags, true);
  return [args] { return run(*args); };
}

}  // namespace orch::cli
