#include "orch/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>

#include "orch/clock.h"
#include "util/iso_time.h"
#include "util/strings.h"

namespace orch {

using ojson = nlohmann::ordered_json;

std::string iso_time(std::int64_t ms) {
  return ms <= 0 ? std::string() : iso8601_utc(ms);
}

std::string human_duration(std::int64_t ms) {
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms < 60'000) return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
  std::int64_t s = ms / 1000;
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

namespace {

// `path` "" when the stream is kept in the ledger row (`orch logs` prints it either
// way), and when a finished attempt's stream wrote nothing: its log file is made
// only for the first byte. A running attempt's byte count is written when it
// ends: until then its path is given, and the bytes are what its file holds now
// (up to the cap: what went beyond is counted only at the end).
ojson stream_json(const std::string& path, std::int64_t bytes, bool truncated, bool finished) {
  if (!finished && !path.empty()) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec) bytes = std::max<std::int64_t>(bytes, static_cast<std::int64_t>(size));
  }
  return {{"path", bytes > 0 || !finished ? path : std::string()},
          {"in_ledger", path.empty()},
          {"bytes", bytes},
          {"truncated", truncated}};
}

// `until`: for an attempt still running, the time its duration runs to (now, or
// an orphaned run's driver's last sign of life).
ojson attempt_json(const AttemptRecord& a, std::int64_t until) {
  ojson checks = ojson::parse(a.checks_json.empty() ? "[]" : a.checks_json, nullptr, false);
  if (checks.is_discarded()) checks = ojson::array();
  return {{"number", a.number},
          {"status", attempt_status_name(a.status)},
          {"counted", a.counted},
          {"ending", a.status == AttemptStatus::Running ? "" : attempt_ending_name(a.ending)},
          {"exit_code", a.exit_code},
          {"signal", a.signal},
          {"reason", a.reason},
          {"checks", checks},
          {"tokens_in", a.tokens_in},
          {"tokens_out", a.tokens_out},
          {"tokens_cache_read", a.cache_read_tokens},
          {"tokens_cache_write", a.cache_write_tokens},
          {"cost_usd", a.cost_usd},
          {"duration_ms", a.status == AttemptStatus::Running && a.started_at > 0
                              ? std::max<std::int64_t>(0, until - a.started_at)
                              : a.duration_ms},
          {"started_at", iso_time(a.started_at)},
          {"finished_at", iso_time(a.finished_at)},
          {"stdout", stream_json(a.stdout_path, a.stdout_bytes, a.stdout_truncated,
                                 a.status != AttemptStatus::Running)},
          {"stderr", stream_json(a.stderr_path, a.stderr_bytes, a.stderr_truncated,
                                 a.status != AttemptStatus::Running)},
          {"snapshot", a.snapshot_dir},
          {"host", a.host},
          {"model", a.model}};
}

// The attempts of a running run executed by workers that no live worker can
// take, and why (their driver's attempt_waiting events; one claimed since is not
// waiting any more), shown as the running step's reason.
using Waiting = std::map<std::pair<std::string, int>, std::string>;
Expected<Waiting> waiting_attempts(Store& store, const RunRecord& run) {
  Waiting waiting;
  if (run.status != RunStatus::Running || run.dispatch != Dispatch::Workers) return waiting;
  for (const auto& e : ORCH_TRY(store.events_of_kind(run.id, "attempt_waiting"))) {
    auto data = ojson::parse(e.data_json, nullptr, false);
    if (data.is_object() && data.contains("reason") && data["reason"].is_string())
      waiting[{e.step_id, e.attempt}] = data["reason"].get<std::string>();
  }
  if (!waiting.empty())
    for (const auto& e : ORCH_TRY(store.events_of_kind(run.id, "attempt_claimed")))
      waiting.erase({e.step_id, e.attempt});
  return waiting;
}

// One step of the report, with its attempts.
ojson step_json(const StepRecord& s, const std::vector<const AttemptRecord*>& attempts, const RunRecord& run,
                bool active, std::int64_t now, const Waiting& waiting, ReportDetail detail) {
  // Built by assignment and moves: an initializer list would deep-copy every attempt.
  ojson att = ojson::array();
  std::int64_t cache_read = 0, cache_write = 0;
  for (const AttemptRecord* a : attempts) {
    att.push_back(attempt_json(*a, active ? now : run.updated_at));
    cache_read += a->cache_read_tokens;
    cache_write += a->cache_write_tokens;
  }
  ojson step = ojson::object();
  step["id"] = s.step_id;
  step["goal"] = s.goal;
  step["executor"] = s.executor;
  step["status"] = step_status_name(s.status);
  step["reason"] = s.reason;
  if (s.status == StepStatus::Running)
    if (auto w = waiting.find({s.step_id, s.last_attempt}); w != waiting.end())
      step["reason"] = "waiting: " + w->second;
  step["attempts"] = std::move(att);
  step["tokens_in"] = s.tokens_in;
  step["tokens_out"] = s.tokens_out;
  step["tokens_cache_read"] = cache_read;
  step["tokens_cache_write"] = cache_write;
  step["cost_usd"] = s.cost_usd;
  // A step running now has run for as long as its running attempt, on top: to
  // now, or for an orphaned run to its driver's last sign of life (what a
  // resume or cancel will charge the attempt when it closes it).
  std::int64_t duration = s.wall_ms;
  if (run.status == RunStatus::Running && s.status == StepStatus::Running && !attempts.empty()) {
    const AttemptRecord& last = *attempts.back();
    const std::int64_t until = active ? now : run.updated_at;
    if (last.status == AttemptStatus::Running && last.started_at > 0)
      duration += std::max<std::int64_t>(0, until - last.started_at);
  }
  step["duration_ms"] = duration;
  step["fingerprint"] = s.fingerprint;
  step["result_bytes"] = s.result.size();
  if (detail == ReportDetail::WithResults) step["result"] = s.result;
  return step;
}

}  // namespace

