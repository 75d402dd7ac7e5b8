#include "cli/request_plan.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "cli/number_option.h"

namespace orch::cli {

void add_request_plan_flags(CLI::App& sub, RequestPlanArgs& args) {
  sub.add_option("--model", args.model,
                 "model for the planning call (default: the models file's default_model)")
      ->check(not_empty("a model's name (models file)"));
  sub.add_option("--templates", args.templates,
                 "folder of user plan templates (default: .orch/templates if present)")
      ->check(not_empty("the templates folder"));
  sub.add_option("--executor", args.executor,
                 "executor of a single-step plan (default: llm, or llm:MODEL with --model)");
}

Expected<flows::TemplateLibrary> load_request_templates(const RequestPlanArgs& args) {
  std::filesystem::path dir = args.templates.empty() ? std::string(kDefaultTemplates) : args.templates;
  if (!args.templates.empty() && !std::filesystem::is_directory(dir))
    return fail(ErrorCode::NotFound, fmt::format("{}: no such templates folder", args.templates));
  return flows::TemplateLibrary::load(dir);
}

Expected<flows::PlannedRequest> plan_from_cli(const std::string& request, const RequestPlanArgs& args,
                                              const std::shared_ptr<ExecutorRegistry>& executors,
                                              const std::string& workspace,
                                              const std::function<Expected<Store*>()>& store, bool quiet) {
  auto templates = ORCH_TRY(load_request_templates(args));
  flows::PlannerOptions options;
  options.store = store;
  options.executors = executors;
  options.workspace = workspace;
  options.templates = &templates;
  options.model = args.model;
  options.single_step_executor = args.executor;
  options.handle_signals = true;
  auto planned = ORCH_TRY(flows::plan_request(request, options));
  if (!quiet) std::fprintf(stderr, "orch plan: %s\n", planned.summary().c_str());
  return planned;
}

}  // namespace orch::cli
