// engine/otlp_config.h — where, and how, a run's trace is exported: the OTEL_* environment.
//
// OpenTelemetry's standard variables (the OTLP exporter's and the SDK's
// configuration, as every OpenTelemetry SDK reads them), the ones orch uses:
//   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  the URL the trace is POSTed to, as it is
//   OTEL_EXPORTER_OTLP_ENDPOINT         else this base URL + "/v1/traces"
//   OTEL_EXPORTER_OTLP_[TRACES_]HEADERS extra request headers: "k=v,k2=v2", each
//                                       key and value percent-decoded, trimmed
//   OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT milliseconds for the whole request
//                                       (default 10000, the specification's)
//   OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL only http/json is spoken; http/protobuf
//                                       is taken too (an OTLP/HTTP receiver takes
//                                       either on the same path); grpc is refused
//   OTEL_SERVICE_NAME                   the resource's service.name (default "orch")
//   OTEL_RESOURCE_ATTRIBUTES            more resource attributes, "k=v,..."
//   OTEL_SDK_DISABLED=true              no export
// The TRACES_ variant of a variable wins over the general one. An empty value
// counts as not set. Neither endpoint set: no export, and nothing more is read.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/otlp_trace.h"
#include "orch/error.h"

namespace orch {

struct OtlpEndpoint {
  std::string url;  // http(s)://HOST:PORT/v1/traces
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout{10'000};
  OtlpResource resource;

  // The URL as messages show it: without a user or password it may carry.
  std::string shown_url() const;
};

// A variable's value; nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// getenv.
std::optional<std::string> process_env(const char* name);

// nullopt: no endpoint set, or the SDK disabled: nothing to export. An error
// (InvalidInput) names the variable that is wrong and how: "OTEL_EXPORTER_OTLP_HEADERS:
// 'x' is not KEY=VALUE", a timeout that is no whole number of milliseconds, a
// protocol orch does not speak.
Expected<std::optional<OtlpEndpoint>> otlp_endpoint_from_env(const EnvLookup& env = process_env);

// A "k=v,k2=v2" list (W3C Baggage's form, as OTEL_EXPORTER_OTLP_HEADERS and
// OTEL_RESOURCE_ATTRIBUTES write it): keys and values percent-decoded and
// trimmed of blanks, empty members skipped. `variable` names it in errors.
Expected<std::vector<std::pair<std::string, std::string>>> parse_otel_key_values(const std::string& text,
                                                                                 const char* variable);

}  // namespace orch
