// CycleDriver: a cycle's preparation (baselines, the workspace snapshot, the
// workers' task files) and what is read from its plan and work phases (the
// transcripts, result.json, the workers' claims, the stray writes).
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "flows/cycle_driver.h"
#include "flows/cycle_scope.h"
#include "util/atomic_file.h"
#include "util/fd.h"
#include "util/json_text.h"
#include "util/read_file.h"
#include "util/strings.h"

namespace orch::flows::cycle_detail {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The claims a worker ended its answer with: {"claims": [{id, transition,
// note}]}, the whole answer or its last non-empty line. id -> claim.
json claims_of(const std::string& result) {
  json out = json::object();
  json doc = json::parse(result, nullptr, false);
  if (!doc.is_object()) {
    std::string_view text = trim(result);
    const auto nl = text.rfind('\n');
    doc = json::parse(nl == std::string_view::npos ? text : text.substr(nl + 1), nullptr, false);
  }
  if (!doc.is_object() || !doc.contains("claims") || !doc["claims"].is_array()) return out;
  for (const json& c : doc["claims"])
    if (c.is_object() && c.contains("id") && c["id"].is_string() && c.contains("transition") &&
        c["transition"].is_string())
      out[c["id"].get<std::string>()] = {{"transition", c["transition"]}, {"note", c.value("note", "")}};
  return out;
}

ScopeChange scope_change_from_json(const json& j) {
  ScopeChange c;
  c.path = j.value("path", "");
  const std::string kind = j.value("kind", "");
  c.kind = kind == "created"   ? ScopeChangeKind::Created
           : kind == "removed" ? ScopeChangeKind::Removed
                               : ScopeChangeKind::Modified;
  c.mtime_ms = j.value("mtime_ms", std::int64_t{0});
  return c;
}

}  // namespace

Expected<void> CycleDriver::prepare(int n, const std::vector<CycleJob>& jobs) {
  json& jobs_doc = cycle_doc(n)["jobs"];
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const CycleJob& job = jobs[j];
    const fs::path dir = paths_.job(n, job.slug);
    const fs::path baseline = dir / "baseline", absent = dir / "baseline.absent";
    // Taken once: after a kill -9 the file may be half-changed, the baseline not.
    if (!fs::exists(baseline) && !fs::exists(absent)) {
      const fs::path file = c_.workspace / job.file;
      if (fs::exists(file)) {
        auto text = read_file_text(file);
        if (!text) return fail(ErrorCode::Io, fmt::format("{}: {}", job.file, text.error().message));
        // Made durable all together below, with one syncfs.
        ORCH_TRY(write_file_atomically(baseline, *text, Durability::RenameOnly));
        std::error_code ec;
        fs::permissions(baseline, fs::status(file, ec).permissions(), ec);
      } else {
        ORCH_TRY(write_file_atomically(absent, ""));
      }
    }
    jobs_doc[j]["hash_before"] = fs::exists(baseline) ? file_content_hash(baseline.string()) : std::string();
  }
  // The baselines must survive a power cut before any worker touches a file: one
  // syncfs for them all rather than an fsync each (a cycle may have hundreds).
  {
    Fd fd(::open(paths_.cycle(n).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.ok() || ::syncfs(fd.get()) != 0)
      return fail(ErrorCode::Io, fmt::format("{}: cannot sync the baselines: {}", paths_.cycle(n).string(),
                                             std::strerror(errno)));
  }
  const fs::path scope = paths_.scope(n);
  if (!scope_snapshot_exists(scope)) {
    std::error_code ec;
    fs::remove_all(scope, ec);
    fs::remove_all(fs::path(scope.string() + ".tmp"), ec);
    // The ledger's folder, when it lies in the workspace elsewhere than .orch/,
    // is orch's, not a job's: never snapshotted, never a stray write.
    std::vector<std::string> ignore = c_.scope_ignore;
    const fs::path store = fs::weakly_canonical(env_.store->folder(), ec);
    const fs::path rel = store.lexically_relative(fs::weakly_canonical(c_.workspace, ec));
    if (!rel.empty() && *rel.begin() != ".." && rel != ".") ignore.push_back(rel.generic_string() + "/**");
    ORCH_TRY(take_scope_snapshot(c_.workspace, ignore, scope));
  }
  return {};
}

Expected<void> CycleDriver::write_tasks_files(int n, const std::vector<CycleJob>& jobs) {
  const CyclePlanContext ctx = context(n, -1);
  for (const CycleJob& job : jobs)
    for (const JobPhase& phase : job.phases)
      ORCH_TRY(write_file_atomically(tasks_file(ctx, job, phase.number),
                                     json_text(tasks_file_json(ctx, job, phase), 2) + "\n",
                                     Durability::RenameOnly));  // made from the document at every start
  return {};
}

Expected<void> CycleDriver::read_plan(int n, const PhaseRun& p) {
  const StepRecord* s = p.step(kCyclePlanStep);
  if (s && s->status == StepStatus::Done) {
    std::string text = s->result;
    if (!text.empty() && text.back() != '\n') text += '\n';
    ORCH_TRY(write_file_atomically(paths_.cycle(n) / "cycle_plan.md", text));
    return {};
  }
  note(fmt::format("cycle {}: the plan failed ({}); the workers go on without it", n,
                   s ? s->reason : p.reason));
  cycle_doc(n)["plan_failed"] = s ? s->reason : p.reason;
  return {};
}

Expected<void> CycleDriver::read_work(int n, const std::vector<CycleJob>& jobs, const PhaseRun& p) {
  json& cyc = cycle_doc(n);
  std::set<std::string> own_files;
  for (const CycleJob& job : jobs) own_files.insert(fs::path(job.file).lexically_normal().generic_string());

  // The stray writes: recorded before they are reverted, so a resume that
  // comes back here after a kill -9 still knows them.
  if (!cyc.contains("scope")) {
    auto changes = ORCH_TRY(scope_changes(c_.workspace, paths_.scope(n)));
    std::vector<JobWindow> windows;
    for (const CycleJob& job : jobs) {
      JobWindow w{job.slug, 0, 0};
      for (const JobPhase& phase : job.phases)
        for (const AttemptRecord* a : p.attempts_of(worker_step_id(job, phase.number))) {
          if (w.start_ms == 0 || a->started_at < w.start_ms) w.start_ms = a->started_at;
          w.end_ms = std::max(w.end_ms, a->finished_at ? a->finished_at : a->started_at);
        }
      if (w.start_ms != 0) windows.push_back(w);
    }
    json scope = json::array();
    for (const ScopeChange& c : changes) {
      if (own_files.contains(c.path)) continue;
      json blamed = json::array();
      for (const std::string& slug : jobs_for_change(c, windows)) blamed.push_back(slug);
      scope.push_back({{"path", c.path},
                       {"kind", scope_change_kind_name(c.kind)},
                       {"mtime_ms", c.mtime_ms},
                       {"jobs", blamed}});
    }
    cyc["scope"] = std::move(scope);
    ORCH_TRY(save());
  }
  std::vector<ScopeChange> stray;
  for (const json& c : cyc["scope"]) stray.push_back(scope_change_from_json(c));
  if (!stray.empty()) {
    ORCH_TRY(revert_scope_changes(c_.workspace, paths_.scope(n), stray));
    for (const json& c : cyc["scope"])
      note(fmt::format("cycle {}: {} was {} outside any job's file: put back (blamed: {})", n,
                       c["path"].get<std::string>(), c["kind"].get<std::string>(), c["jobs"].dump()));
  }

  json work = json::object();
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const CycleJob& job = jobs[j];
    const fs::path dir = paths_.job(n, job.slug);
    json scope_paths = json::array();
    for (const json& c : cyc["scope"])
      if (std::find(c["jobs"].begin(), c["jobs"].end(), job.slug) != c["jobs"].end())
        scope_paths.push_back(c["path"]);
    json result = {{"file", job.file},
                   {"job", job.slug},
                   {"hash_before", cyc["jobs"][j].value("hash_before", "")},
                   {"hash_after", file_content_hash((c_.workspace / job.file).string())},
                   {"scope_violation", scope_paths},
                   {"phases", json::array()}};
    json tasks = json::object();
    bool earlier_failed = false;
    for (const JobPhase& phase : job.phases) {
      const std::string wid = worker_step_id(job, phase.number);
      const StepRecord* ws = p.step(wid);
      // The transcript: every attempt's output, in order.
      std::string transcript, unreadable;
      for (const AttemptRecord* a : p.attempts_of(wid)) {
        auto read = env_.store->read_attempt_output(
            *a, AttemptStream::Stdout, [&](std::string_view piece) { transcript.append(piece); });
        if (!read) unreadable = fmt::format("attempt {}: {}", a->number, read.error().message);
      }
      ORCH_TRY(write_file_atomically(dir / fmt::format("phase-{}.jsonl", phase.number), transcript,
                                     Durability::RenameOnly));
      const bool worker_done = ws && ws->status == StepStatus::Done;
      const json claims = worker_done ? claims_of(ws->result) : json::object();
      json phase_doc = {{"phase", phase.number},
                        {"stage", phase.stage},
                        {"worker",
                         {{"status", ws ? step_status_name(ws->status) : "missing"},
                          {"attempts", p.attempts_of(wid).size()},
                          {"reason", ws ? ws->reason : "not in the run"}}},
                        {"tasks", json::array()}};
      // Said, not hidden: a transcript the store could not give back.
      if (!unreadable.empty()) phase_doc["transcript_unreadable"] = unreadable;
      bool phase_failed = !worker_done;
      for (std::size_t i : phase.tasks) {
        const CycleTask& t = job.tasks[i];
        const std::string gid = gate_step_id(job, phase.number, i);
        const StepRecord* gs = p.step(gid);
        const auto gate_attempts = p.attempts_of(gid);
        TaskWork w = earlier_failed                         ? TaskWork::Blocked
                     : !worker_done                         ? TaskWork::WorkerFailed
                     : gs && gs->status == StepStatus::Done ? TaskWork::GateHeld
                                                            : TaskWork::GateFailed;
        if (w != TaskWork::GateHeld) phase_failed = true;
        json task = {{"id", t.id},
                     {"phase", phase.number},
                     {"work", task_work_name(w)},
                     {"gate", gate_as_run(c_.stage(t.stage)->gate, job.file, t.id)}};
        if (!gate_attempts.empty() && gate_attempts.back()->exit_code >= 0)
          task["gate_exit"] = gate_attempts.back()->exit_code;
        if (w == TaskWork::GateFailed) task["reason"] = gs ? gs->reason : "the gate did not run";
        if (w == TaskWork::WorkerFailed) task["reason"] = ws ? ws->reason : "the worker did not run";
        if (w == TaskWork::Blocked) task["reason"] = fmt::format("phase {} did not hold", phase.number - 1);
        if (claims.contains(t.id)) task["claim"] = claims[t.id];
        phase_doc["tasks"].push_back(task);
        tasks[t.id] = std::move(task);
      }
      earlier_failed = earlier_failed || phase_failed;
      result["phases"].push_back(std::move(phase_doc));
    }
    ORCH_TRY(write_file_atomically(dir / "result.json", json_text(result, 2) + "\n", Durability::RenameOnly));
    work[job.slug] = {{"tasks", std::move(tasks)},
                      {"scope_violation", std::move(scope_paths)},
                      {"hash_after", result["hash_after"]}};
  }
  cyc["work"] = std::move(work);
  return {};
}

}  // namespace orch::flows::cycle_detail
