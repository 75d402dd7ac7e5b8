// CycleDriver: the loop over cycles, a cycle's progress, and its phases run
// through the engine's phase runner.
#include "flows/cycle_driver.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/phase_runner.h"
#include "flows/stage_plan.h"
#include "util/atomic_file.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::flows::cycle_detail {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const StepRecord* PhaseRun::step(const std::string& id) const {
  for (const StepRecord& s : steps)
    if (s.step_id == id) return &s;
  return nullptr;
}

std::vector<const AttemptRecord*> PhaseRun::attempts_of(const std::string& id) const {
  std::vector<const AttemptRecord*> out;
  for (const AttemptRecord& a : attempts)
    if (a.step_id == id) out.push_back(&a);
  return out;
}

const char* task_work_name(TaskWork w) {
  switch (w) {
    case TaskWork::GateHeld:
      return "gate_held";
    case TaskWork::GateFailed:
      return "gate_failed";
    case TaskWork::WorkerFailed:
      return "worker_failed";
    case TaskWork::Blocked:
      return "blocked";
  }
  return "blocked";
}

CycleDriver::CycleDriver(CycleEnv& env, CycleRecord record, json doc, CycleConfig config)
    : env_(env), record_(std::move(record)), doc_(std::move(doc)), c_(std::move(config)) {
  paths_.root = env_.store->folder() / "cycles" / record_.id;
}

Expected<void> CycleDriver::save() {
  record_.doc_json = doc_.dump();
  record_.updated_at = env_.now_ms();
  ORCH_TRY(env_.cycles->update_cycle(record_));
  // The document's export, for people and tools; the ledger holds it.
  return write_file_atomically(paths_.root / "cycle.json", json_text(doc_, 2) + "\n", Durability::RenameOnly);
}

Expected<CycleOutcome> CycleDriver::stop(CycleStatus status, const std::string& reason, int exit_code) {
  record_.status = status;
  doc_["status"] = cycle_status_name(status);
  doc_["stop_reason"] = reason;
  ORCH_TRY(save());
  return CycleOutcome{record_.id, status, doc_, exit_code, reason};
}

CycleOutcome CycleDriver::paused(const PhaseRun& p, int n, const char* phase) const {
  CycleOutcome out{record_.id, CycleStatus::Running, doc_, exit_code_for(p.status), ""};
  out.reason =
      p.status == RunStatus::AwaitingApproval
          ? fmt::format("cycle {}: {}: {} (then `orch cycle resume {}`)", n, phase, p.reason, record_.id)
      : p.status == RunStatus::Cancelled
          ? fmt::format("cycle {}: {}: run {} was cancelled; to go on, `orch cycle resume {}`", n, phase,
                        p.run_id, record_.id)
          : fmt::format("interrupted in cycle {} ({}): continue with `orch cycle resume {}`", n, phase,
                        record_.id);
  return out;
}

CyclePlanContext CycleDriver::context(int n, std::int64_t tokens_left) const {
  return CyclePlanContext{&c_, record_.id, n, paths_, tokens_left};
}

json& CycleDriver::cycle_doc(int n) {
  return doc_["cycles"][static_cast<std::size_t>(n - 1)];
}

std::vector<CycleJob> CycleDriver::jobs_of(int n) {
  return cycle_jobs(group_jobs(cycle_tasks_of(cycle_doc(n), c_.lifecycle)), c_.lifecycle);
}

void CycleDriver::set_progress(int n, CycleProgress p) {
  cycle_doc(n)["progress"] = cycle_progress_name(p);
}

