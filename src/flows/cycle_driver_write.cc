// CycleDriver: a cycle's milestones (the review phase, or the gate alone), the
// verify phase, and the writer — code, never a model — that applies them.
#include <fmt/format.h>

#include <algorithm>

#include "flows/cycle_driver.h"
#include "flows/cycle_writer.h"
#include "util/atomic_file.h"
#include "util/json_text.h"
#include "util/read_file.h"

namespace orch::flows::cycle_detail {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The milestone orch gives a task without asking anyone: its job wrote outside
// its file, an earlier phase did not hold, or its worker failed.
std::optional<Milestone> code_milestone(const CycleTask& t, const json& job_work) {
  Milestone m;
  m.id = t.id;
  const json& scope = job_work["scope_violation"];
  if (!scope.empty()) {
    m.transition = milestone_outcome_name(MilestoneOutcome::ScopeViolation);
    m.evidence = fmt::format("the job wrote outside its file: {} (put back)", scope.dump());
    return m;
  }
  const json& w = job_work["tasks"][t.id];
  const std::string work = w.value("work", "");
  if (work == task_work_name(TaskWork::Blocked)) {
    m.transition = milestone_outcome_name(MilestoneOutcome::BlockedByFormalizeFailure);
    m.evidence = w.value("reason", "");
    return m;
  }
  if (work == task_work_name(TaskWork::WorkerFailed)) {
    m.transition = milestone_outcome_name(MilestoneOutcome::NoChange);
    m.evidence = "the worker failed (its changes were put back): " + w.value("reason", "");
    return m;
  }
  return std::nullopt;
}

// Gate-only: the worker's claim (or, without one, what the file says: unchanged
// is no-change, changed is the stage's first target), accepted; the gate the
// writer runs decides.
Milestone gate_only_milestone(const CycleTask& t, const CycleStage& stage, const json& job_work,
                              const std::string& hash_before) {
  Milestone m;
  m.id = t.id;
  m.accepted = true;
  const json& w = job_work["tasks"][t.id];
  if (w.contains("claim")) {
    m.transition = w["claim"].value("transition", "");
    m.follow_up = w["claim"].value("note", "");
  } else {
    m.transition = job_work.value("hash_after", "") == hash_before
                       ? milestone_outcome_name(MilestoneOutcome::NoChange)
                       : stage.to.front();
  }
  m.evidence = w.value("work", "") == task_work_name(TaskWork::GateHeld)
                   ? "the gate held: " + w.value("gate", "")
                   : "the gate did not hold: " + w.value("reason", "");
  return m;
}

}  // namespace

Expected<std::optional<CycleOutcome>> CycleDriver::review(int n, const std::vector<CycleJob>& jobs) {
  json& cyc = cycle_doc(n);
  if (cyc.contains("milestones")) return std::optional<CycleOutcome>();
  const json& work = cyc["work"];
  // Per job, per task: the milestone, once known.
  std::vector<std::vector<std::optional<Milestone>>> ms(jobs.size());
  std::vector<ReviewInput> inputs;
  std::vector<std::size_t> reviewed;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const CycleJob& job = jobs[j];
    const json& jw = work[job.slug];
    bool needs_review = false;
    for (const CycleTask& t : job.tasks) {
      auto m = code_milestone(t, jw);
      if (!m && !c_.review)
        m = gate_only_milestone(t, *c_.lifecycle.stage_for(t.state), jw,
                                cyc["jobs"][j].value("hash_before", ""));
      needs_review = needs_review || !m;
      ms[j].push_back(std::move(m));
    }
    if (!needs_review) continue;
    json context = {{"cycle", n},
                    {"file", job.file},
                    {"baseline", (paths_.job(n, job.slug) / "baseline").string()},
                    {"tasks", json::array()}};
    for (const CycleTask& t : job.tasks) {
      json task = jw["tasks"][t.id];
      task["stage"] = t.stage;
      task["state"] = t.state;
      task["targets"] = c_.lifecycle.stage_for(t.state)->to;
      context["tasks"].push_back(std::move(task));
    }
    ORCH_TRY(write_file_atomically(paths_.job(n, job.slug) / "review.json", json_text(context, 2) + "\n"));
    inputs.push_back(ReviewInput{&job, std::move(context)});
    reviewed.push_back(j);
  }
  if (!inputs.empty()) {
    auto p = ORCH_TRY(
        phase(n, kReviewPhase, [&](const CyclePlanContext& c) { return review_phase_plan(c, inputs); }));
    if (!p) return pause_;
    for (std::size_t j : reviewed) {
      const StepRecord* s = p->step(review_step_id(jobs[j]));
      json answer = s && s->status == StepStatus::Done ? json::parse(s->result, nullptr, false) : json();
      for (std::size_t i = 0; i < jobs[j].tasks.size(); ++i) {
        if (ms[j][i]) continue;
        Milestone m;
        m.id = jobs[j].tasks[i].id;
        m.transition = milestone_outcome_name(MilestoneOutcome::RejectedByReview);
        m.evidence = fmt::format("the review failed: {}", s ? s->reason : p->reason);
        if (answer.is_object())
          for (const json& given : answer.value("milestones", json::array()))
            if (given.value("id", "") == m.id) m = milestone_from_json(given);
        if (answer.is_object() &&
            m.transition == milestone_outcome_name(MilestoneOutcome::RejectedByReview) &&
            m.evidence.starts_with("the review failed"))
          m.evidence = "the review gave no milestone for it";
        ms[j][i] = std::move(m);
      }
    }
  }
  json all = json::array();
  std::string lines;
  for (std::size_t j = 0; j < jobs.size(); ++j)
    for (const auto& m : ms[j]) {
      json entry = milestone_json(*m);
      entry["job"] = jobs[j].slug;
      lines += entry.dump() + "\n";
      all.push_back(std::move(entry));
    }
  ORCH_TRY(write_file_atomically(paths_.cycle(n) / "milestones.jsonl", lines, Durability::RenameOnly));
  cyc["milestones"] = std::move(all);
  return std::optional<CycleOutcome>();
}

