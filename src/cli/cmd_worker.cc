// orch worker --store URL ... and orch workers --store URL [--json] [--all]
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "cli/output_style.h"
#include "cli/workers_dispatch.h"
#include "distrib/work_queue.h"
#include "distrib/worker.h"
#include "orch/postgres_store.h"
#include "postgres/pg_connection.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {

struct WorkerArgs {
  std::string store;
  int slots = 0;  // 0: one per CPU
  std::string labels;
  std::string workdir = ".orch/worker";
  std::string name;
  double lease_s = 30;
  double poll_s = 1;
  bool no_drive = false;
  std::string models;
  std::string registry;
  std::string workers;
  // orch workers
  bool json = false;
  bool all = false;
};

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// The store must be a PostgreSQL ledger: workers share it.
Expected<void> needs_postgres(const std::string& store, const char* command) {
  if (store.empty())
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("{} needs --store postgresql://... (or ORCH_STORE): the ledger workers share", command));
  if (!is_postgres_url(store))
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("{} needs a PostgreSQL ledger (--store postgresql://...); {} is a SQLite file, which "
                    "only the machine that has it can use",
                    command, shown_store(store)));
  return {};
}

int run_worker_command(const WorkerArgs& args) {
  if (auto ok = needs_postgres(args.store, "orch worker"); !ok) return report_error(ok.error());
  auto labels = distrib::parse_labels(args.labels);
  if (!labels) return report_error(labels.error());
  auto executors = cli_executors(args.models, args.registry, args.workers);
  if (!executors) return report_error(executors.error());
  // Makes the ledger's tables if this worker is the first to reach it.
  if (auto store = open_postgres_store(args.store, std::filesystem::path(args.workdir) / "store"); !store)
    return report_error(store.error());
  distrib::WorkerOptions o;
  o.url = args.store;
  o.host = host_name();
  o.name = args.name.empty() ? fmt::format("{}-{}", o.host, getpid()) : args.name;
  o.slots = args.slots > 0 ? args.slots : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.labels = std::move(*labels);
  std::error_code ec;
  o.workdir = std::filesystem::absolute(args.workdir, ec);
  o.lease = std::chrono::milliseconds(static_cast<std::int64_t>(args.lease_s * 1000));
  o.poll_interval = std::chrono::milliseconds(static_cast<std::int64_t>(args.poll_s * 1000));
  if (!args.no_drive) {
    o.orch_binary = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!args.models.empty()) o.resume_args.insert(o.resume_args.end(), {"--models", args.models});
    if (!args.registry.empty()) o.resume_args.insert(o.resume_args.end(), {"--registry", args.registry});
    if (!args.workers.empty()) o.resume_args.insert(o.resume_args.end(), {"--workers", args.workers});
  }
  o.note = [](const std::string& text) { log(LogLevel::Note, text); };
  if (auto r = distrib::run_worker(o, *executors); !r) return report_error(r.error());
  return kExitSucceeded;
}

std::string ago(std::int64_t now_ms, std::int64_t then_ms) {
  if (then_ms <= 0) return "-";
  return fmt::format("{:.1f}s ago", static_cast<double>(now_ms - then_ms) / 1000.0);
}

