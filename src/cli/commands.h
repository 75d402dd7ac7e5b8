// cli/commands.h — one function per subcommand: registers its flags on the CLI11
// app and returns the callback that runs it (returning the exit code).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace orch::cli {

using Command = std::function<int()>;

Command add_validate(CLI::App& app);
Command add_run(CLI::App& app);
Command add_resume(CLI::App& app);
Command add_status(CLI::App& app);
Command add_runs(CLI::App& app);
Command add_logs(CLI::App& app);
Command add_events(CLI::App& app);
Command add_cancel(CLI::App& app);
Command add_plan(CLI::App& app);
Command add_approve(CLI::App& app);
Command add_chain(CLI::App& app);
Command add_task(CLI::App& app);
Command add_route(CLI::App& app);
Command add_budget_check(CLI::App& app);
Command add_similarity(CLI::App& app);
Command add_memory(CLI::App& app);
Command add_review(CLI::App& app);
Command add_cycle(CLI::App& app);
Command add_worker(CLI::App& app);
Command add_workers(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_mcp(CLI::App& app);
Command add_export_otlp(CLI::App& app);
// Needs the whole tree: orch_main builds every command when this one is asked for.
Command add_tools(CLI::App& app);
Command add_completion(CLI::App& app);

}  // namespace orch::cli
