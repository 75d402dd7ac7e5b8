#include "orch/engine.h"

#include <thread>

#include "engine/scheduler.h"
#include "orch/plan_loader.h"

namespace orch {

int exit_code_for(RunStatus status) {
  switch (status) {
    case RunStatus::Succeeded:
      return kExitSucceeded;
    case RunStatus::Failed:
      return kExitFailed;
    case RunStatus::Escalated:
    case RunStatus::AwaitingApproval:
      return kExitEscalated;
    case RunStatus::BudgetExhausted:
      return kExitBudget;
    case RunStatus::Interrupted:
    case RunStatus::Cancelled:
      return kExitInterrupted;
    case RunStatus::Running:
      return kExitFailed;
  }
  return kExitFailed;
}

ValidateOptions validate_options_for(const std::filesystem::path& workspace, const std::string& plan_file,
                                     const ExecutorRegistry& executors) {
  ValidateOptions v;
  v.workspace = workspace;
  // A plan from standard input ("-") has no folder of its own: the workspace's.
  const bool no_folder = plan_file.empty() || plan_file == kStdinPlan;
  v.plan_dir = no_folder ? workspace : std::filesystem::absolute(plan_file).parent_path();
  v.file_name = plan_display_name(plan_file);
  v.executor_known = [&executors](const std::string& name) { return executors.known(name); };
  v.executor_check = [&executors](const Step& step, Diagnostics& out) {
    if (const Executor* e = executors.find(step.executor)) e->check_step(step, out);
  };
  return v;
}

struct Engine::Impl {
  Impl(Store& store, EngineOptions options) : scheduler(store, options) {}
  Scheduler scheduler;
};

Engine::Engine(Store& store, EngineOptions options) {
  if (!options.executors)
    options.executors = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
  impl_ = std::make_unique<Impl>(store, std::move(options));
}

Engine::~Engine() = default;

Expected<RunOutcome> Engine::run(const Plan& plan, const std::string& plan_text) {
  return run(Plan(plan), plan_text);
}

Expected<RunOutcome> Engine::run(Plan&& plan, const std::string& plan_text) {
  ORCH_TRY(impl_->scheduler.prepare_new(std::move(plan), plan_text));
  return impl_->scheduler.run_loop();
}

Expected<std::string> Engine::submit(Plan&& plan, const std::string& plan_text) {
  ORCH_TRY(impl_->scheduler.prepare_new(std::move(plan), plan_text));
  ORCH_TRY(impl_->scheduler.let_go());
  return impl_->scheduler.run_id();
}

Expected<RunOutcome> Engine::resume(const std::string& run_id,
                                    const std::optional<std::string>& replan_path) {
  ORCH_TRY(impl_->scheduler.prepare_resume(run_id, replan_path));
  return impl_->scheduler.run_loop();
}

Expected<Recovery> Engine::recover(const std::string& run_id) {
  return impl_->scheduler.recover(run_id);
}

const std::string& Engine::run_id() const {
  return impl_->scheduler.run_id();
}

}  // namespace orch
