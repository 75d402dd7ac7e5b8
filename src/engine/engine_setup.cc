// Building the scheduler's state: a new run, and the plan state a new run and a
// resume (resume.cc) share.
#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <random>
#include <thread>

#include "engine/scheduler.h"
#include "engine/scheduler_internal.h"
#include "util/strings.h"

namespace orch {

namespace fs = std::filesystem;

namespace {

// "20261130-061845-e3a7": the creation time (UTC, on the run's clock) and 16 random bits.
std::string new_run_id(std::int64_t wall_ms) {
  std::time_t t = static_cast<std::time_t>(wall_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::random_device rd;
  return fmt::format("{:04}{:02}{:02}-{:02}{:02}{:02}-{:04x}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, rd() & 0xffff);
}

// A run's -j when neither the command line nor the plan gives one: this
// machine's CPUs for a run that executes here; for one executed by workers, a
// bound on the attempts queued or running on them at once, whose number of
// slots this machine does not know.
constexpr int kWorkersConcurrency = 256;

int default_concurrency(Dispatch dispatch) {
  if (dispatch == Dispatch::Workers) return kWorkersConcurrency;
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace

Expected<void> Scheduler::load_plan_state(Plan plan) {
  plan_ = std::move(plan);
  return index_plan_state();
}

Expected<void> Scheduler::index_plan_state() {
  std::vector<StepState> old = std::move(steps_);
  steps_.clear();
  steps_.resize(plan_.steps.size());
  index_of_.clear();
  for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
    index_of_[plan_.steps[i].id] = static_cast<int>(i);
  }
  for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
    StepState& s = steps_[i];
    s.step = &plan_.steps[i];
    s.executor = executors_->find(s.step->executor);
    if (s.executor == nullptr)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("step '{}': unknown executor '{}'", s.step->id, s.step->executor));
    for (const auto& d : s.step->deps) {
      auto it = index_of_.find(d);
      if (it == index_of_.end())
        return fail(ErrorCode::InvalidInput,
                    fmt::format("step '{}': unknown dependency '{}'", s.step->id, d));
      steps_[static_cast<std::size_t>(it->second)].children.push_back(static_cast<int>(i));
    }
  }
  for (auto& o : old) {
    auto it = index_of_.find(o.rec.step_id);
    if (it != index_of_.end()) steps_[static_cast<std::size_t>(it->second)].rec = std::move(o.rec);
  }
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    StepState& s = steps_[i];
    if (s.rec.step_id.empty()) {
      s.rec.run_id = run_.id;
      s.rec.step_id = s.step->id;
      s.rec.status = StepStatus::Pending;
    }
    s.rec.idx = static_cast<int>(i);
    s.rec.goal = s.step->goal;
    s.rec.executor = s.step->executor;
  }
  for (const auto& id : options_.approve_steps) {
    if (index_of_.contains(id)) continue;
    std::vector<std::string> ids;
    for (const auto& st : plan_.steps) ids.push_back(st.id);
    return fail(ErrorCode::InvalidInput,
                fmt::format("--approve {}: the plan has no step '{}'{}", id, id, did_you_mean(id, ids)));
  }
  return {};
}

std::string detail::stored_plan_path(const fs::path& path) {
  const fs::path absolute = fs::absolute(path);
  std::error_code ec;
  fs::path folder = fs::weakly_canonical(absolute.parent_path(), ec);
  return (ec ? absolute.lexically_normal() : folder / absolute.filename()).string();
}

Expected<void> Scheduler::let_go() {
  run_.owner_pid = 0;
  run_.updated_at = now_ms();
  writer_.event("run_submitted", "", 0, {{"dispatch", dispatch_name(run_.dispatch)}});
  writer_.run_row(run_);
  if (writer_.failed()) return std::unexpected(*writer_.error());
  ORCH_TRY(commit());
  lock_.reset();
  return {};
}

Expected<void> Scheduler::prepare_new(Plan plan, const std::string& plan_text) {
  executors_->warm_up(plan);
  std::error_code ec;
  fs::path workspace = fs::canonical(options_.workspace, ec);
  if (ec)
    return fail(ErrorCode::InvalidInput, fmt::format("workspace '{}' is not a usable folder: {}",
                                                     options_.workspace.string(), ec.message()));
  run_ = RunRecord{};
  recovered_ = Recovery{};  // of another run (Engine::recover), nothing to this one
  recovered_run_.clear();
  run_.id = new_run_id(now_ms());
  writer_.set_run(run_.id);
  run_.name = plan.name;
  run_.plan_path = plan.source_path.empty() ? "" : detail::stored_plan_path(plan.source_path);
  run_.workspace = workspace.string();
  run_.concurrency =
      options_.concurrency.value_or(plan.concurrency.value_or(default_concurrency(options_.dispatch)));
  run_.keep_going = options_.keep_going || plan.on_failure == OnFailure::Continue;
  run_.created_at = run_.updated_at = now_ms();
  run_.owner_pid = static_cast<int>(getpid());
  run_.status = RunStatus::Running;
  run_.owner = options_.owner;
  run_.dispatch = options_.dispatch;
  lock_ = ORCH_TRY(store_.lock(run_.id));

  ORCH_TRY(load_plan_state(std::move(plan)));
  ORCH_TRY(prepare_run_folder());
  budget_.emplace(plan_.budget, Spend{}, 0);
  run_.budget_json = budget_limits_json(plan_.budget);

  // Through the writer, which makes them again should the store lose the transaction.
  ORCH_TRY(writer_.begin());
  writer_.write([this, run = run_] { return store_.insert_run(run); });
  writer_.write([this, plan = PlanVersion{run_.id, 1, run_.plan_path, plan_text, run_.created_at}] {
    return store_.insert_plan_version(plan);
  });
  writer_.write([this]() -> Expected<void> {  // the rows do not change before the commit
    for (auto& s : steps_) ORCH_TRY(store_.insert_step(s.rec));
    return {};
  });
  writer_.event("run_started", "", 0,
                {{"plan", run_.plan_path},
                 {"steps", steps_.size()},
                 {"concurrency", run_.concurrency},
                 {"pid", getpid()}});
  if (writer_.failed()) return std::unexpected(*writer_.error());
  return commit();
}

}  // namespace orch
