// orch status [RUN_ID] [--json [--results]] [--watch]   and   orch runs [--json]
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "cli/output_style.h"
#include "orch/clock.h"
#include "orch/report.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::cli {

namespace {

// How often a watch that waits for its next redraw checks whether the run ended
// (or whether it was told to stop).
constexpr std::chrono::milliseconds kEndPoll{200};

// A watch stopped by SIGINT, SIGTERM or SIGHUP ends as any interrupted orch does:
// exit 130 (SIGTERM's default death would read as 143). One ignored when orch
// started stays ignored.
volatile std::sig_atomic_t g_watch_stopped = 0;

void on_watch_signal(int) {
  g_watch_stopped = 1;
}

struct StatusArgs {
  std::string run_id;
  std::string store = kDefaultStore;
  bool json = false;
  bool results = false;
  bool watch = false;
  double interval = 1.0;
};

bool is_running(const nlohmann::ordered_json& report) {
  return report["run"]["status"] == "running";
}

std::string header(const nlohmann::ordered_json& r) {
  const auto& run = r["run"];
  std::string driven = run["status"] == "running"
                           ? (run["active"].get<bool>() ? " (active)" : " (no live process: resume it)")
                           : "";
  // A plan with no name leaves no gap; one read from standard input (or built
  // in code) has no file to name.
  const std::string name = run["name"].get<std::string>();
  const std::string plan = run["plan"].get<std::string>();
  return fmt::format("run {}  {}plan {}\nstatus {}{}\n", run["id"].get<std::string>(),
                     name.empty() ? "" : terminal_text(name) + "  ",
                     plan.empty() ? "- (not from a file)" : terminal_text(plan), run["status"].get<std::string>(),
                     driven);
}
}  // namespace

Command add_status(CLI::App& app) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* sub =
      app.add_subcommand("status", "Show a run (default: the newest) from the ledger; safe while it runs.");
  sub->add_option("RUN_ID", args->run_id, "the run to show (default: the newest)")
      ->check(not_empty(std::string(kRunIdWanted) + ", or none for the newest run"));
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv);
  CLI::Option* json =
      sub->add_flag("--json", args->json, "print the run report (schemas/run-report.schema.json)");
  sub->add_flag("--results", args->results,
                "with --json: each step's result too (what ${steps.ID.result} gives its dependents)")
      ->needs(json);
  CLI::Option* watch =
      sub->add_flag("--watch", args->watch, "redraw until the run ends (with --json: one report per line)");
  sub->add_option("--interval", args->interval, "seconds between redraws with --watch (default 1)")
      ->transform(number_above(0))
      ->needs(watch);
  return [args]() -> int {
    auto store = open_ledger(args->store, true);
    if (!store) return report_error(store.error());
    std::string id = args->run_id;
    if (id.empty()) {
      auto latest = latest_run_id((*store)->runs());
      if (!latest) return report_error(latest.error());
      id = *latest;
    }
    if (args->watch) on_stop_signals(on_watch_signal);  // the wait checks the flag
    for (;;) {
      if (g_watch_stopped != 0) return kExitInterrupted;
      auto report = build_run_report((*store)->runs(), id,
                                     args->results ? ReportDetail::WithResults : ReportDetail::Full);
      if (!report) return report_error(report.error());
      // A run marked running whose lock no process holds was orphaned by a crash.
      if (args->json) {
        // Watched, a stream of reports: JSON Lines, one compact report a line.
        std::printf("%s\n", json_text(*report, args->watch ? -1 : 2).c_str());
      } else {
        if (args->watch && stdout_is_tty()) std::printf("\033[H\033[2J");
        std::printf("%s%s", header(*report).c_str(),
                    format_report_table(*report, status_style(stdout)).c_str());
      }
      // Its reader gone (`orch status --watch | head -1`), a watch ends quietly
      // rather than go on until the run does.
      if (std::fflush(stdout) != 0 && args->watch) return kExitSucceeded;
      if (!args->watch || !is_running(*report) || !(*report)["run"]["active"].get<bool>()) {
        return args->watch ? exit_code_for(parse_run_status((*report)["run"]["status"].get<std::string>())
                                               .value_or(RunStatus::Failed))
                           : kExitSucceeded;
      }
      // Until the next redraw, or sooner once the run has ended (a script
      // waiting on --watch gets its answer then, not up to an interval later).
      const auto next = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(
                            static_cast<std::int64_t>(std::clamp(args->interval, 0.01, 86400.0) * 1000));
      for (auto now = std::chrono::steady_clock::now(); now < next; now = std::chrono::steady_clock::now()) {
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(next - now, kEndPoll));
        if (g_watch_stopped != 0) return kExitInterrupted;
        auto row = (*store)->runs().find_run(id);
        if (row && *row && (**row).status != RunStatus::Running) break;
      }
      if (!args->json && !stdout_is_tty()) std::printf("\n");
    }
  };
}

Command add_runs(CLI::App& app) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* sub = app.add_subcommand("runs", "List the runs in the store, newest first.");
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv);
  sub->add_flag("--json", args->json, "print the list as JSON");
  return [args]() -> int {
    auto store = open_ledger(args->store, true);
    if (!store) return report_error(store.error());
    auto runs = list_runs_fresh((*store)->runs(), Clock::system().wall_ms());
    if (!runs) return report_error(runs.error());
    if (args->json) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const ListedRun& listed : *runs) list.push_back(listed_run_json(listed));
      std::printf("%s\n", json_text(list, 2).c_str());
      return kExitSucceeded;
    }
    std::printf("%-21s  %-20s  %-16s  %-24s  %8s  %s\n", "RUN", "STATUS", "NAME", "STARTED", "ATTEMPTS",
                "PLAN");
    const bool color = color_on(stdout);
    for (const ListedRun& listed : *runs) {
      const RunRecord& r = listed.run;
      // A run the ledger says is running but no process drives (its orch was killed).
      std::string status = run_status_name(r.status);
      if (r.status == RunStatus::Running && !listed.active) status += " (no process)";
      status = colored_status(run_status_name(r.status), fmt::format("{:<20}", status), color);
      std::printf("%-21s  %s  %s  %-24s  %8lld  %s\n", r.id.c_str(), status.c_str(),
                  terminal_column(r.name.empty() ? "-" : r.name, 16).c_str(), iso_time(r.created_at).c_str(),
                  static_cast<long long>(r.spent_attempts),
                  r.plan_path.empty() ? "-" : terminal_text(r.plan_path).c_str());
    }
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
