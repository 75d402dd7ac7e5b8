// orch route "<request>" [--json] [--dry-run] [--registry FILE] [--workspace DIR]
// orch budget-check --intent TYPE --input TEXT|- [--json] [--workspace DIR]
// A request's type, domain, tool, budget and classification; seed 004's budget
// allocation (docs/routing.md). Neither command runs anything or opens the ledger.
// `orch route` exits 0 when the route is decided, 3 when it is not (docs/cli.md).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "exec/tool_registry.h"
#include "orch/clock.h"
#include "orch/report.h"
#include "route/budget_allocation.h"
#include "route/route_report.h"
#include "route/skill_output.h"
#include "route/tables.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::cli {

namespace {

namespace fs = std::filesystem;

struct RouteArgs {
  std::string request;
  bool json = false;
  bool dry_run = false;
  std::string registry;
  std::string workspace = ".";
};

struct BudgetCheckArgs {
  std::string type;
  std::string input;
  bool json = false;
  std::string workspace = ".";
};

std::string now_text() {
  return iso_time(Clock::system().wall_ms());
}

// An error before anything was routed: stderr always, the contract's error report with --json.
int route_refused(const RouteArgs& args, const Error& e) {
  if (args.json) {
    auto doc = route::skill_output_skeleton(route::kRouteSkillName, "error", now_text());
    doc["output"]["summary"] = e.message;
    doc["error"] = route::skill_output_error("orch_error", e.message, false, std::nullopt);
    std::printf("%s\n", json_text(doc, 2).c_str());
  }
  return report_error(e);
}

// --registry FILE, else <workspace>/.orch/registry.yml when it exists, else none.
Expected<std::optional<ToolRegistry>> route_registry(const RouteArgs& args) {
  fs::path file = args.registry;
  if (file.empty()) {
    fs::path fallback = fs::path(args.workspace) / kDefaultToolRegistry;
    std::error_code ec;
    if (!fs::exists(fallback, ec)) return std::optional<ToolRegistry>();
    file = fallback;
  }
  return std::optional<ToolRegistry>(ORCH_TRY(load_tool_registry(file)));
}

int run_route(const RouteArgs& args) {
  if (trim(args.request).empty())
    return route_refused(args,
                         Error{ErrorCode::InvalidInput, "the request is empty: say what is to be done"});
  // A mistyped workspace would give the shipped tables in silence.
  if (auto w = check_workspace(args.workspace); !w) return route_refused(args, w.error());
  auto tables = route::RouteTables::load(args.workspace);
  if (!tables) return route_refused(args, tables.error());
  auto registry = route_registry(args);
  if (!registry) return route_refused(args, registry.error());
  const ToolRegistry* tools = registry->has_value() ? &**registry : nullptr;
  auto report = route::make_route_report(*tables, tools, args.request, args.dry_run);
  if (!report) return route_refused(args, report.error());
  if (args.json) {
    std::printf("%s\n", json_text(route::route_report_json(*report, now_text()), 2).c_str());
  } else {
    std::printf("%s", route::format_route_report(*report).c_str());
  }
  // Undecided is one answer too: a person must say more (the reasons are printed),
  // so it exits as every "needs a human" does, with or without --dry-run.
  return report->decided() ? kExitSucceeded : kExitEscalated;
}

int run_budget_check(const BudgetCheckArgs& args) {
  std::string input = args.input;
  if (input == "-") input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  if (auto w = check_workspace(args.workspace); !w) return report_error(w.error());
  auto tables = route::RouteTables::load(args.workspace);
  if (!tables) return report_error(tables.error());
  auto allocation = route::allocate_budget(*tables, args.type, input);
  if (!allocation) return report_error(allocation.error());
  const route::BudgetAllocation& a = *allocation;
  const route::AllocationRules& rules = tables->budgets.allocation;
  if (args.json) {
    nlohmann::ordered_json doc = {
        {"request_type", a.request_type},           {"allocated", a.allocated},
        {"safety_buffer", a.safety_buffer},         {"effective_budget", a.effective_budget},
        {"input_estimated", a.input_estimated},     {"input_chars", a.input_chars},
        {"chars_per_token", rules.chars_per_token}, {"input_exceeds_budget", a.input_exceeds_budget()}};
    std::printf("%s\n", json_text(doc, 2).c_str());
  } else {
    std::printf("%s: allocated %lld (base %lld + %s %lld), safety buffer %lld (%lld%%), effective %lld\n",
                a.request_type.c_str(), static_cast<long long>(a.allocated),
                static_cast<long long>(rules.base), a.request_type.c_str(),
                static_cast<long long>(a.allocated - rules.base), static_cast<long long>(a.safety_buffer),
                static_cast<long long>(rules.safety_buffer_percent),
                static_cast<long long>(a.effective_budget));
    std::printf("input: ~%lld tokens (an estimate: %lld characters / %lld)\n",
                static_cast<long long>(a.input_estimated), static_cast<long long>(a.input_chars),
                static_cast<long long>(rules.chars_per_token));
  }
  if (a.input_exceeds_budget()) {
    std::fprintf(stderr, "orch: the input alone (~%lld tokens) exceeds the effective budget of %lld tokens\n",
                 static_cast<long long>(a.input_estimated), static_cast<long long>(a.effective_budget));
    return kExitBudget;
  }
  return kExitSucceeded;
}

}  // namespace

Command add_route(CLI::App& app) {
  auto args = std::make_shared<RouteArgs>();
  CLI::App* sub = app.add_subcommand(
      "route",
      "Route a request: its type and domain with their confidence, the registry tool that would run it, "
      "its budget, and its intent, complexity and strategy. Runs nothing; exits 3 when the route is undecided "
      "(docs/routing.md).");
  sub->add_option("REQUEST", args->request, "the request, in words")->required();
  sub->add_flag("--json", args->json, "print the report (schemas/skill-output.schema.json) instead of text");
  sub->add_flag("--dry-run", args->dry_run,
                "mark the report status dry_run (a route never runs anything; the decision is the same)");
  sub->add_option("--registry", args->registry,
                  "tool registry to choose from (default: WORKSPACE/.orch/registry.yml if present)")
      ->check(not_empty("the tool registry file"));
  sub->add_option(
         "--workspace", args->workspace,
         "project folder: route tables in WORKSPACE/.orch/route/ replace the shipped ones (default: .)")
      ->check(not_empty("the project folder"));
  return [args]() -> int { return run_route(*args); };
}

Command add_budget_check(CLI::App& app) {
  auto args = std::make_shared<BudgetCheckArgs>();
  CLI::App* sub = app.add_subcommand(
      "budget-check",
      "The token allocation for a request type (base + type, 20% safety buffer) and an estimate of "
      "the input's tokens; exit 4 when the input alone exceeds the effective budget (docs/routing.md).");
  sub->add_option("--intent", args->type, "the request type: query, action, workflow, research or audit")
      ->required();
  sub->add_option("--input", args->input, "the request's text; - reads it from stdin")->required();
  sub->add_flag("--json", args->json,
                "print {request_type, allocated, safety_buffer, effective_budget, input_estimated, ...}");
  sub->add_option("--workspace", args->workspace,
                  "project folder: WORKSPACE/.orch/route/budgets.yaml replaces the shipped one (default: .)")
      ->check(not_empty("the project folder"));
  return [args]() -> int { return run_budget_check(*args); };
}

}  // namespace orch::cli
