// orch cycle init [FILE]                                   a commented cycle.yaml
// orch cycle run CYCLE.yaml [--max-iterations N] [-j N] [--budget-tokens N] [--dry-run] [--json]
// orch cycle resume RUN [--budget-tokens N] [--json]       go on after kill -9, Ctrl-C, the budget
// orch cycle status [RUN] [--json]                         items by state, stuck items, per-cycle milestones
// orch cycle show RUN [N] [--json]                         a cycle run, or one of its cycles
// orch cycle audit RUN [--json]                            the applied transitions, replayed
// orch cycle list [--json]                                 every cycle run, newest first
// (docs/cycle.md)
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/approval_prompt.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/cycle_report.h"
#include "cli/number_option.h"
#include "flows/cycle_run.h"
#include "orch/clock.h"
#include "util/atomic_file.h"
#include "util/json_text.h"

namespace orch::cli {

namespace {

namespace fs = std::filesystem;

struct CycleArgs {
  std::string file;  // init: where; run: the cycle file
  std::string run_id;
  int cycle = 0;  // show: one cycle
  int max_iterations = 0;
  int jobs = 0;
  std::int64_t budget_tokens = 0;
  bool dry_run = false;
  bool force = false;
  bool json = false;
  std::string store = kDefaultStore;
  std::string workers;
  std::string models;
};

struct Opened {
  std::unique_ptr<Ledger> ledger;
  flows::CycleEnv env;
};

Expected<Opened> open_cycles(const CycleArgs& a, bool must_exist) {
  Opened o;
  o.ledger = ORCH_TRY(open_ledger(a.store, must_exist));
  o.env.store = &o.ledger->runs();
  o.env.cycles = &o.ledger->cycles();
  o.env.now_ms = [] { return Clock::system().wall_ms(); };
  o.env.handle_signals = true;
  o.env.on_note = [](const std::string& line) { std::fprintf(stderr, "orch cycle: %s\n", line.c_str()); };
  o.env.ask_approval = terminal_approval_prompt();
  return o;
}

// The executors of a cycle: its workers and models files, else the workspace's
// .orch/workers.yaml and .orch/models.yaml when they exist.
Expected<std::shared_ptr<ExecutorRegistry>> cycle_executors(const flows::CycleConfig& c, const CycleArgs& a) {
  auto pick = [&](const std::string& flag, const std::string& configured, const char* fallback) {
    if (!flag.empty()) return flag;
    if (!configured.empty()) return configured;
    const fs::path p = c.workspace / fallback;
    return fs::exists(p) ? p.string() : std::string();
  };
  return cli_executors(pick(a.models, c.models_file, kDefaultModels), "",
                       pick(a.workers, c.workers_file, kDefaultWorkers));
}

int print_outcome(const flows::CycleOutcome& out, bool as_json) {
  if (as_json)
    std::printf("%s\n", json_text(out.doc, 2).c_str());
  else
    std::fputs(cycle_summary_text(out.doc).c_str(), stdout);
  if (!out.reason.empty()) std::fprintf(stderr, "orch cycle: %s\n", out.reason.c_str());
  return out.exit_code;
}

int init(const CycleArgs& a) {
  const std::string path = a.file.empty() ? "cycle.yaml" : a.file;
  std::error_code ec;
  if (!a.force && fs::exists(fs::symlink_status(path, ec)))
    return report_error(Error{ErrorCode::InvalidInput,
                              fmt::format("{} exists: not overwritten (--force to replace it)", path)});
  if (auto written = write_file_atomically(path, flows::cycle_init_text()); !written)
    return report_error(written.error());
  std::fprintf(stderr, "orch cycle: wrote %s; edit it, then `orch cycle run %s --dry-run`\n", path.c_str(),
               path.c_str());
  return kExitSucceeded;
}

int run(const CycleArgs& a) {
  auto config = flows::load_cycle_config(a.file);
  if (!config) return report_error(config.error());
  if (a.max_iterations > 0) config->max_iterations = a.max_iterations;
  if (a.jobs > 0) config->max_parallel = a.jobs;
  if (a.budget_tokens > 0) config->budget_tokens = a.budget_tokens;
  if (a.dry_run) {
    auto dry = flows::dry_run_cycle(*config);
    if (!dry) return report_error(dry.error());
    if (a.json)
      std::printf("%s\n", json_text(dry_run_json(*config, *dry), 2).c_str());
    else
      std::fputs(dry_run_text(*config, *dry).c_str(), stdout);
    return kExitSucceeded;
  }
  auto executors = cycle_executors(*config, a);
  if (!executors) return report_error(executors.error());
  auto opened = open_cycles(a, false);
  if (!opened) return report_error(opened.error());
  opened->env.executors = *executors;
  catch_stop_signals();  // and each phase's engine while it runs
  auto outcome = flows::start_cycle_run(opened->env, *config);
  run_has_ended();
  if (!outcome) return report_error(outcome.error());
  return print_outcome(*outcome, a.json);
}

int resume(const CycleArgs& a) {
  auto opened = open_cycles(a, true);
  if (!opened) return report_error(opened.error());
  auto record = opened->env.cycles->find_cycle(a.run_id);
  if (!record) return report_error(record.error());
  if (!*record)
    return report_error(Error{ErrorCode::NotFound, fmt::format("no cycle run '{}' in the ledger", a.run_id)});
  auto config = flows::cycle_config_of(**record);
  if (!config) return report_error(config.error());
  auto executors = cycle_executors(*config, a);
  if (!executors) return report_error(executors.error());
  opened->env.executors = *executors;
  catch_stop_signals();
  auto outcome = flows::resume_cycle_run(
      opened->env, a.run_id,
      a.budget_tokens > 0 ? std::optional<std::int64_t>(a.budget_tokens) : std::nullopt);
  run_has_ended();
  if (!outcome) return report_error(outcome.error());
  return print_outcome(*outcome, a.json);
}

// The run named, or the newest in the ledger.
Expected<CycleRecord> find_record(CycleStore& cycles, const std::string& id) {
  if (id.empty()) {
    auto all = ORCH_TRY(cycles.list_cycles());
    if (all.empty())
      return fail(ErrorCode::NotFound, "no cycle run in the ledger (start one: `orch cycle run CYCLE.yaml`)");
    return all.front();
  }
  auto found = ORCH_TRY(cycles.find_cycle(id));
  if (!found)
    return fail(ErrorCode::NotFound, fmt::format("no cycle run '{}' in the ledger (`orch cycle list`)", id));
  return *found;
}

int report(const CycleArgs& a, const std::string& what) {
  if (what == "list" && !store_may_exist(a.store)) {
    std::printf(a.json ? "[]\n" : "");
    return kExitSucceeded;
  }
  auto opened = open_cycles(a, true);
  if (!opened) return report_error(opened.error());
  CycleStore& cycles = *opened->env.cycles;
  if (what == "list") {
    auto all = cycles.list_cycles();
    if (!all) return report_error(all.error());
    nlohmann::json out = nlohmann::json::array();
    for (const CycleRecord& r : *all) {
      if (a.json)
        out.push_back({{"id", r.id},
                       {"name", r.name},
                       {"status", cycle_status_name(r.status)},
                       {"cycles", r.cycles},
                       {"workspace", r.workspace}});
      else
        std::printf("%-40s %-15s %d cycle%s  %s\n", r.id.c_str(), cycle_status_name(r.status), r.cycles,
                    r.cycles == 1 ? "" : "s", r.name.c_str());
    }
    if (a.json) std::printf("%s\n", json_text(out, 2).c_str());
    return kExitSucceeded;
  }
  auto record = find_record(cycles, a.run_id);
  if (!record) return report_error(record.error());
  Expected<nlohmann::json> doc = std::unexpected(Error{ErrorCode::Internal, ""});
  if (what == "status") doc = cycle_status_json(*record);
  if (what == "show") doc = cycle_show_json(*record, a.cycle);
  if (what == "audit") doc = cycle_audit_json(*record, cycles);
  if (!doc) return report_error(doc.error());
  if (a.json)
    std::printf("%s\n", json_text(*doc, 2).c_str());
  else
    std::fputs(what == "status" ? cycle_status_text(*doc).c_str()
               : what == "show" ? cycle_show_text(*doc).c_str()
                                : cycle_audit_text(*doc).c_str(),
               stdout);
  // An audit that does not replay to the status file is a failure to report.
  if (what == "audit" && !(*doc)["replay"].value("matches", false)) return kExitFailed;
  return kExitSucceeded;
}

void add_store_flags(CLI::App* sub, CycleArgs& a) {
  sub->add_option("--store", a.store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  sub->add_flag("--json", a.json, "print JSON (schemas/cycle-*.schema.json)");
}

}  // namespace

Command add_cycle(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "cycle",
      "Advance the items of a status file through their lifecycle: plan, work (one agent per file, "
      "checked by a gate), review, and a writer that applies only what holds (docs/cycle.md).\n"
      "Exit: 0 every item reached a final state; 1 items stuck, max_iterations reached, or an audit "
      "that does not replay; 2 a bad cycle.yaml or status file, or a run that cannot be resumed; 3 "
      "the budget, or a step awaits approval; 130 interrupted");
  sub->require_subcommand(1);
  auto args = std::make_shared<CycleArgs>();
  std::shared_ptr<std::string> mode = std::make_shared<std::string>();

