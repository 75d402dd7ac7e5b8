// orch approve RUN_ID STEP [--json]
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "orch/clock.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::cli {

namespace {
struct ApproveArgs {
  std::string run_id;
  std::string step;
  std::string store = kDefaultStore;
  bool json = false;
};
}  // namespace

Command add_approve(CLI::App& app) {
  auto args = std::make_shared<ApproveArgs>();
  CLI::App* sub = app.add_subcommand(
      "approve", "Approve a step the risk guard paused (awaiting_approval); `orch resume` then runs it.");
  sub->add_option("RUN_ID", args->run_id, "the paused run")->required()->check(not_empty(kRunIdWanted));
  sub->add_option("STEP", args->step, "the step to approve, by id")->required();
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv);
  sub->add_flag("--json", args->json,
                "print {run_id, step, risk, command, resume} (schemas/approve.schema.json)");
  return [args]() -> int {
    auto store = open_ledger(args->store, true);
    if (!store) return report_error(store.error());
    auto recorded = approve_step((*store)->runs(), args->run_id, args->step, Clock::system().wall_ms());
    if (!recorded) return report_error(recorded.error());
    // A command that works as it is: a ledger other than the default is named.
    std::string resume = "orch resume " + shell_quote(args->run_id);
    if (args->store != kDefaultStore) resume += " --store " + shell_quote(shown_store(args->store));
    if (args->json) {
      // The command as it was recorded: JSON escapes what a terminal would act on.
      nlohmann::ordered_json doc = {{"run_id", args->run_id},
                                    {"step", args->step},
                                    {"risk", recorded->risk},
                                    {"command", recorded->command},
                                    {"resume", resume}};
      std::printf("%s\n", json_text(doc, 2).c_str());
      return kExitSucceeded;
    }
    std::printf("approved step '%s' of run %s (%s risk)\n", args->step.c_str(), args->run_id.c_str(),
                recorded->risk.c_str());
    // The command came from a plan and a step's results: shown with its control
    // characters escaped, so it cannot move the cursor or rewrite what is shown.
    if (!recorded->command.empty()) {
      std::string shown;
      for (char c : terminal_lines(recorded->command))
        shown += c == '\n' ? std::string("\n  ") : std::string(1, c);
      std::printf("  %s\n", shown.c_str());
    }
    std::printf("continue it with: %s\n", resume.c_str());
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