namespace {

std::vector<Milestone> milestones_of_job(const json& cyc, const CycleJob& job) {
  std::vector<Milestone> out;
  for (const CycleTask& t : job.tasks) {
    Milestone m;
    m.id = t.id;
    m.transition = milestone_outcome_name(MilestoneOutcome::RejectedByReview);
    m.evidence = "no milestone was recorded for it";
    for (const json& entry : cyc["milestones"])
      if (entry.value("job", "") == job.slug && entry.value("id", "") == t.id) m = milestone_from_json(entry);
    out.push_back(std::move(m));
  }
  return out;
}

bool forced_rollback(const std::vector<Milestone>& ms) {
  return std::any_of(ms.begin(), ms.end(), [](const Milestone& m) {
    return m.rollback_required || m.transition == milestone_outcome_name(MilestoneOutcome::ScopeViolation);
  });
}

}  // namespace

Expected<std::optional<CycleOutcome>> CycleDriver::verify(int n, const std::vector<CycleJob>& jobs) {
  json& cyc = cycle_doc(n);
  if (cyc.contains("verify")) return std::optional<CycleOutcome>();
  std::vector<VerifyCheck> checks;
  for (const CycleJob& job : jobs) {
    const auto ms = milestones_of_job(cyc, job);
    if (forced_rollback(ms)) continue;
    for (std::size_t i = 0; i < job.tasks.size(); ++i)
      if (ms[i].accepted && c_.lifecycle.legal(job.tasks[i].state, ms[i].transition))
        checks.push_back(VerifyCheck{&job, i});
  }
  json verify = json::object();
  if (!checks.empty()) {
    auto p = ORCH_TRY(
        phase(n, kVerifyPhase, [&](const CyclePlanContext& c) { return verify_phase_plan(c, checks); }));
    if (!p) return pause_;
    for (const VerifyCheck& v : checks) {
      const CycleTask& t = v.job->tasks[v.task];
      const std::string id = verify_step_id(*v.job, v.task);
      const StepRecord* s = p->step(id);
      const auto attempts = p->attempts_of(id);
      json entry = {{"gate", gate_as_run(c_.stage(t.stage)->gate, t.file, t.id)}};
      if (s && s->status == StepStatus::Done)
        entry["exit"] = 0;
      else if (!attempts.empty() && attempts.back()->ending == AttemptEnding::Exited)
        entry["exit"] = attempts.back()->exit_code;
      else
        entry["exit"] = nullptr;
      entry["reason"] = s ? s->reason : p->reason;
      verify[v.job->slug][t.id] = std::move(entry);
    }
  }
  cyc["verify"] = std::move(verify);
  return std::optional<CycleOutcome>();
}

