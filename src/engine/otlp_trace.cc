#include "engine/otlp_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>

namespace orch {

// Named after the file: a unity build puts the engine's files in one unit.
namespace otlp_trace_detail {

using ojson = nlohmann::ordered_json;

// FNV-1a 64 from `basis` over the parts, each followed by a 0 byte so that
// ("ab", "c") and ("a", "bc") differ, then MurmurHash3's finaliser, so that
// names alike (steps "a" and "b", attempts 1 and 2) give ids unalike. A 0
// result (which OTLP reads as "no id") becomes 1.
std::uint64_t id_hash(std::uint64_t basis, std::initializer_list<std::string_view> parts) {
  std::uint64_t h = basis;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ULL;  // the FNV-1a 64 prime
  };
  for (std::string_view part : parts) {
    for (unsigned char c : part) mix(c);
    mix(0);
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h == 0 ? 1 : h;
}

// Distinct offset bases, so the trace id's halves and a span id are unrelated hashes.
constexpr std::uint64_t kTraceHigh = 14695981039346656037ULL;  // FNV-1a 64's own
constexpr std::uint64_t kTraceLow = 0x6f7263682d747261ULL;     // "orch-tra"
constexpr std::uint64_t kSpan = 0x6f7263682d737061ULL;         // "orch-spa"

ojson attribute(std::string_view key, ojson value) {
  return {{"key", key}, {"value", std::move(value)}};
}
ojson text(std::string_view key, std::string_view value) {
  return attribute(key, {{"stringValue", value}});
}
// OTLP's JSON encoding writes 64-bit integers as decimal strings.
ojson integer(std::string_view key, std::int64_t value) {
  return attribute(key, {{"intValue", std::to_string(value)}});
}
ojson real(std::string_view key, double value) {
  return attribute(key, {{"doubleValue", value}});
}

std::string unix_nano(std::int64_t ms) {
  return std::to_string(std::max<std::int64_t>(ms, 0) * 1'000'000);
}

// What spans add up from their attempts.
struct Usage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  double cost_usd = 0;

  void add(const AttemptRecord& a) {
    input_tokens += a.tokens_in;
    output_tokens += a.tokens_out;
    cost_usd += a.cost_usd;
  }
  void put(ojson& attributes) const {
    attributes.push_back(integer("gen_ai.usage.input_tokens", input_tokens));
    attributes.push_back(integer("gen_ai.usage.output_tokens", output_tokens));
    attributes.push_back(real("orch.cost_usd", cost_usd));
  }
};

struct SpanTimes {
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
};

// An attempt still running (or left running by a crash) ends, for its span, at
// `until`: the latest the ledger knows of its run.
SpanTimes attempt_times(const AttemptRecord& a, std::int64_t until) {
  const std::int64_t end = a.finished_at > 0 ? a.finished_at : until;
  return {a.started_at, std::max(end, a.started_at)};
}

ojson span(const std::string& trace_id, const std::string& span_id, const std::string& parent_id,
           std::string_view name, SpanTimes times, ojson attributes, OtlpStatus status,
           const std::string& reason) {
  ojson s = {{"traceId", trace_id}, {"spanId", span_id}};
  if (!parent_id.empty()) s["parentSpanId"] = parent_id;
  s["name"] = name;
  s["kind"] = 1;  // SPAN_KIND_INTERNAL
  s["startTimeUnixNano"] = unix_nano(times.start_ms);
  s["endTimeUnixNano"] = unix_nano(std::max(times.end_ms, times.start_ms));
  s["attributes"] = std::move(attributes);
  ojson st = {{"code", static_cast<int>(status)}};
  if (status == OtlpStatus::Error && !reason.empty()) st["message"] = reason;
  s["status"] = std::move(st);
  return s;
}

ojson attempt_span(const std::string& trace_id, const std::string& step_span, const AttemptRecord& a,
                   std::int64_t until) {
  ojson attrs = ojson::array();
  attrs.push_back(text("orch.step.id", a.step_id));
  attrs.push_back(integer("orch.attempt.number", a.number));
  attrs.push_back(text("orch.attempt.status", attempt_status_name(a.status)));
  if (!a.reason.empty()) attrs.push_back(text("orch.attempt.reason", a.reason));
  if (a.status != AttemptStatus::Running) {
    attrs.push_back(text("orch.attempt.ending", attempt_ending_name(a.ending)));
    if (a.exit_code >= 0) attrs.push_back(integer("orch.attempt.exit_code", a.exit_code));
    if (a.signal > 0) attrs.push_back(integer("orch.attempt.signal", a.signal));
  }
  attrs.push_back(attribute("orch.attempt.counted", {{"boolValue", a.counted}}));
  if (!a.host.empty()) attrs.push_back(text("orch.attempt.host", a.host));
  // The model it called (ledger v15), as OpenTelemetry's GenAI conventions name it.
  if (const auto slash = a.model.find('/'); slash != std::string::npos) {
    attrs.push_back(text("gen_ai.system", a.model.substr(0, slash)));
    attrs.push_back(text("gen_ai.request.model", a.model.substr(slash + 1)));
  }
  Usage usage;
  usage.add(a);
  usage.put(attrs);
  if (a.cache_read_tokens > 0) attrs.push_back(integer("orch.usage.cache_read_tokens", a.cache_read_tokens));
  if (a.cache_write_tokens > 0)
    attrs.push_back(integer("orch.usage.cache_write_tokens", a.cache_write_tokens));
  return span(trace_id, otlp_span_id(a.run_id, a.step_id, a.number), step_span,
              fmt::format("{} attempt {}", a.step_id, a.number), attempt_times(a, until), std::move(attrs),
              otlp_status_of(a.status), a.reason);
}

}  // namespace otlp_trace_detail

