// engine/otlp_trace.h — a run as an OpenTelemetry trace: the OTLP/HTTP JSON body.
//
// build_otlp_trace reads one run from the ledger (find_run, steps, attempts —
// never an engine's memory, so a run exported after a crash, or by `orch
// export-otlp` in another process, is the same trace) and gives the
// ExportTraceServiceRequest of OTLP's JSON encoding
// (opentelemetry-proto, trace/v1/trace_service.proto):
//
//   resourceSpans[0]
//     resource.attributes  service.name, service.version, the user's own
//     scopeSpans[0]
//       scope {name: "orch", version}
//       spans
//         the run            root span: created_at .. finished_at
//         one per step       child of the run; first attempt's start .. last
//                            attempt's end (a step never started has no span)
//         one per attempt    child of its step; started_at .. finished_at
//
// Ids are derived from the ledger's names alone (otlp_trace_id, otlp_span_id),
// so exporting a run twice sends the same spans, which a backend takes as one.
// Tokens and cost are span attributes under the OpenTelemetry GenAI names
// (gen_ai.usage.input_tokens, gen_ai.usage.output_tokens) and orch.cost_usd; a
// run's and a step's are the sums of their attempts'. Span status: OK for a
// succeeded run, done step or succeeded attempt; ERROR with the reason for a
// failed one (status failed, budget_exhausted, escalated, timed_out, stalled);
// UNSET for the rest (cancelled, interrupted, awaiting approval, running).
// Strings are the ledger's bytes: dump the body with json_text (util/json_text.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "orch/error.h"
#include "orch/store.h"

namespace orch {

// Who sends the trace: the resource's attributes, in order. service.name comes
// first (OTEL_SERVICE_NAME, else "orch").
struct OtlpResource {
  std::vector<std::pair<std::string, std::string>> attributes = {{"service.name", "orch"}};
};

// 16 bytes as 32 lower-case hex digits, from the run's id: never all zero.
std::string otlp_trace_id(std::string_view run_id);
// 8 bytes as 16 hex digits: the run's span (step "" and attempt 0), a step's
// (attempt 0) or an attempt's. Never all zero.
std::string otlp_span_id(std::string_view run_id, std::string_view step_id = {}, int attempt = 0);

// OTLP's span status codes (trace.proto, Status.StatusCode).
enum class OtlpStatus { Unset = 0, Ok = 1, Error = 2 };
OtlpStatus otlp_status_of(RunStatus s);
OtlpStatus otlp_status_of(StepStatus s);
OtlpStatus otlp_status_of(AttemptStatus s);

// The request for run `run_id` (NotFound when the ledger has no such run).
Expected<nlohmann::ordered_json> build_otlp_trace(Store& store, const std::string& run_id,
                                                  const OtlpResource& resource = {});

}  // namespace orch