nlohmann::ordered_json owner_json(const RunOwner& owner) {
  if (owner.kind == OwnerKind::None) return nullptr;
  return {{"kind", owner_kind_name(owner.kind)},
          {"id", owner.id},
          {"round", owner.round},
          {"phase", owner.phase}};
}

Expected<void> refresh_running_totals(Store& store, RunRecord& run, bool active, std::int64_t now_ms) {
  if (run.status != RunStatus::Running) return {};
  const AttemptTotals totals = ORCH_TRY(store.attempt_totals(run.id));
  run.spent_tokens = totals.tokens;
  run.spent_cost_usd = totals.cost_usd;
  run.spent_attempts = totals.counted;
  const std::int64_t latest =
      active ? std::max(now_ms, run.updated_at) : std::max(totals.last_ms, run.updated_at);
  run.spent_wall_ms += latest - run.updated_at;
  run.updated_at = latest;
  return {};
}

namespace {

// A run's row as the reports show it: whether a live process drives it, and a
// running run's totals refreshed.
struct ShownRun {
  RunRecord run;
  bool active = false;
  std::int64_t now = 0;
};
Expected<ShownRun> shown_run(Store& store, const std::string& run_id) {
  // Only a live process holds the run's lock: after kill -9 the run still says
  // running, but nothing drives it until `orch resume`. The lock is looked at
  // before the row is read: a driver writes its final status and only then lets
  // the lock go, so a row read afterwards that still says running was orphaned.
  // (Read the other way round, a run that ends in between would look orphaned.)
  const bool held = store.locked(run_id);
  auto found = ORCH_TRY(store.find_run(run_id));
  if (!found) return std::unexpected(store.no_run(run_id));
  ShownRun out{std::move(*found), false, Clock::system().wall_ms()};
  out.active = out.run.status == RunStatus::Running && held;
  ORCH_TRY(refresh_running_totals(store, out.run, out.active, out.now));
  return out;
}

}  // namespace