std::string otlp_trace_id(std::string_view run_id) {
  using namespace otlp_trace_detail;
  return fmt::format("{:016x}{:016x}", id_hash(kTraceHigh, {run_id}), id_hash(kTraceLow, {run_id}));
}

std::string otlp_span_id(std::string_view run_id, std::string_view step_id, int attempt) {
  using namespace otlp_trace_detail;
  const std::string number = std::to_string(attempt);
  return fmt::format("{:016x}", id_hash(kSpan, {run_id, step_id, number}));
}

OtlpStatus otlp_status_of(RunStatus s) {
  switch (s) {
    case RunStatus::Succeeded:
      return OtlpStatus::Ok;
    case RunStatus::Failed:
    case RunStatus::BudgetExhausted:
    case RunStatus::Escalated:
      return OtlpStatus::Error;
    case RunStatus::Running:
    case RunStatus::Cancelled:
    case RunStatus::Interrupted:
    case RunStatus::AwaitingApproval:
      return OtlpStatus::Unset;
  }
  return OtlpStatus::Unset;
}

OtlpStatus otlp_status_of(StepStatus s) {
  switch (s) {
    case StepStatus::Done:
      return OtlpStatus::Ok;
    case StepStatus::Failed:
      return OtlpStatus::Error;
    case StepStatus::Pending:
    case StepStatus::Running:
    case StepStatus::Skipped:
    case StepStatus::Cancelled:
    case StepStatus::AwaitingApproval:
      return OtlpStatus::Unset;
  }
  return OtlpStatus::Unset;
}

OtlpStatus otlp_status_of(AttemptStatus s) {
  switch (s) {
    case AttemptStatus::Succeeded:
      return OtlpStatus::Ok;
    case AttemptStatus::Failed:
    case AttemptStatus::TimedOut:
    case AttemptStatus::Stalled:
      return OtlpStatus::Error;
    case AttemptStatus::Running:
    case AttemptStatus::Cancelled:
    case AttemptStatus::Interrupted:
      return OtlpStatus::Unset;
  }
  return OtlpStatus::Unset;
}

