// The routes of `orch serve` as functions of the ledger. See api.h.
#include "serve/api.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "orch/engine.h"
#include "orch/report.h"
#include "util/json_text.h"

namespace orch::serve {

namespace {

// A run's attempts, kept 0 or 1 (a paused run's approvals; an attempt's output).
Expected<AttemptRecord> find_attempt(Store& store, const std::string& run_id, const std::string& step_id,
                                     int number) {
  auto run = ORCH_TRY(store.find_run(run_id));
  if (!run) return std::unexpected(store.no_run(run_id));
  for (AttemptRecord& a : ORCH_TRY(store.attempts(run_id, step_id)))
    if (a.number == number) return std::move(a);
  return fail(ErrorCode::NotFound,
              fmt::format("run {} has no attempt {} of step '{}'", run_id, number, step_id));
}

}  // namespace

Reply json_reply(const nlohmann::ordered_json& body, int status) {
  return Reply{status, "application/json", json_text(body)};
}

Reply error_reply(const Error& e) {
  int status = 500;
  switch (e.code) {
    case ErrorCode::InvalidInput:
      status = 409;
      break;  // what the run's state refuses
    case ErrorCode::NotFound:
      status = 404;
      break;
    case ErrorCode::Busy:
      status = 409;
      break;
    default:
      break;
  }
  return json_reply({{"error", e.message}}, status);
}

Reply Api::runs(const RunsQuery& query) {
  Store& store = ledger_.runs();
  auto listed = list_runs_fresh(store, clock_.wall_ms());
  if (!listed) return error_reply(listed.error());
  nlohmann::ordered_json counts = nlohmann::ordered_json::object();
  std::vector<const ListedRun*> matching;
  for (const ListedRun& r : *listed) {
    const std::string status = run_status_name(r.run.status);
    counts[status] = counts.value(status, 0) + 1;
    if (query.status.empty() || query.status == status) matching.push_back(&r);
  }
  nlohmann::ordered_json page = nlohmann::ordered_json::array();
  const auto first = std::min<std::size_t>(static_cast<std::size_t>(query.offset), matching.size());
  const auto last = std::min<std::size_t>(first + static_cast<std::size_t>(query.limit), matching.size());
  for (std::size_t i = first; i < last; ++i) {
    nlohmann::ordered_json row = listed_run_json(*matching[i]);
    auto by_status = store.step_status_counts(matching[i]->run.id);
    if (!by_status) return error_reply(by_status.error());
    int total = 0, done = 0;
    for (const auto& [status, n] : *by_status) {
      total += n;
      if (status == StepStatus::Done || status == StepStatus::Skipped) done += n;
    }
    row["progress"] = {{"done", done}, {"total", total}};
    row["budget"] = nlohmann::ordered_json::parse(matching[i]->run.budget_json, nullptr, false);
    if (row["budget"].is_discarded()) row["budget"] = nlohmann::ordered_json::object();
    row["spent_wall_ms"] = matching[i]->run.spent_wall_ms;
    page.push_back(std::move(row));
  }
  return json_reply({{"total", matching.size()},
                     {"offset", query.offset},
                     {"limit", query.limit},
                     {"counts", counts},
                     {"runs", page}});
}

Reply Api::run(const std::string& run_id, bool with_steps) {
  auto report =
      build_run_report(ledger_.runs(), run_id, with_steps ? ReportDetail::Full : ReportDetail::Summary);
  if (!report) return error_reply(report.error());
  return json_reply(*report);
}

Reply Api::approvals(const std::string& run_id) {
  Store& store = ledger_.runs();
  auto run = store.find_run(run_id);
  if (!run) return error_reply(run.error());
  if (!*run) return error_reply(store.no_run(run_id));
  auto counts = store.step_status_counts(run_id);
  if (!counts) return error_reply(counts.error());
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!counts->contains(StepStatus::AwaitingApproval)) return json_reply(out);
  auto requests = store.events_of_kind(run_id, "approval_requested");
  if (!requests) return error_reply(requests.error());
  std::map<std::string, nlohmann::ordered_json> latest;  // the last request of each step
  for (const EventRecord& e : *requests) {
    auto data = nlohmann::ordered_json::parse(e.data_json, nullptr, false);
    if (!data.is_object()) continue;
    latest[e.step_id] = {{"step", e.step_id},
                         {"risk", data.value("risk", "")},
                         {"command", data.value("command", "")},
                         {"requested_at", iso_time(e.ts)}};
  }
  for (auto& [step_id, request] : latest) {
    auto step = store.find_step(run_id, step_id);
    if (!step) return error_reply(step.error());
    if (!*step || (*step)->status != StepStatus::AwaitingApproval) continue;
    request["reason"] = (*step)->reason;
    out.push_back(std::move(request));
  }
  return json_reply(out);
}

Reply Api::plans(const std::string& run_id) {
  Store& store = ledger_.runs();
  auto run = store.find_run(run_id);
  if (!run) return error_reply(run.error());
  if (!*run) return error_reply(store.no_run(run_id));
  auto versions = store.plan_versions(run_id);
  if (!versions) return error_reply(versions.error());
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const PlanVersion& p : *versions)
    out.push_back(
        {{"version", p.version}, {"path", p.path}, {"created_at", iso_time(p.created_at)}, {"text", p.text}});
  return json_reply(out);
}

