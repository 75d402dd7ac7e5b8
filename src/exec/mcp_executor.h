// exec/mcp_executor.h — `executor: tool:SERVER.TOOL`: one tools/call of an MCP server's tool per attempt.
//
// SERVER is a `kind: mcp` entry of the tool registry, TOOL one of the tools its
// tools/list gives; the step's `inputs:` are the tool's arguments:
//
//   - id: save
//     executor: tool:fs.write_file
//     inputs: {path: /tmp/x/notes.txt, content: "${steps.draft.result}"}
//
// Validation lists the server's tools (starting it: servers are started once per
// process and shared, exec/mcp_client.h), checks that TOOL is one, and checks
// literal inputs against its inputSchema, each failing JSON path named; inputs
// with placeholders are checked when the attempt starts (text read as the
// numbers and booleans the schema wants, as for CLI tools).
//
// An attempt ends Exited (exit code 0) with the result = structuredContent
// (compact JSON) when the server sent it, else the text content; Error when the
// result has isError (its text the reason), when structuredContent is missing
// or violates the tool's outputSchema, when the server answered with a JSON-RPC
// error, or when it died during the call ("MCP server X exited (status 1)
// during tools/call Y"); TimedOut / Cancelled when orch stopped it (the server
// is sent notifications/cancelled). The raw tools/call result is the attempt's
// stdout (kept in its ledger row).
//
// Risk: as for CLI tools (the step's, the server's `risk`, in_progress at least
// medium, not safe_for_agents at least high, pending/planned/missing critical),
// plus the tool's own: the registry's per-tool `risk` when given, else medium
// when its annotations say it may destroy (MCP's defaults: readOnlyHint false,
// destructiveHint true — a tool with no annotations may destroy), else low.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "exec/mcp_client.h"
#include "exec/tool_registry.h"
#include "orch/executor.h"

namespace orch {

class McpExecutor final : public Executor {
 public:
  explicit McpExecutor(std::shared_ptr<const ToolRegistry> registry);
  ~McpExecutor() override;

  void check_step(const Step& step, Diagnostics& out) const override;
  std::vector<Postcondition> default_post() const override;
  RiskLevel risk(const Step& step) const override;
  std::string risk_reason(const Step& step) const override;
  std::string describe(const AttemptSpec& spec) const override;
  int open_files_per_attempt() const override { return 1; }
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                  DoneCallback done) override;

  // The server's tools (started on first use; the client is made then too).
  Expected<std::vector<mcp::ToolInfo>> server_tools(const std::string& server) const;
  // The level `tool` of `server` has of itself (per-tool rule, else its annotations).
  static RiskLevel tool_risk(const RegisteredTool& server, const mcp::ToolInfo* tool);

 private:
  McpClient& client() const;
  class Attempt;

  std::shared_ptr<const ToolRegistry> registry_;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<McpClient> client_;
};

}  // namespace orch
