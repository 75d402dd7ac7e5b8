// cli/trace_export.h — a run's OpenTelemetry trace, sent when the environment asks for one.
//
// `orch run` and `orch resume` call export_trace_if_asked once the run has
// ended and its report is printed: with OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, the run's spans are POSTed to the
// collector (engine/otlp_export.h, docs/serve.md "OpenTelemetry"); without,
// nothing happens and nothing is loaded. A failure is one line on stderr,
// "orch: OpenTelemetry export to URL failed: WHY", and changes nothing else:
// the run's exit code is the ledger's. A stop signal (Ctrl-C) abandons it.
#pragma once

#include <string>

#include "orch/error.h"
#include "orch/store.h"

namespace orch::cli {

void export_trace_if_asked(Store& store, const std::string& run_id);

// The export of `orch export-otlp`: an error when no endpoint is set, or
// when it fails (its message says where to and why).
Expected<void> export_trace(Store& store, const std::string& run_id);

}  // namespace orch::cli