Reply Api::steps(const std::string& run_id, const StepsPage& page) {
  auto steps = build_steps_page(ledger_.runs(), run_id, page);
  if (!steps) return error_reply(steps.error());
  return json_reply(*steps);
}

Expected<std::vector<EventRecord>> Api::events_after(const std::string& run_id, std::int64_t after,
                                                     int limit) {
  Store& store = ledger_.runs();
  auto run = ORCH_TRY(store.find_run(run_id));
  if (!run) return std::unexpected(store.no_run(run_id));
  return store.events(run_id, after, limit);
}

Reply Api::events(const std::string& run_id, std::int64_t after, int limit) {
  auto events = events_after(run_id, after, limit);
  if (!events) return error_reply(events.error());
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  std::int64_t last = after;
  for (const EventRecord& e : *events) {
    auto data = nlohmann::ordered_json::parse(e.data_json, nullptr, false);
    list.push_back({{"seq", e.seq},
                    {"ts", iso_time(e.ts)},
                    {"kind", e.kind},
                    {"step", e.step_id},
                    {"attempt", e.attempt},
                    {"data", data.is_discarded() ? nlohmann::ordered_json(e.data_json) : data}});
    last = e.seq;
  }
  return json_reply({{"events", list}, {"last_seq", last}});
}

Reply Api::output(const std::string& run_id, const std::string& step_id, int attempt,
                  const std::string& stream, std::int64_t tail) {
  if (stream != "stdout" && stream != "stderr")
    return json_reply({{"error", fmt::format("stream '{}': use stdout or stderr", stream)}}, 400);
  Store& store = ledger_.runs();
  auto a = find_attempt(store, run_id, step_id, attempt);
  if (!a) return error_reply(a.error());
  // The tail only: a long output is read through, keeping its last `tail` bytes.
  std::string kept;
  std::int64_t bytes = 0;
  const auto cap = static_cast<std::size_t>(tail);
  auto read = store.read_attempt_output(
      *a, stream == "stdout" ? AttemptStream::Stdout : AttemptStream::Stderr, [&](std::string_view piece) {
        bytes += static_cast<std::int64_t>(piece.size());
        kept.append(piece);
        if (kept.size() > 2 * cap + 65536) kept.erase(0, kept.size() - cap);
      });
  if (!read) return error_reply(read.error());
  if (kept.size() > cap) kept.erase(0, kept.size() - cap);
  const bool truncated = stream == "stdout" ? a->stdout_truncated : a->stderr_truncated;
  return json_reply({{"stream", stream},
                     {"bytes", bytes},
                     {"shown_from", bytes - static_cast<std::int64_t>(kept.size())},
                     {"truncated", truncated},
                     {"running", a->status == AttemptStatus::Running},
                     {"text", kept}});
}

Reply Api::approve(const std::string& run_id, const std::string& step_id) {
  auto done = approve_step(ledger_.runs(), run_id, step_id, clock_.wall_ms());
  if (!done) return error_reply(done.error());
  return json_reply(
      {{"approved", step_id}, {"run", run_id}, {"risk", done->risk}, {"command", done->command}});
}

Reply Api::deny(const std::string& run_id, const std::string& step_id) {
  Store& store = ledger_.runs();
  // As approve: only a step that waits for its approval is denied.
  auto step = store.find_step(run_id, step_id);
  if (!step) return error_reply(step.error());
  if (!*step) {
    auto run = store.find_run(run_id);
    if (run && !*run) return error_reply(store.no_run(run_id));
    return json_reply({{"error", fmt::format("run {} has no step '{}'", run_id, step_id)}}, 404);
  }
  if ((*step)->status != StepStatus::AwaitingApproval)
    return json_reply({{"error", fmt::format("step '{}' of run {} is not awaiting approval (it is {})",
                                             step_id, run_id, step_status_name((*step)->status))}},
                      409);
  // A denial is recorded, then the run is cancelled: nothing of it goes on.
  nlohmann::json data = {{"by", "orch serve"}, {"pid", getpid()}};
  if (auto began = store.begin(); !began) return error_reply(began.error());
  auto appended = store.append_event(
      EventRecord{0, run_id, clock_.wall_ms(), "step_denied", step_id, 0, json_text(data)});
  if (!appended) {
    (void)store.rollback();
    return error_reply(appended.error());
  }
  if (auto committed = store.commit(); !committed) return error_reply(committed.error());
  auto status = cancel_run(store, run_id, std::chrono::milliseconds(0));
  if (!status) return error_reply(status.error());
  return json_reply({{"denied", step_id}, {"run", run_id}, {"status", run_status_name(*status)}});
}

Reply Api::cancel(const std::string& run_id) {
  auto status = cancel_run(ledger_.runs(), run_id, std::chrono::milliseconds(0));
  if (!status) return error_reply(status.error());
  return json_reply({{"run", run_id}, {"status", run_status_name(*status)}});
}

}  // namespace orch::serve