  auto* init_cmd = sub->add_subcommand("init", "write a commented cycle.yaml to start from");
  init_cmd->add_option("file", args->file, "where (default: cycle.yaml)");
  init_cmd->add_flag("--force", args->force, "replace the file if it exists");
  init_cmd->callback([mode] { *mode = "init"; });

  auto* run_cmd = sub->add_subcommand("run", "start a cycle run of CYCLE.yaml");
  run_cmd->add_option("file", args->file, "the cycle file")->required();
  run_cmd->add_option("--max-iterations", args->max_iterations, "at most N cycles (default: the file's, 10)")
      ->transform(whole_number(1, flows::kCycleMaxIterations));
  run_cmd->add_option("-j,--jobs", args->jobs, "jobs at once (default: the file's max_parallel, 8)")
      ->transform(whole_number(1, flows::kCycleMaxParallel));
  run_cmd
      ->add_option("--budget-tokens", args->budget_tokens,
                   "a token cap over every phase (default: the file's)")
      ->transform(whole_number(1, std::numeric_limits<std::int64_t>::max()));
  run_cmd->add_flag("--dry-run", args->dry_run,
                    "print cycle 1's objectives and jobs; run nothing, record nothing, spend nothing");
  run_cmd->add_option("--workers", args->workers,
                      "workers file (default: the file's, or WORKSPACE/.orch/workers.yaml)");
  run_cmd->add_option("--models", args->models,
                      "models file (default: the file's, or WORKSPACE/.orch/models.yaml)");
  add_store_flags(run_cmd, *args);
  run_cmd->callback([mode] { *mode = "run"; });

