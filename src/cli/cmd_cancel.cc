// orch cancel RUN_ID
#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"

namespace orch::cli {

namespace {
struct CancelArgs {
  std::string run_id;
  std::string store = kDefaultStore;
  double wait = 10;
};
}  // namespace

Command add_cancel(CLI::App& app) {
  auto args = std::make_shared<CancelArgs>();
  CLI::App* sub = app.add_subcommand("cancel", "Stop a run: its running steps are killed, the rest skipped.");
  sub->add_option("RUN_ID", args->run_id, "the run to stop")->required()->check(not_empty(kRunIdWanted));
  sub->add_option("--store", args->store, "ledger database (default: .orch/orch.db)");
  sub->add_option("--wait", args->wait, "seconds to wait for the driving process to stop it (default 10)")
      ->transform(number_at_least(0));
  return [args]() -> int {
    auto store = open_store(args->store, true);
    if (!store) return report_error(store.error());
    auto status = cancel_run(
        **store, args->run_id,
        std::chrono::milliseconds(static_cast<std::int64_t>(std::min(args->wait, 86400.0 * 365) * 1000)));
    if (!status) return report_error(status.error());
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
