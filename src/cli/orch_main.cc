#include "cli/orch_main.h"

#include <csignal>
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "orch/engine.h"

namespace orch {

namespace {
constexpr const char* kFooter = R"(
Exit codes:
  0    succeeded
  1    failed (a step failed, a review ended REVISE/BLOCK/INCOMPLETE, or orch could not
       write its ledger)
  2    invalid input or usage (bad plan, unknown run, run busy)
  3    needs a human: awaiting approval (`orch approve RUN STEP`, then resume), escalated,
       an ambiguous request (`orch task`: the question is printed), or a review that
       escalated a finding, reached its spend cap or was not confirmed
  4    budget exhausted
  130  interrupted or cancelled (resumable with `orch resume RUN_ID`)

Documentation: docs/cli.md, docs/plan-format.md, docs/store.md, docs/models.md,
docs/workers.md, docs/tools.md, docs/planner.md, docs/chains.md, docs/task.md,
docs/routing.md, docs/memory.md, docs/review.md)";
}  // namespace

int orch_main(int argc, char** argv) {
  // A closed stdout (orch status | head) must not kill orch mid-transaction.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"orch — a durable, verifiable orchestrator for AI-agent and tool workflows.\n"
               "Runs a plan of steps through a ledger, checks every step against its postconditions,\n"
               "retries with the reason it failed, enforces budgets, and resumes after a crash.",
               "orch"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("orch ") + ORCH_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, cli::Command> commands;
  auto add = [&](cli::Command (*fn)(CLI::App&)) {
    std::size_t before = app.get_subcommands({}).size();
    cli::Command c = fn(app);
    commands[app.get_subcommands({})[before]] = std::move(c);
  };
  add(cli::add_validate);
  add(cli::add_run);
  add(cli::add_resume);
  add(cli::add_status);
  add(cli::add_runs);
  add(cli::add_logs);
  add(cli::add_cancel);
  add(cli::add_plan);
  add(cli::add_approve);
  add(cli::add_chain);
  add(cli::add_task);
  add(cli::add_route);
  add(cli::add_budget_check);
  add(cli::add_similarity);
  add(cli::add_memory);
  add(cli::add_review);
  for (auto& [sub, _] : commands) sub->footer(kFooter);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "orch: %s\nRun `orch --help` (or `orch COMMAND --help`) for usage.\n", e.what());
    return kExitInvalid;
  }
  for (auto& [sub, command] : commands)
    if (sub->parsed()) return command();
  return kExitInvalid;
}

}  // namespace orch
