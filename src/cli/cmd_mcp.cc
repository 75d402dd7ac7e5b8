// orch mcp [--workspace DIR] [--store PATH|URL] [--models F] [--registry F] [--workers F]
//          [--listen HOST:PORT [--token-file F]]
//
// orch as an MCP server (docs/mcp.md). The server is the program orch-serve
// beside this binary (as for `orch serve`: its HTTP transport is cpp-httplib,
// a shared library built against the shared libstdc++): this command checks
// the options, then hands them to it (execv), so stdin and stdout are orch-serve's.

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/detached_driver.h"
#include "cli/mcp_flags.h"

namespace orch::cli {

void add_mcp_flags(CLI::App& app, McpArgs& args) {
  TaskFlags& f = args.flags;
  app.add_option("--workspace", f.workspace,
                 "the project folder: traces, memory, VERIFY commands, runs' workspace (default: .)")
      ->check(not_empty("the project folder"));
  app.add_option("--store", f.store, std::string(kStoreHelpPrefix) + " (default: WORKSPACE/.orch/orch.db)")
      ->envname(kStoreEnv)
      ->check(not_empty(kStoreNotEmpty));
  app.add_option("--models", f.models, "models file (default: WORKSPACE/.orch/models.yaml if present)")
      ->check(not_empty("the models file"));
  app.add_option("--registry", f.registry, "tool registry (default: WORKSPACE/.orch/registry.yml if present)")
      ->check(not_empty("the tool registry file"));
  app.add_option("--workers", f.workers, "workers file (default: WORKSPACE/.orch/workers.yaml if present)")
      ->check(not_empty("the workers file"));
  add_request_plan_flags(app, f.planner);
  app.add_option("--listen", args.listen,
                 "serve MCP's streamable HTTP at http://HOST:PORT/mcp instead of stdio (a loopback address; "
                 "port 0: any free one); every request needs the bearer token");
  app.add_option(
      "--token-file", args.token_file,
      "with --listen: the token's file (default: mcp.token beside the ledger), made with mode 0600 at "
      "the first start");
}

std::vector<std::string> mcp_words(const McpArgs& args) {
  std::vector<std::string> words;
  auto add = [&](const char* flag, const std::string& value) {
    if (value.empty()) return;
    words.push_back(flag);
    words.push_back(value);
  };
  const TaskFlags& f = args.flags;
  add("--workspace", f.workspace);
  add("--store", f.store);
  add("--models", f.models);
  add("--registry", f.registry);
  add("--workers", f.workers);
  add("--model", f.planner.model);
  add("--templates", f.planner.templates);
  add("--executor", f.planner.executor);
  add("--listen", args.listen);
  add("--token-file", args.token_file);
  return words;
}

Command add_mcp(CLI::App& app) {
  auto args = std::make_shared<McpArgs>();
  CLI::App* sub = app.add_subcommand(
      "mcp",
      "Serve orch's tools to agents over the Model Context Protocol: stdio, or HTTP with --listen "
      "(docs/mcp.md).");
  add_mcp_flags(*sub, *args);
  sub->get_option("--token-file")->needs(sub->get_option("--listen"));
  return [args]() -> int {
    std::vector<std::string> words = {"mcp"};
    for (std::string& w : mcp_words(*args)) words.push_back(std::move(w));
    return exec_orch_serve(words);
  };
}

}  // namespace orch::cli
