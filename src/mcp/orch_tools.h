// mcp/orch_tools.h — what each tool of `orch mcp` does (docs/mcp.md).
//
// One OrchTools per server: it opens the workspace's ledger and executors once
// (cli::open_task, as `orch task` does) and answers each call with the document
// the matching command prints with --json (cli/json_docs.h, orch/report.h,
// flows' traces), so an agent over MCP and a person at the terminal see the
// same thing. Arguments have been checked against the tool's inputSchema
// before a call reaches here (mcp/session.h).
//
// What stays with the human: `approve` is not a tool; `run` starts a run whose
// medium- and high-risk steps wait for `orch approve` exactly as from the CLI,
// and refuses a plan with a critical step before anything is recorded.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/task_env.h"
#include "orch/error.h"

namespace orch::mcp {

// A tool's answer: its document (structuredContent) and a line of text, or a
// tool error (isError) whose text says what went wrong and what to do.
struct ToolResult {
  nlohmann::json structured;  // an object; null for an error
  std::string text;
  bool is_error = false;

  static ToolResult ok(nlohmann::json doc, std::string text) {
    return {std::move(doc), std::move(text), false};
  }
  static ToolResult error(std::string text) { return {nullptr, std::move(text), true}; }
};

struct ServerOptions {
  cli::TaskFlags flags;  // --store, --workspace, --models, --registry, --workers, the planner's
};

class OrchTools {
 public:
  // Opens the ledger (created when missing) and the executors. Errors name the file.
  static Expected<std::unique_ptr<OrchTools>> open(const ServerOptions& options);

  // The tools this class answers (the catalogue must list exactly these).
  static std::vector<std::string> tool_names();

  // The ledger's folder (where `orch mcp --listen` keeps its token).
  const std::filesystem::path& ledger_folder() const { return open_.ledger->runs().folder(); }

  // Runs tool `name` (one of the catalogue's) on checked `arguments`.
  ToolResult call(const std::string& name, const nlohmann::json& arguments);

 private:
  OrchTools(const ServerOptions& options, cli::OpenTask open) : options_(options), open_(std::move(open)) {}

  using Handler = Expected<ToolResult> (OrchTools::*)(const nlohmann::json&);
  static const std::map<std::string, Handler>& handlers();

  // task_tools.cc: seed 000's trace
  Expected<ToolResult> task_plan(const nlohmann::json& args);
  Expected<ToolResult> task_log(const nlohmann::json& args);
  Expected<ToolResult> task_close(const nlohmann::json& args);
  Expected<ToolResult> task_show(const nlohmann::json& args);
  // run_tools.cc: plans and runs
  Expected<ToolResult> validate(const nlohmann::json& args);
  Expected<ToolResult> run(const nlohmann::json& args);
  Expected<ToolResult> status(const nlohmann::json& args);
  Expected<ToolResult> logs(const nlohmann::json& args);
  // knowledge_tools.cc: what orch knows and has recorded
  Expected<ToolResult> route(const nlohmann::json& args);
  Expected<ToolResult> similarity(const nlohmann::json& args);
  Expected<ToolResult> plan(const nlohmann::json& args);
  Expected<ToolResult> review_show(const nlohmann::json& args);
  Expected<ToolResult> cycle_status(const nlohmann::json& args);

  // The executors' files as found for the workspace ("" when none), for the
  // process that drives a run the run tool starts.
  std::string workspace_file(const std::string& flag, const char* fallback) const;

  ServerOptions options_;
  cli::OpenTask open_;
};

// An ordered document (the CLI's) as a plain one.
nlohmann::json plain_json(const nlohmann::ordered_json& doc);

// The text of a tool's answer: the first line of `text`, at most `max` bytes.
std::string one_line(const std::string& text, std::size_t max = 200);

}  // namespace orch::mcp
