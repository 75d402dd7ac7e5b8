// engine/otlp_export.h — sending a run's trace to an OpenTelemetry collector.
//
// export_run_trace builds the run's OTLP request from the ledger
// (engine/otlp_trace.h) and POSTs it, as JSON, to the endpoint
// (engine/otlp_config.h), with the endpoint's headers and within its timeout,
// on an HttpClient of its own (libcurl is loaded then, not before: a process
// that exports nothing never loads it). It waits for the answer. Success is a
// 2xx answer whose body reports no rejected spans (OTLP's partialSuccess).
//
// An export is a report of the run, not part of it: callers print its error
// and go on (the run's outcome and exit code are the ledger's). Since the ids
// come from the ledger's names, exporting a run again sends the same spans.
// One thread; it runs an EventLoop of its own, so never call it from inside
// another loop's callback.
#pragma once

#include <functional>
#include <string>

#include "engine/otlp_config.h"
#include "orch/error.h"
#include "orch/store.h"

namespace orch {

// Errors: the run not in the ledger (NotFound), the ledger not readable
// (Store), or the export failed (Io): "HTTP 503: BODY'S FIRST LINE",
// "Connection refused", "timed out after 10000 ms", "the collector rejected 2
// spans: MESSAGE". The message does not name the URL; the caller does.
// `give_up` is asked while it waits (at least once a second, and whenever a
// signal interrupts the wait): true abandons the request (Interrupted).
Expected<void> export_run_trace(Store& store, const std::string& run_id, const OtlpEndpoint& endpoint,
                                const std::function<bool()>& give_up = {});

}  // namespace orch