int list_workers(const WorkerArgs& args) {
  if (auto ok = needs_postgres(args.store, "orch workers"); !ok) return report_error(ok.error());
  auto conn = detail::PgConnection::open(args.store);
  if (!conn) return report_error(conn.error());
  auto exists = postgres_ledger_exists(args.store);
  if (!exists) return report_error(exists.error());
  std::vector<distrib::WorkerRow> rows;
  if (*exists) {
    distrib::WorkQueue queue(*conn);
    auto listed = queue.workers();
    if (!listed) return report_error(listed.error());
    for (auto& w : *listed)
      if (args.all || w.live) rows.push_back(std::move(w));
  }
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  if (args.json) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::array();
    for (const auto& w : rows) {
      nlohmann::ordered_json running = nlohmann::ordered_json::array();
      for (const auto& k : w.running)
        running.push_back({{"run_id", k.run_id}, {"step_id", k.step_id}, {"attempt", k.attempt}});
      doc.push_back({{"name", w.name},
                     {"host", w.host},
                     {"pid", w.pid},
                     {"slots", w.slots},
                     {"labels", w.labels},
                     {"live", w.live},
                     {"lease_ms", w.lease_ms},
                     {"started_at", w.started_at},
                     {"heartbeat_at", w.heartbeat_at},
                     {"stopped_at", w.stopped_at},
                     {"running", std::move(running)}});
    }
    std::printf("%s\n", json_text(doc, 2).c_str());
    return kExitSucceeded;
  }
  if (rows.empty()) {
    std::printf("no %sworkers\n", args.all ? "" : "live ");
    return kExitSucceeded;
  }
  std::printf("%-24s %-16s %7s %5s %-14s %-8s %-12s %s\n", "NAME", "HOST", "PID", "SLOTS", "LABELS", "STATE",
              "HEARTBEAT", "RUNNING");
  for (const auto& w : rows) {
    std::string running;
    for (const auto& k : w.running)
      running += fmt::format("{}{}/{}#{}", running.empty() ? "" : " ", k.run_id, k.step_id, k.attempt);
    const char* state = w.live ? "live" : w.stopped_at > 0 ? "stopped" : "gone";
    std::printf("%-24s %-16s %7d %5d %-14s %-8s %-12s %s\n", w.name.c_str(), w.host.c_str(), w.pid, w.slots,
                fmt::format("{}", fmt::join(w.labels, ",")).c_str(), state, ago(now, w.heartbeat_at).c_str(),
                running.empty() ? "-" : running.c_str());
  }
  return kExitSucceeded;
}

}  // namespace

Command add_worker(CLI::App& app) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* sub = app.add_subcommand(
      "worker", "Run steps of runs executed by workers: claim them from a PostgreSQL ledger, run, report.");
  sub->add_option("--store", args->store, "the PostgreSQL ledger (postgresql://...)")
      ->envname(kStoreEnv)
      ->check(not_empty("a postgresql:// URL"));
  sub->add_option("--slots", args->slots, "steps run at once (default: one per CPU)")
      ->transform(whole_number(1));
  sub->add_option("--labels", args->labels, "what this worker offers, for steps' runs-on (e.g. gpu,linux)");
  sub->add_option("--workdir", args->workdir,
                  "folder for the attempts' logs while they run and the drivers' logs (default .orch/worker)")
      ->check(not_empty("a folder"));
  sub->add_option("--name", args->name, "this worker's name, unique among live workers (default HOST-PID)")
      ->check(not_empty("a name"));
  sub->add_option("--lease-s", args->lease_s,
                  "seconds a claimed step stays this worker's without a heartbeat (default 30)")
      ->transform(number_above(0.2));
  sub->add_option("--poll-s", args->poll_s,
                  "seconds between looks at the queue when no notification came (default 1)")
      ->transform(number_above(0.01));
  sub->add_flag("--no-drive", args->no_drive, "never start a driver (orch resume) for a run that has none");
  add_executor_file_flags(*sub, args->models, args->registry, args->workers);
  return [args]() -> int { return run_worker_command(*args); };
}

Command add_workers(CLI::App& app) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* sub =
      app.add_subcommand("workers", "List the live workers of a PostgreSQL ledger and what they run.");
  sub->add_option("--store", args->store, "the PostgreSQL ledger (postgresql://...)")
      ->envname(kStoreEnv)
      ->check(not_empty("a postgresql:// URL"));
  sub->add_flag("--all", args->all, "also workers that stopped or stopped heartbeating");
  sub->add_flag("--json", args->json, "print the workers as JSON (schemas/workers.schema.json)");
  return [args]() -> int { return list_workers(*args); };
}

}  // namespace orch::cli