Expected<nlohmann::ordered_json> build_otlp_trace(Store& store, const std::string& run_id,
                                                  const OtlpResource& resource) {
  using namespace otlp_trace_detail;
  auto found = ORCH_TRY(store.find_run(run_id));
  if (!found) return std::unexpected(store.no_run(run_id));
  const RunRecord& run = *found;
  const std::vector<StepRecord> steps = ORCH_TRY(store.steps(run_id));
  const std::vector<AttemptRecord> attempts = ORCH_TRY(store.attempts(run_id));

  std::map<std::string_view, std::vector<const AttemptRecord*>> by_step;
  std::int64_t latest = std::max({run.finished_at, run.updated_at, run.created_at});
  for (const AttemptRecord& a : attempts) {
    by_step[a.step_id].push_back(&a);
    latest = std::max({latest, a.started_at, a.finished_at});
  }
  // A run still running (or orphaned) ends, for its span, at the last the ledger knows of it.
  const std::int64_t run_end = run.finished_at > 0 ? run.finished_at : latest;

  const std::string trace_id = otlp_trace_id(run_id);
  const std::string run_span = otlp_span_id(run_id);
  ojson spans = ojson::array();
  spans.push_back(nullptr);  // the run's, once its usage is summed
  Usage run_usage;
  for (const StepRecord& step : steps) {
    auto it = by_step.find(step.step_id);
    if (it == by_step.end()) continue;  // never started: no span
    const std::string step_span = otlp_span_id(run_id, step.step_id);
    SpanTimes times{it->second.front()->started_at, 0};
    Usage usage;
    for (const AttemptRecord* a : it->second) {
      const SpanTimes at = attempt_times(*a, run_end);
      times.start_ms = std::min(times.start_ms, at.start_ms);
      times.end_ms = std::max(times.end_ms, at.end_ms);
      usage.add(*a);
    }
    ojson attrs = ojson::array();
    attrs.push_back(text("orch.step.id", step.step_id));
    attrs.push_back(text("orch.step.executor", step.executor));
    attrs.push_back(text("orch.step.status", step_status_name(step.status)));
    if (!step.reason.empty()) attrs.push_back(text("orch.step.reason", step.reason));
    attrs.push_back(integer("orch.step.attempts", static_cast<std::int64_t>(it->second.size())));
    usage.put(attrs);
    spans.push_back(span(trace_id, step_span, run_span, step.step_id, times, std::move(attrs),
                         otlp_status_of(step.status), step.reason));
    for (const AttemptRecord* a : it->second) spans.push_back(attempt_span(trace_id, step_span, *a, run_end));
    run_usage.input_tokens += usage.input_tokens;
    run_usage.output_tokens += usage.output_tokens;
    run_usage.cost_usd += usage.cost_usd;
  }

  ojson attrs = ojson::array();
  attrs.push_back(text("orch.run.id", run.id));
  attrs.push_back(text("orch.run.name", run.name));
  attrs.push_back(text("orch.run.status", run_status_name(run.status)));
  if (!run.reason.empty()) attrs.push_back(text("orch.run.reason", run.reason));
  if (run.exit_code >= 0) attrs.push_back(integer("orch.run.exit_code", run.exit_code));
  attrs.push_back(text("orch.run.workspace", run.workspace));
  attrs.push_back(integer("orch.run.attempts", static_cast<std::int64_t>(attempts.size())));
  run_usage.put(attrs);
  spans[0] = span(trace_id, run_span, "", run.name.empty() ? "orch run" : fmt::format("run {}", run.name),
                  {run.created_at, run_end}, std::move(attrs), otlp_status_of(run.status), run.reason);

  ojson resource_attrs = ojson::array();
  for (const auto& [key, value] : resource.attributes) resource_attrs.push_back(text(key, value));
  ojson scope = {{"scope", {{"name", "orch"}, {"version", ORCH_VERSION}}}, {"spans", std::move(spans)}};
  ojson resource_spans = {{"resource", {{"attributes", std::move(resource_attrs)}}},
                          {"scopeSpans", ojson::array({std::move(scope)})}};
  return ojson{{"resourceSpans", ojson::array({std::move(resource_spans)})}};
}

}  // namespace orch
