#include "cli/trace_export.h"

#include <fmt/format.h>

#include "cli/common.h"
#include "cli/output_style.h"
#include "engine/otlp_config.h"
#include "engine/otlp_export.h"

namespace orch::cli {

namespace {

Expected<void> send_trace(Store& store, const std::string& run_id, const OtlpEndpoint& endpoint) {
  auto sent = export_run_trace(store, run_id, endpoint, stop_asked_after_run);
  if (!sent)
    return fail(sent.error().code, fmt::format("OpenTelemetry export to {} failed: {}", endpoint.shown_url(),
                                               sent.error().message));
  log(LogLevel::Verbose, fmt::format("run {}: trace exported to {}", run_id, endpoint.shown_url()));
  return {};
}

}  // namespace

void export_trace_if_asked(Store& store, const std::string& run_id) {
  auto endpoint = otlp_endpoint_from_env();
  if (!endpoint) {
    log(LogLevel::Error, fmt::format("OpenTelemetry export failed: {}", endpoint.error().message));
    return;
  }
  if (!*endpoint) return;
  if (auto sent = send_trace(store, run_id, **endpoint); !sent) log(LogLevel::Error, sent.error().message);
}

Expected<void> export_trace(Store& store, const std::string& run_id) {
  auto endpoint = ORCH_TRY(otlp_endpoint_from_env());
  if (!endpoint)
    return fail(ErrorCode::InvalidInput,
                "no OpenTelemetry endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT (the collector's base URL, e.g. "
                "http://localhost:4318) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  return send_trace(store, run_id, *endpoint);
}

}  // namespace orch::cli