Expected<ojson> build_run_report(Store& store, const std::string& run_id, ReportDetail detail) {
  const ShownRun shown = ORCH_TRY(shown_run(store, run_id));
  const RunRecord& run = shown.run;
  const bool active = shown.active;
  const std::int64_t now = shown.now;
  const bool full = detail != ReportDetail::Summary;
  // The summary needs only the counts: the steps (and their results) are not read.
  std::vector<StepRecord> steps;
  std::vector<AttemptRecord> attempts;
  if (full) {
    steps = ORCH_TRY(store.steps(run_id));
    attempts = ORCH_TRY(store.attempts(run_id));
  }
  std::map<std::string, std::vector<const AttemptRecord*>> by_step;
  for (const auto& a : attempts) by_step[a.step_id].push_back(&a);

  // Written by the engine from the plan (runs.budget_json; the schema checks it is JSON).
  ojson limits = ojson::parse(run.budget_json, nullptr, false);
  if (!limits.is_object()) limits = ojson::object();

  std::map<std::string, int> counts{
      {"total", 0},     {"done", 0},    {"failed", 0},  {"skipped", 0},
      {"cancelled", 0}, {"pending", 0}, {"running", 0}, {"awaiting_approval", 0}};
  if (!full) {
    for (const auto& [status, n] : ORCH_TRY(store.step_status_counts(run_id))) {
      counts["total"] += n;
      counts[step_status_name(status)] += n;
    }
  }
  const Waiting waiting = full ? ORCH_TRY(waiting_attempts(store, run)) : Waiting{};
  ojson step_list = ojson::array();
  for (const auto& s : steps) {
    ++counts["total"];
    ++counts[step_status_name(s.status)];
    step_list.push_back(step_json(s, by_step[s.step_id], run, active, now, waiting, detail));
  }
  // A live run's time goes on between ledger writes (a step may run for minutes);
  // an orphaned one's ends at the last thing the ledger recorded of it.
  std::int64_t end = run.finished_at ? run.finished_at : run.updated_at;
  ojson report = {{"schema", "orch.run-report/1"},
                  {"run",
                   {{"id", run.id},
                    {"name", run.name},
                    {"status", run_status_name(run.status)},
                    {"reason", run.reason},
                    {"exit_code", run.exit_code},
                    {"plan", run.plan_path},
                    {"plan_version", run.plan_version},
                    {"workspace", run.workspace},
                    {"concurrency", run.concurrency},
                    {"keep_going", run.keep_going},
                    {"created_at", iso_time(run.created_at)},
                    {"finished_at", iso_time(run.finished_at)},
                    {"elapsed_ms", end > run.created_at ? end - run.created_at : 0},
                    {"active", active},
                    {"owner", owner_json(run.owner)}}},
                  {"budget",
                   {{"limits", limits},
                    {"spent",
                     {{"tokens", run.spent_tokens},
                      {"cost_usd", run.spent_cost_usd},
                      {"attempts", run.spent_attempts},
                      {"wall_ms", run.spent_wall_ms}}}}},
                  {"counts", counts}};
  if (full) report["steps"] = std::move(step_list);
  return report;
}

std::string format_report_table(const ojson& report, const StatusStyle& style) {
  std::size_t id_w = 4;
  std::size_t status_w = 9;  // "cancelled"; "awaiting_approval" widens the column
  for (const auto& s : report["steps"]) {
    id_w = std::max(id_w, s["id"].get<std::string>().size());
    status_w = std::max(status_w, s["status"].get<std::string>().size());
  }
  id_w = std::min<std::size_t>(id_w, 32);
  std::string out = fmt::format("{:<{}}  {:<{}}  {:>3}  {:>8}  {:>8}  {}\n", "STEP", id_w, "STATUS", status_w,
                                "TRY", "TIME", "TOKENS", "REASON");
  for (const auto& s : report["steps"]) {
    std::string reason = s["reason"].get<std::string>();
    if (auto nl = reason.find('\n'); nl != std::string::npos) reason = reason.substr(0, nl);
    // Cut to 100 columns as shown, then without the padding.
    reason = terminal_column(reason, 100);
    reason.erase(reason.find_last_not_of(' ') + 1);
    std::int64_t tokens = s["tokens_in"].get<std::int64_t>() + s["tokens_out"].get<std::int64_t>();
    const std::string& status = s["status"].get_ref<const std::string&>();
    std::string status_text = fmt::format("{:<{}}", status, status_w);
    if (style) status_text = style(status, status_text);
    out += fmt::format("{:<{}}  {}  {:>3}  {:>8}  {:>8}  {}\n", s["id"].get<std::string>(), id_w, status_text,
                       s["attempts"].size(), human_duration(s["duration_ms"].get<std::int64_t>()), tokens,
                       reason);
  }
  return out + format_report_summary(report, style);
}