Expected<std::optional<PhaseRun>> CycleDriver::phase(
    int n, const char* name, const std::function<ojson(const CyclePlanContext&)>& build) {
  EngineOptions eo;
  eo.workspace = c_.workspace;
  eo.executors = env_.executors;
  eo.handle_signals = env_.handle_signals;
  eo.ask_approval = env_.ask_approval;
  PhaseRunner runner(*env_.store, std::move(eo));
  PhaseRequest request;
  request.key = RunOwner{OwnerKind::Cycle, record_.id, n, name};
  if (c_.budget_tokens)
    request.tokens_left =
        *c_.budget_tokens - ORCH_TRY(owner_spent_tokens(*env_.store, OwnerKind::Cycle, record_.id));
  const std::string run_name = fmt::format("cycle {} {} {}", record_.id, n, name);
  request.build = [&](std::int64_t left) -> Expected<BuiltPlan> {
    std::string text = json_text(build(context(n, left)), 2);
    Plan plan = ORCH_TRY(load_built_plan(c_.workspace, *env_.executors, text, run_name,
                                         fmt::format("the cycle's {} plan", name)));
    return BuiltPlan{std::move(plan), std::move(text)};
  };
  request.who = fmt::format("cycle run {}: the {} of cycle {}", record_.id, name, n);
  request.resume_command = fmt::format("orch cycle resume {}", record_.id);
  request.on_note = [this](const std::string& line) { note(line); };
  request.on_start = [&](PhaseStart start, const std::string& run_id) {
    note(start == PhaseStart::Started ? fmt::format("cycle {}: {}", n, name)
                                      : fmt::format("cycle {}: {}: resuming run {}", n, name, run_id));
  };
  const PhaseResult ran = ORCH_TRY(runner.run(request));
  PhaseRun p;
  p.run_id = ran.run_id;
  p.status = ran.status;
  p.reason = ran.reason;
  if (ran.start == PhaseStart::NoBudget || (ran.status == RunStatus::BudgetExhausted)) {
    const std::string why =
        ran.start == PhaseStart::NoBudget ? "nothing is left of the token cap" : ran.reason;
    pause_ = ORCH_TRY(stop(CycleStatus::Budget,
                           fmt::format("cycle {}: {}: the budget stopped it ({}); raise it with `orch cycle "
                                       "resume {} --budget-tokens N`",
                                       n, name, why, record_.id),
                           3));
    return std::optional<PhaseRun>();
  }
  if (p.status == RunStatus::Interrupted || p.status == RunStatus::AwaitingApproval ||
      p.status == RunStatus::Running || p.status == RunStatus::Cancelled) {
    pause_ = paused(p, n, name);
    return std::optional<PhaseRun>();
  }
  cycle_doc(n)["runs"][name] = p.run_id;
  p.steps = ORCH_TRY(env_.store->steps(p.run_id));
  p.attempts = ORCH_TRY(env_.store->attempts(p.run_id));
  return std::optional<PhaseRun>(std::move(p));
}

Expected<std::vector<CycleTask>> CycleDriver::objectives_now() {
  auto status = read_status_file(c_.status_file, c_.fields, c_.lifecycle);
  if (!status) return std::unexpected(status.error());
  if (!doc_.contains("initial_items")) doc_["initial_items"] = cycle_items_json(status->items);
  return select_objectives(
      status->items, c_.lifecycle, cycle_history(doc_, c_.lifecycle),
      [&](const std::string& file) { return file_content_hash((c_.workspace / file).string()); },
      c_.past_attempts);
}

Expected<bool> CycleDriver::begin_cycle(int n) {
  std::vector<CycleTask> objectives = ORCH_TRY(objectives_now());
  if (objectives.empty()) return false;
  const std::vector<CycleJob> jobs = cycle_jobs(group_jobs(objectives), c_.lifecycle);
  json cycle = {{"cycle", n}, {"progress", cycle_progress_name(CycleProgress::Prepare)}};
  cycle["objectives"] = json::array();
  for (const CycleTask& t : objectives) cycle["objectives"].push_back(cycle_task_json(t));
  cycle["jobs"] = json::array();
  for (const CycleJob& j : jobs) {
    json ids = json::array();
    for (const CycleTask& t : j.tasks) ids.push_back(t.id);
    cycle["jobs"].push_back({{"slug", j.slug}, {"file", j.file}, {"ids", ids}, {"phases", j.phases.size()}});
  }
  cycle["runs"] = json::object();
  ORCH_TRY(
      write_file_atomically(paths_.cycle(n) / "objectives.json", json_text(cycle["objectives"], 2) + "\n"));
  doc_["cycles"].push_back(std::move(cycle));
  ORCH_TRY(save());
  note(fmt::format("cycle {}: {} item{} to advance, {} job{}", n, objectives.size(),
                   objectives.size() == 1 ? "" : "s", jobs.size(), jobs.size() == 1 ? "" : "s"));
  return true;
}