Expected<void> CycleDriver::write(int n, const std::vector<CycleJob>& jobs) {
  json& cyc = cycle_doc(n);
  StatusFile status = ORCH_TRY(read_status_file(c_.status_file, c_.fields, c_.lifecycle));
  json decisions = json::array();
  std::vector<CycleTransition> moves;
  std::vector<std::pair<std::string, std::string>> changes;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const CycleJob& job = jobs[j];
    const std::vector<Milestone> ms = milestones_of_job(cyc, job);
    std::vector<CycleItem> items;
    std::vector<std::optional<int>> exits;
    for (const CycleTask& t : job.tasks) {
      items.push_back(CycleItem{t.id, t.file, t.state});
      const json v = cyc["verify"].contains(job.slug) ? cyc["verify"][job.slug].value(t.id, json()) : json();
      exits.push_back(v.is_object() && v["exit"].is_number_integer()
                          ? std::optional<int>(v["exit"].get<int>())
                          : std::nullopt);
    }
    JobDecision jd = decide_job(items, ms, c_.lifecycle, exits);
    const fs::path file = c_.workspace / job.file, dir = paths_.job(n, job.slug);
    if (jd.restore_baseline) {
      if (fs::exists(dir / "baseline")) {
        const std::string text = ORCH_TRY(read_file_text(dir / "baseline"));
        ORCH_TRY(write_file_atomically(file, text));
        std::error_code ec;
        fs::permissions(file, fs::status(dir / "baseline", ec).permissions(), ec);
      } else {
        std::error_code ec;
        fs::remove(file, ec);
      }
    }
    const std::string hash_before = cyc["jobs"][j].value("hash_before", "");
    const std::string hash_after = file_content_hash(file.string());
    for (std::size_t i = 0; i < job.tasks.size(); ++i) {
      const CycleTask& t = job.tasks[i];
      WriterDecision& d = jd.tasks[i];
      if (d.to) {
        auto item = std::find_if(status.items.begin(), status.items.end(),
                                 [&](const CycleItem& x) { return x.id == t.id; });
        if (item == status.items.end() || (item->state != t.state && item->state != *d.to)) {
          d.outcome = MilestoneOutcome::RejectedByScheduler;
          d.why = fmt::format("the status file changed meanwhile ({} is now '{}'): left as it is", t.id,
                              item == status.items.end() ? "gone" : item->state);
          d.to.reset();
        } else {
          moves.push_back(CycleTransition{record_.id, n, job.slug, t.id, t.state, *d.to,
                                          gate_as_run(c_.stage(t.stage)->gate, t.file, t.id), 0, hash_before,
                                          hash_after, env_.now_ms()});
          if (item->state != *d.to) changes.emplace_back(t.id, *d.to);
        }
      }
      RecordedDecision rd{t.id,      job.slug, d.outcome,           ms[i].transition,
                          d.to,      d.why,    jd.restore_baseline, d.to ? *d.to : t.state,
                          hash_after};
      note(d.to ? fmt::format("cycle {}: {}: {} -> {}", n, t.id, t.state, *d.to)
                : fmt::format("cycle {}: {}: {}{}{}", n, t.id, milestone_outcome_name(d.outcome),
                              d.why.empty() ? "" : ": " + d.why,
                              jd.restore_baseline ? " (file put back)" : ""));
      decisions.push_back(decision_json(rd));
    }
  }
  // The ledger first, every move of the cycle in one transaction: a writer
  // killed before the status file is rewritten finds them there (a move already
  // recorded is not recorded again) and applies each once.
  ORCH_TRY(env_.store->begin());
  for (const CycleTransition& tr : moves) {
    auto inserted = env_.cycles->insert_transition(tr);
    if (!inserted) {
      (void)env_.store->rollback();
      return std::unexpected(inserted.error());
    }
  }
  ORCH_TRY(env_.store->commit());
  if (!changes.empty()) ORCH_TRY(write_item_states(status, changes));
  cyc["decisions"] = std::move(decisions);
  return export_audit();
}

Expected<void> CycleDriver::export_audit() {
  std::string lines;
  for (const AuditEntry& e : ORCH_TRY(env_.cycles->transitions(record_.id)))
    lines += audit_entry_json(e).dump() + "\n";
  return write_file_atomically(paths_.audit(), lines, Durability::RenameOnly);
}

}  // namespace orch::flows::cycle_detail
