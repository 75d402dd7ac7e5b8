// Using liborch from C++: build a plan in code, validate it, run it through a
// ledger, and read the report — no CLI involved.
//
//   build/orch_embed_example [WORKSPACE]
#include <cstdio>
#include <filesystem>

#include "orch/engine.h"
#include "orch/report.h"
#include "orch/validate.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path workspace = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "orch-embed";
  fs::create_directories(workspace);

  orch::Plan plan;
  plan.name = "embedded";
  orch::Step count;
  count.id = "count";
  count.run = {"sh", "-c", "ls / | wc -l"};
  orch::Postcondition nonempty;
  nonempty.kind = orch::PostKind::ResultNonempty;
  count.post = {nonempty};
  orch::Step say;
  say.id = "say";
  say.index = 1;
  say.deps = {"count"};
  say.executor = "builtin:echo";
  say.inputs["text"] = "the root folder has ${steps.count.result} entries";
  plan.steps = {count, say};

  auto executors = std::make_shared<orch::ExecutorRegistry>(orch::ExecutorRegistry::with_builtins());
  orch::Diagnostics problems = orch::validate_plan(plan, orch::validate_options_for(workspace, "", *executors));
  for (const auto& d : problems) std::fprintf(stderr, "%s\n", d.to_string().c_str());
  if (!problems.empty()) return 2;

  auto store = orch::open_sqlite_store(workspace / ".orch" / "orch.db");
  if (!store) {
    std::fprintf(stderr, "%s\n", store.error().message.c_str());
    return 1;
  }
  orch::EngineOptions options;
  options.workspace = workspace;
  options.executors = executors;
  orch::Engine engine(**store, options);
  auto outcome = engine.run(plan, "# built in code by examples/embed.cc\n");
  if (!outcome) {
    std::fprintf(stderr, "%s\n", outcome.error().message.c_str());
    return 1;
  }
  auto report = orch::build_run_report(**store, outcome->run_id);
  if (report) std::printf("%s", orch::format_report_table(*report).c_str());
  auto steps = (*store)->steps(outcome->run_id);
  if (steps) {
    for (const auto& s : *steps)
      if (s.step_id == "say") std::printf("say: %s\n", s.result.c_str());
  }
  return outcome->exit_code();
}
