// orch cancel RUN_ID [--wait SECONDS] [--json]
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {
struct CancelArgs {
  std::string run_id;
  std::string store = kDefaultStore;
  double wait = 10;
  bool json = false;
};

// The --json document (schemas/cancel.schema.json): the run as the ledger has it now.
int print_cancel_json(Store& store, const std::string& run_id, RunStatus status) {
  auto run = store.find_run(run_id);
  if (!run) return report_error(run.error());
  const bool stopped = status != RunStatus::Running;
  nlohmann::ordered_json doc = {{"run_id", run_id},
                                {"stopped", stopped},
                                {"status", run_status_name(status)},
                                {"reason", *run ? (**run).reason : std::string()}};
  std::printf("%s\n", json_text(doc, 2).c_str());
  return stopped ? kExitSucceeded : kExitFailed;
}
}  // namespace

Command add_cancel(CLI::App& app) {
  auto args = std::make_shared<CancelArgs>();
  CLI::App* sub = app.add_subcommand("cancel", "Stop a run: its running steps are killed, the rest skipped.");
  sub->add_option("RUN_ID", args->run_id, "the run to stop")->required()->check(not_empty(kRunIdWanted));
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv);
  sub->add_option("--wait", args->wait, "seconds to wait for the driving process to stop it (default 10)")
      ->transform(number_at_least(0));
  sub->add_flag("--json", args->json, "print {run_id, stopped, status, reason} (schemas/cancel.schema.json)");
  return [args]() -> int {
    auto store = open_ledger(args->store, true);
    if (!store) return report_error(store.error());
    auto status = cancel_run(
        (*store)->runs(), args->run_id,
        std::chrono::milliseconds(static_cast<std::int64_t>(std::min(args->wait, 86400.0 * 365) * 1000)));
    if (!status) return report_error(status.error());
    if (args->json) return print_cancel_json((*store)->runs(), args->run_id, *status);
    if (*status == RunStatus::Running) {
      std::printf("run %s: cancel requested; the process driving it has not stopped yet\n",
                  args->run_id.c_str());
      return kExitFailed;
    }
    std::printf("run %s: %s\n", args->run_id.c_str(), run_status_name(*status));
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
