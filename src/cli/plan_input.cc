#include "cli/plan_input.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <expected>
#include <filesystem>
#include <memory>

#include "orch/engine.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"

namespace orch::cli {

PlanInput read_and_validate(const std::string& path, const std::string& workspace,
                            const ExecutorRegistry& executors) {
  PlanInput in;
  if (path == kStdinPlan) say_reading_stdin();
  auto text = read_plan_file(path);
  if (!text) {
    in.readable = false;
    in.read_error = text.error().message;
    return in;
  }
  in.text = std::move(*text);
  LoadResult loaded = parse_plan_from(in.text, path);  // "-": named <stdin>, no folder of its own
  // Every problem at once: the checks of what could be read run even when some
  // fields could not be read, and the two lists are merged in file order.
  in.problems = plan_problems(loaded, validate_options_for(workspace, path, executors));
  in.plan = std::move(loaded.plan);
  return in;
}

PlanInput validate_plan_text(std::string text, const std::string& name, const std::string& workspace,
                             const ExecutorRegistry& executors) {
  PlanInput in;
  in.text = std::move(text);
  LoadResult loaded = parse_plan_from(in.text, name);
  in.problems =
      plan_problems(loaded, validate_options_for(workspace, "", executors));  // the workspace is its folder
  in.plan = std::move(loaded.plan);
  in.plan.source_path.clear();  // no file: a run records no plan path, as for standard input
  return in;
}

void say_reading_stdin() {
  // Typed at a terminal, the plan ends with Ctrl-D; piped in, nothing is said.
  if (isatty(STDIN_FILENO) == 1)
    std::fprintf(stderr,
                 "orch: reading the plan from standard input (end it with Ctrl-D on a line of its own)\n");
}

void print_problems(const Diagnostics& problems) {
  for (const auto& d : problems) std::fprintf(stderr, "%s\n", d.to_string().c_str());
}

}  // namespace orch::cli