std::string format_report_summary(const ojson& report, const StatusStyle& style) {
  const auto& run = report["run"];
  const auto& c = report["counts"];
  // A run resumed after a stop, or cancelled after its driver died, was not driven
  // all the time from its start to its end: say for how long it was.
  const auto elapsed = run["elapsed_ms"].get<std::int64_t>();
  const auto driven = report["budget"]["spent"]["wall_ms"].get<std::int64_t>();
  std::string took = human_duration(elapsed);
  if (!run["finished_at"].get<std::string>().empty() && elapsed - driven >= 1000 &&
      human_duration(driven) != took)
    took += fmt::format(" (driven for {})", human_duration(driven));
  std::string out = fmt::format(
      "run {} {}: {} done, {} failed, {} skipped, {} cancelled of {} in {}; tokens {}, cost {}",
      run["id"].get<std::string>(),
      style ? style(run["status"].get<std::string>(), run["status"].get<std::string>())
            : run["status"].get<std::string>(),
      c["done"].get<int>(), c["failed"].get<int>(), c["skipped"].get<int>(), c["cancelled"].get<int>(),
      c["total"].get<int>(), took, report["budget"]["spent"]["tokens"].get<std::int64_t>(),
      dollars(report["budget"]["spent"]["cost_usd"].get<double>()));
  if (int waiting = c.value("awaiting_approval", 0); waiting > 0)
    out += fmt::format(", {} awaiting approval", waiting);
  std::string reason = run["reason"].get<std::string>();
  if (!reason.empty()) out += "\n  " + terminal_text(reason);
  out += "\n";
  return out;
}

Expected<ojson> build_steps_page(Store& store, const std::string& run_id, const StepsPage& page) {
  const ShownRun shown = ORCH_TRY(shown_run(store, run_id));
  const RunRecord& run = shown.run;
  const bool active = shown.active;
  const std::int64_t now = shown.now;
  const Waiting waiting = ORCH_TRY(waiting_attempts(store, run));
  std::vector<StepRecord> steps = ORCH_TRY(store.steps(run_id));
  std::vector<const StepRecord*> matching;
  for (const StepRecord& s : steps)
    if (!page.status || s.status == *page.status) matching.push_back(&s);
  ojson list = ojson::array();
  const auto first = std::min(static_cast<std::size_t>(page.offset), matching.size());
  const auto last = std::min(first + static_cast<std::size_t>(page.limit), matching.size());
  for (std::size_t i = first; i < last; ++i) {
    // Only this page's attempts are read.
    const std::vector<AttemptRecord> attempts = ORCH_TRY(store.attempts(run_id, matching[i]->step_id));
    std::vector<const AttemptRecord*> mine;
    for (const AttemptRecord& a : attempts) mine.push_back(&a);
    list.push_back(step_json(*matching[i], mine, run, active, now, waiting, ReportDetail::Full));
  }
  return ojson{{"run", run.id},
               {"total", matching.size()},
               {"offset", page.offset},
               {"limit", page.limit},
               {"steps", std::move(list)}};
}

Expected<std::vector<ListedRun>> list_runs_fresh(Store& store, std::int64_t now_ms) {
  std::vector<RunRecord> rows = ORCH_TRY(store.list_runs());
  std::vector<ListedRun> out;
  out.reserve(rows.size());
  for (RunRecord& r : rows) {
    ListedRun listed{std::move(r), false};
    if (listed.run.status == RunStatus::Running) {
      // Running when listed but its lock free now: it ended in between (the final
      // status is written before the lock is let go) or a crash orphaned it; its
      // row, read again, tells which.
      listed.active = store.locked(listed.run.id);
      if (!listed.active) {
        auto again = ORCH_TRY(store.find_run(listed.run.id));
        if (again) listed.run = std::move(*again);
      }
      ORCH_TRY(refresh_running_totals(store, listed.run, listed.active, now_ms));
    }
    out.push_back(std::move(listed));
  }
  return out;
}

nlohmann::ordered_json listed_run_json(const ListedRun& listed) {
  const RunRecord& r = listed.run;
  return {{"id", r.id},
          {"name", r.name},
          {"status", run_status_name(r.status)},
          {"reason", r.reason},
          {"plan", r.plan_path},
          {"workspace", r.workspace},
          {"created_at", iso_time(r.created_at)},
          {"finished_at", iso_time(r.finished_at)},
          {"spent_tokens", r.spent_tokens},
          {"spent_cost_usd", r.spent_cost_usd},
          {"spent_attempts", r.spent_attempts},
          {"active", listed.active},
          {"owner", owner_json(r.owner)}};
}

}  // namespace orch
