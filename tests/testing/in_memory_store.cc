#include "testing/in_memory_store.h"

#include <fmt/format.h>

#include <algorithm>

namespace orch::testing {

Expected<void> InMemoryStore::begin() {
  if (before_) return fail(ErrorCode::Store, "in-memory store: a transaction is already open");
  before_ = tables_;
  return {};
}

Expected<void> InMemoryStore::commit() {
  if (!before_) return fail(ErrorCode::Store, "in-memory store: commit with no transaction open");
  before_.reset();
  ++commits_;
  return {};
}

Expected<void> InMemoryStore::rollback() {
  if (!before_) return fail(ErrorCode::Store, "in-memory store: rollback with no transaction open");
  tables_ = std::move(*before_);
  before_.reset();
  return {};
}

RunRecord* InMemoryStore::run_row(const std::string& run_id) {
  for (RunRecord& r : tables_.runs)
    if (r.id == run_id) return &r;
  return nullptr;
}

int InMemoryStore::step_idx(const std::string& run_id, const std::string& step_id) const {
  auto it = tables_.steps.find({run_id, step_id});
  return it == tables_.steps.end() ? -1 : it->second.idx;
}

Expected<void> InMemoryStore::insert_run(const RunRecord& run) {
  if (run_row(run.id)) return fail(ErrorCode::Store, fmt::format("in-memory store: run '{}' exists", run.id));
  tables_.runs.push_back(run);
  return {};
}

Expected<void> InMemoryStore::update_run(const RunRecord& run) {
  RunRecord* row = run_row(run.id);
  if (!row) return fail(ErrorCode::Store, fmt::format("in-memory store: no run '{}'", run.id));
  if (!(row->owner == run.owner))
    return fail(ErrorCode::Store,
                fmt::format("in-memory store: run '{}': a run's owner never changes", run.id));
  *row = run;
  return {};
}

Expected<void> InMemoryStore::insert_plan_version(const PlanVersion& plan) {
  if (!tables_.plans.emplace(std::pair{plan.run_id, plan.version}, plan).second)
    return fail(ErrorCode::Store,
                fmt::format("in-memory store: run '{}' has a plan version {}", plan.run_id, plan.version));
  return {};
}

Expected<void> InMemoryStore::upsert_step(const StepRecord& step) {
  tables_.steps[{step.run_id, step.step_id}] = step;
  return {};
}

Expected<void> InMemoryStore::keep_outputs(const AttemptRecord& a) {
  for (AttemptStream stream : {AttemptStream::Stdout, AttemptStream::Stderr}) {
    const std::string& path = stream == AttemptStream::Stdout ? a.stdout_path : a.stderr_path;
    if (path.empty() || !std::filesystem::exists(path)) continue;
    std::string bytes;
    ORCH_TRY(Store::read_attempt_output(a, stream, [&](std::string_view piece) { bytes += piece; }));
    tables_.outputs[{a.run_id, a.step_id, a.number, static_cast<int>(stream)}] = std::move(bytes);
  }
  return {};
}

Expected<OutputRead> InMemoryStore::read_attempt_output(
    const AttemptRecord& a, AttemptStream stream, const std::function<void(std::string_view)>& sink) const {
  auto kept = tables_.outputs.find({a.run_id, a.step_id, a.number, static_cast<int>(stream)});
  if (kept == tables_.outputs.end()) return Store::read_attempt_output(a, stream, sink);
  sink(kept->second);
  return OutputRead{OutputSource::Ledger, ""};
}

Expected<void> InMemoryStore::insert_attempt(const AttemptRecord& attempt) {
  if (!tables_.attempts.emplace(std::tuple{attempt.run_id, attempt.step_id, attempt.number}, attempt).second)
    return fail(ErrorCode::Store, fmt::format("in-memory store: attempt {} of step '{}' exists",
                                              attempt.number, attempt.step_id));
  // A row that starts and ends in one turn is written once, final.
  if (attempt.status != AttemptStatus::Running) return keep_outputs(attempt);
  return {};
}

Expected<void> InMemoryStore::finish_attempt(const AttemptRecord& attempt) {
  if (attempt.status == AttemptStatus::Running)
    return fail(ErrorCode::Internal, "in-memory store: 'running' is not a final status");
  auto it = tables_.attempts.find({attempt.run_id, attempt.step_id, attempt.number});
  if (it == tables_.attempts.end() || it->second.status != AttemptStatus::Running)
    return fail(ErrorCode::Store, fmt::format("in-memory store: no running attempt {} of step '{}' (finished "
                                              "attempts never change)",
                                              attempt.number, attempt.step_id));
  it->second = attempt;
  return keep_outputs(attempt);
}

Expected<std::int64_t> InMemoryStore::append_event(const EventRecord& event) {
  EventRecord e = event;
  e.seq = tables_.next_seq++;
  tables_.events.push_back(std::move(e));
  return tables_.events.back().seq;
}

Expected<void> InMemoryStore::request_cancel(const std::string& run_id) {
  if (RunRecord* row = run_row(run_id)) row->cancel_requested = true;
  return {};
}

Expected<std::optional<RunRecord>> InMemoryStore::find_run(const std::string& run_id) {
  const RunRecord* row = run_row(run_id);
  return row ? std::optional<RunRecord>(*row) : std::nullopt;
}

Expected<std::vector<RunRecord>> InMemoryStore::list_runs() {
  // Newest first; among runs created in the same millisecond, the later insert first.
  std::vector<RunRecord> out(tables_.runs.rbegin(), tables_.runs.rend());
  std::stable_sort(out.begin(), out.end(),
                   [](const RunRecord& a, const RunRecord& b) { return a.created_at > b.created_at; });
  return out;
}

Expected<std::vector<RunRecord>> InMemoryStore::owned_runs(OwnerKind kind, const std::string& owner_id) {
  std::vector<RunRecord> out;
  for (RunRecord& r : ORCH_TRY(list_runs()))
    if (r.owner.kind == kind && r.owner.id == owner_id) out.push_back(std::move(r));
  return out;
}

Expected<PlanVersion> InMemoryStore::latest_plan(const std::string& run_id) {
  const PlanVersion* latest = nullptr;
  for (const auto& [key, plan] : tables_.plans)
    if (key.first == run_id) latest = &plan;  // versions ascend within a run
  if (!latest) return fail(ErrorCode::NotFound, fmt::format("run '{}' has no plan", run_id));
  return *latest;
}

Expected<std::vector<PlanVersion>> InMemoryStore::plan_versions(const std::string& run_id) {
  std::vector<PlanVersion> out;
  for (const auto& [key, plan] : tables_.plans)
    if (key.first == run_id) out.push_back(plan);  // versions ascend within a run
  return out;
}

Expected<std::vector<StepRecord>> InMemoryStore::steps(const std::string& run_id) {
  std::vector<StepRecord> out;
  for (const auto& [key, step] : tables_.steps)
    if (key.first == run_id) out.push_back(step);
  std::stable_sort(out.begin(), out.end(),
                   [](const StepRecord& a, const StepRecord& b) { return a.idx < b.idx; });
  return out;
}

Expected<std::vector<AttemptRecord>> InMemoryStore::attempts(const std::string& run_id,
                                                             const std::string& step_id) {
  std::vector<AttemptRecord> out;
  for (const auto& [key, a] : tables_.attempts)
    if (std::get<0>(key) == run_id && (step_id.empty() || std::get<1>(key) == step_id)) out.push_back(a);
  // By the step's place in the plan, then its id, then the number (the map's order).
  std::stable_sort(out.begin(), out.end(), [&](const AttemptRecord& a, const AttemptRecord& b) {
    return step_idx(run_id, a.step_id) < step_idx(run_id, b.step_id);
  });
  return out;
}

Expected<std::vector<EventRecord>> InMemoryStore::events(const std::string& run_id, std::int64_t after_seq,
                                                         int limit) {
  std::vector<EventRecord> out;
  for (const EventRecord& e : tables_.events) {
    if (limit >= 0 && static_cast<int>(out.size()) >= limit) break;
    if (e.run_id == run_id && e.seq > after_seq) out.push_back(e);
  }
  return out;
}

Expected<std::vector<EventRecord>> InMemoryStore::events_of_kind(const std::string& run_id,
                                                                 const std::string& kind) {
  std::vector<EventRecord> out;
  for (const EventRecord& e : tables_.events)
    if (e.run_id == run_id && e.kind == kind) out.push_back(e);
  return out;
}

Expected<bool> InMemoryStore::cancel_requested(const std::string& run_id) {
  const RunRecord* row = run_row(run_id);
  return row && row->cancel_requested;
}

Expected<AttemptTotals> InMemoryStore::attempt_totals(const std::string& run_id) {
  AttemptTotals t;
  for (const auto& [key, a] : tables_.attempts) {
    if (std::get<0>(key) != run_id) continue;
    t.tokens += a.tokens_in + a.tokens_out;
    t.cost_usd += a.cost_usd;
    t.counted += a.counted ? 1 : 0;
    t.last_ms = std::max({t.last_ms, a.started_at, a.finished_at});
  }
  return t;
}

}  // namespace orch::testing
