#include <array>
#include <utility>

#include "orch/cycle_store.h"
#include "orch/review_store.h"
#include "orch/store.h"
#include "orch/trace_store.h"

namespace orch {

namespace {
template <class E, std::size_t N>
const char* name_of(const std::array<std::pair<E, const char*>, N>& table, E value) {
  for (const auto& [v, n] : table)
    if (v == value) return n;
  return "unknown";
}
template <class E, std::size_t N>
std::optional<E> parse_of(const std::array<std::pair<E, const char*>, N>& table, std::string_view name) {
  for (const auto& [v, n] : table)
    if (name == n) return v;
  return std::nullopt;
}

constexpr std::array<std::pair<RunStatus, const char*>, 8> kRun{{
    {RunStatus::Running, "running"},
    {RunStatus::Succeeded, "succeeded"},
    {RunStatus::Failed, "failed"},
    {RunStatus::Cancelled, "cancelled"},
    {RunStatus::BudgetExhausted, "budget_exhausted"},
    {RunStatus::Escalated, "escalated"},
    {RunStatus::Interrupted, "interrupted"},
    {RunStatus::AwaitingApproval, "awaiting_approval"},
}};
constexpr std::array<std::pair<StepStatus, const char*>, 7> kStep{{
    {StepStatus::Pending, "pending"},
    {StepStatus::Running, "running"},
    {StepStatus::Done, "done"},
    {StepStatus::Failed, "failed"},
    {StepStatus::Skipped, "skipped"},
    {StepStatus::Cancelled, "cancelled"},
    {StepStatus::AwaitingApproval, "awaiting_approval"},
}};
constexpr std::array<std::pair<AttemptStatus, const char*>, 7> kAttempt{{
    {AttemptStatus::Running, "running"},
    {AttemptStatus::Succeeded, "succeeded"},
    {AttemptStatus::Failed, "failed"},
    {AttemptStatus::TimedOut, "timed_out"},
    {AttemptStatus::Cancelled, "cancelled"},
    {AttemptStatus::Interrupted, "interrupted"},
    {AttemptStatus::Stalled, "stalled"},
}};
constexpr std::array<std::pair<OwnerKind, const char*>, 4> kOwner{{
    {OwnerKind::None, ""},
    {OwnerKind::Task, "task"},
    {OwnerKind::Review, "review"},
    {OwnerKind::Cycle, "cycle"},
}};
constexpr std::array<std::pair<Dispatch, const char*>, 2> kDispatch{{
    {Dispatch::Local, ""},
    {Dispatch::Workers, "workers"},
}};
constexpr std::array<std::pair<TraceStatus, const char*>, 4> kTrace{{
    {TraceStatus::Open, "open"},
    {TraceStatus::Done, "done"},
    {TraceStatus::Escalated, "escalated"},
    {TraceStatus::Abandoned, "abandoned"},
}};
constexpr std::array<std::pair<ReviewStatus, const char*>, 6> kReview{{
    {ReviewStatus::Running, "running"},
    {ReviewStatus::Passed, "passed"},
    {ReviewStatus::Failed, "failed"},
    {ReviewStatus::Escalated, "escalated"},
    {ReviewStatus::SpendCap, "spend_cap"},
    {ReviewStatus::Abandoned, "abandoned"},
}};
constexpr std::array<std::pair<CycleStatus, const char*>, 5> kCycle{{
    {CycleStatus::Running, "running"},
    {CycleStatus::Converged, "converged"},
    {CycleStatus::MaxIterations, "max_iterations"},
    {CycleStatus::Budget, "budget"},
    {CycleStatus::Failed, "failed"},
}};
}  // namespace

const char* cycle_status_name(CycleStatus s) {
  return name_of(kCycle, s);
}
std::optional<CycleStatus> parse_cycle_status(std::string_view n) {
  return parse_of(kCycle, n);
}

const char* review_status_name(ReviewStatus s) {
  return name_of(kReview, s);
}
std::optional<ReviewStatus> parse_review_status(std::string_view n) {
  return parse_of(kReview, n);
}

const char* trace_status_name(TraceStatus s) {
  return name_of(kTrace, s);
}
std::optional<TraceStatus> parse_trace_status(std::string_view n) {
  return parse_of(kTrace, n);
}
const char* run_status_name(RunStatus s) {
  return name_of(kRun, s);
}
const char* step_status_name(StepStatus s) {
  return name_of(kStep, s);
}
const char* attempt_status_name(AttemptStatus s) {
  return name_of(kAttempt, s);
}
const char* dispatch_name(Dispatch d) {
  return name_of(kDispatch, d);
}
std::optional<Dispatch> parse_dispatch(std::string_view n) {
  return parse_of(kDispatch, n);
}
const char* owner_kind_name(OwnerKind k) {
  return name_of(kOwner, k);
}
std::optional<OwnerKind> parse_owner_kind(std::string_view n) {
  return parse_of(kOwner, n);
}
std::optional<RunStatus> parse_run_status(std::string_view n) {
  return parse_of(kRun, n);
}
std::optional<StepStatus> parse_step_status(std::string_view n) {
  return parse_of(kStep, n);
}
std::optional<AttemptStatus> parse_attempt_status(std::string_view n) {
  return parse_of(kAttempt, n);
}

}  // namespace orch