Expected<std::optional<CycleOutcome>> CycleDriver::run_cycle(int n) {
  const std::vector<CycleJob> jobs = jobs_of(n);
  auto progress = [&] {
    return parse_cycle_progress(cycle_doc(n).value("progress", "")).value_or(CycleProgress::Prepare);
  };
  if (progress() == CycleProgress::Prepare) {
    ORCH_TRY(prepare(n, jobs));
    set_progress(n, c_.plan ? CycleProgress::Plan : CycleProgress::Work);
    ORCH_TRY(save());
  }
  if (progress() == CycleProgress::Plan) {
    auto p =
        ORCH_TRY(phase(n, kPlanPhase, [&](const CyclePlanContext& c) { return plan_phase_plan(c, jobs); }));
    if (!p) return pause_;
    ORCH_TRY(read_plan(n, *p));
    set_progress(n, CycleProgress::Work);
    ORCH_TRY(save());
  }
  if (progress() == CycleProgress::Work) {
    const fs::path plan_file = paths_.cycle(n) / "cycle_plan.md";
    const std::string plan_path = fs::exists(plan_file) ? plan_file.string() : std::string();
    ORCH_TRY(write_tasks_files(n, jobs));
    auto p = ORCH_TRY(
        phase(n, kWorkPhase, [&](const CyclePlanContext& c) { return work_phase_plan(c, jobs, plan_path); }));
    if (!p) return pause_;
    ORCH_TRY(read_work(n, jobs, *p));
    set_progress(n, CycleProgress::Review);
    ORCH_TRY(save());
  }
  if (progress() == CycleProgress::Review) {
    if (auto out = ORCH_TRY(review(n, jobs))) return out;
    set_progress(n, CycleProgress::Verify);
    ORCH_TRY(save());
  }
  if (progress() == CycleProgress::Verify) {
    if (auto out = ORCH_TRY(verify(n, jobs))) return out;
    set_progress(n, CycleProgress::Write);
    ORCH_TRY(save());
  }
  if (progress() == CycleProgress::Write) {
    ORCH_TRY(write(n, jobs));
    set_progress(n, CycleProgress::Done);
    record_.cycles = n;
    ORCH_TRY(save());
  }
  return std::optional<CycleOutcome>();
}

Expected<CycleOutcome> CycleDriver::drive() {
  if (!doc_.contains("cycles")) doc_["cycles"] = json::array();
  for (;;) {
    const json& cycles = doc_["cycles"];
    int n = static_cast<int>(cycles.size());
    const bool open =
        n > 0 && cycles.back().value("progress", "") != cycle_progress_name(CycleProgress::Done);
    if (!open) {
      Expected<bool> started = false;
      if (n >= c_.max_iterations) {
        auto left = objectives_now();
        started = left ? Expected<bool>(!left->empty()) : std::unexpected(left.error());
      } else {
        started = begin_cycle(n + 1);
      }
      if (!started) return stop(CycleStatus::Failed, started.error().message, 1);
      if (*started && n >= c_.max_iterations)
        return stop(CycleStatus::MaxIterations,
                    fmt::format("max_iterations ({}) reached with items left to advance", c_.max_iterations),
                    1);
      ++n;
      if (!*started) {
        auto status = read_status_file(c_.status_file, c_.fields, c_.lifecycle);
        if (!status) return stop(CycleStatus::Failed, status.error().message, 1);
        std::vector<std::string> left;
        for (const CycleItem& item : status->items)
          if (c_.lifecycle.stage_for(item.state)) left.push_back(item.id);
        if (left.empty()) return stop(CycleStatus::Converged, "every item is in a final state", 0);
        return stop(CycleStatus::Converged,
                    fmt::format("no item can advance: {} stuck ({})", left.size(), join(left, ", ")), 1);
      }
    }
    if (auto out = ORCH_TRY(run_cycle(n))) return *out;
  }
}

}  // namespace orch::flows::cycle_detail