  auto* resume_cmd = sub->add_subcommand(
      "resume", "go on with cycle run RUN (after kill -9, Ctrl-C, an approval, the budget)");
  resume_cmd->add_option("run", args->run_id, "the cycle run's id (`orch cycle list`)")->required();
  resume_cmd
      ->add_option("--budget-tokens", args->budget_tokens,
                   "a higher token cap (for a run its budget stopped)")
      ->transform(whole_number(1, std::numeric_limits<std::int64_t>::max()));
  resume_cmd->add_option("--workers", args->workers, "workers file (default: the run's)");
  resume_cmd->add_option("--models", args->models, "models file (default: the run's)");
  add_store_flags(resume_cmd, *args);
  resume_cmd->callback([mode] { *mode = "resume"; });

  auto* status_cmd = sub->add_subcommand("status", "items by state, stuck items, each cycle's milestones");
  status_cmd->add_option("run", args->run_id, "the cycle run (default: the newest)");
  add_store_flags(status_cmd, *args);
  status_cmd->callback([mode] { *mode = "status"; });

  auto* show_cmd = sub->add_subcommand("show", "a cycle run, or one of its cycles");
  show_cmd->add_option("run", args->run_id, "the cycle run")->required();
  show_cmd->add_option("cycle", args->cycle, "one cycle (1, 2, ...)")
      ->transform(whole_number(1, flows::kCycleMaxIterations));
  add_store_flags(show_cmd, *args);
  show_cmd->callback([mode] { *mode = "show"; });

  auto* audit_cmd = sub->add_subcommand(
      "audit", "the transitions a cycle run applied, replayed over its first status file");
  audit_cmd->add_option("run", args->run_id, "the cycle run")->required();
  add_store_flags(audit_cmd, *args);
  audit_cmd->callback([mode] { *mode = "audit"; });

  auto* list_cmd = sub->add_subcommand("list", "every cycle run in the ledger, newest first");
  add_store_flags(list_cmd, *args);
  list_cmd->callback([mode] { *mode = "list"; });

  return [args, mode] {
    if (*mode == "init") return init(*args);
    if (*mode == "run") return run(*args);
    if (*mode == "resume") return resume(*args);
    return report(*args, *mode);
  };
}

}  // namespace orch::cli
