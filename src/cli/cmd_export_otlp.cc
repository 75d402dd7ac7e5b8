// orch export-otlp RUN_ID [--store PATH|URL]
//
// Sends a run's trace to the OpenTelemetry collector the OTEL_* environment
// names, as `orch run` and `orch resume` do when the run ends (cli/trace_export.h):
// for a run that ended while no collector listened, or to send it to another.
// The spans are read from the ledger and their ids derived from its names, so
// sending a run again gives the collector the same spans.
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "cli/trace_export.h"

namespace orch::cli {

namespace {
struct ExportOtlpArgs {
  std::string run_id;
  std::string store = kDefaultStore;
};
}  // namespace

Command add_export_otlp(CLI::App& app) {
  auto args = std::make_shared<ExportOtlpArgs>();
  CLI::App* sub = app.add_subcommand(
      "export-otlp",
      "Send a run's trace (a span per run, step and attempt) to the OpenTelemetry collector at "
      "OTEL_EXPORTER_OTLP_ENDPOINT.");
  sub->add_option("RUN_ID", args->run_id, "the run to send")->required()->check(not_empty(kRunIdWanted));
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  return [args]() -> int {
    auto ledger = open_ledger(args->store, true);
    if (!ledger) return report_error(ledger.error());
    catch_stop_signals();
    run_has_ended();  // a stop signal abandons the request (stop_asked_after_run)
    if (auto sent = export_trace((*ledger)->runs(), args->run_id); !sent) return report_error(sent.error());
    std::printf("run %s: trace sent\n", args->run_id.c_str());
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
