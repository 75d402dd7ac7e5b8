#include "exec/mcp_executor.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "exec/output_sink.h"
#include "exec/refused_attempt.h"
#include "exec/tool_executor.h"
#include "orch/validate.h"
#include "util/json_schema.h"
#include "util/json_text.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace orch {

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// How long validation and an attempt's start wait for a server's tool list.
constexpr std::chrono::milliseconds kListTimeout{60'000};
constexpr std::size_t kShownViolations = 5;

std::filesystem::path mcp_log_folder() {
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return tmp / fmt::format("orch-mcp-{}", ::getpid());
}

const mcp::ToolInfo* find_tool(const std::vector<mcp::ToolInfo>& tools, const std::string& name) {
  for (const auto& tool : tools)
    if (tool.name == name) return &tool;
  return nullptr;
}

std::vector<std::string> tool_names(const std::vector<mcp::ToolInfo>& tools) {
  std::vector<std::string> out;
  for (const auto& tool : tools) out.push_back(tool.name);
  return out;
}

// "" when `value` satisfies `schema`; else the failing paths, said once.
Expected<std::string> schema_violations(const json& schema, const json& value) {
  auto compiled = JsonSchema::parse(schema);
  if (!compiled) return std::unexpected(compiled.error());
  auto violations = compiled->validate(value);
  if (violations.empty()) return std::string();
  std::string more = violations.size() > kShownViolations
                         ? fmt::format("; and {} more", violations.size() - kShownViolations)
                         : "";
  violations.resize(std::min(violations.size(), kShownViolations));
  return join(violations, "; ") + more;
}

// The attempt's secrets, and those the registry hands the server in its `env`
// (a token under a secret-looking name), which a tool might echo back.
std::shared_ptr<const SecretMasker> secrets_of(const RegisteredTool& server, const AttemptSpec& spec) {
  SecretMasker secrets = spec.secrets ? *spec.secrets : SecretMasker();
  bool added = false;
  for (const auto& [name, value] : server.mcp.env) added = secrets.add_if_secret(name, value) || added;
  return added ? std::make_shared<const SecretMasker>(std::move(secrets)) : spec.secrets;
}

// The arguments a tools/call sends: the step's inputs (an object; none is {}).
json arguments_of(const json& inputs) {
  return inputs.is_object() ? inputs : json::object();
}

}  // namespace

// ---- the running attempt ------------------------------------------------------

// The call's answer crosses from the MCP client's thread to the engine's loop
// through an eventfd the loop watches.
struct McpCallState {
  std::mutex mutex;
  int fd = -1;
  bool abandoned = false;
  std::optional<Expected<mcp::CallResult>> answer;
};

class McpExecutor::Attempt final : public RunningAttempt {
 public:
  Attempt(McpClient& client, EventLoop& loop, DoneCallback done, std::string label, json output_schema,
          std::shared_ptr<const SecretMasker> secrets, std::int64_t max_output)
      : client_(client),
        loop_(loop),
        done_(std::move(done)),
        label_(std::move(label)),
        output_schema_(std::move(output_schema)),
        secrets_(std::move(secrets)),
        max_output_(max_output),
        state_(std::make_shared<McpCallState>()),
        started_(SteadyClock::now()) {}

  ~Attempt() override {
    if (done_) client_.cancel(call_, "the attempt was abandoned");
    release();
  }

  Expected<void> start(const std::string& server, const std::string& tool, json arguments,
                       std::optional<std::chrono::milliseconds> timeout) {
    state_->fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (state_->fd < 0) return fail(ErrorCode::Io, fmt::format("{}: cannot make an eventfd", label_));
    loop_.watch(state_->fd, POLLIN, [this](short) { answered(); });
    if (timeout)
      timer_ = loop_.add_timer(*timeout, [this, timeout] {
        timer_ = 0;
        stop(AttemptEnding::TimedOut, fmt::format("{} timed out after {} ms", label_, timeout->count()));
      });
    call_ =
        client_.call(server, tool, std::move(arguments), [state = state_](Expected<mcp::CallResult> answer) {
          std::lock_guard lock(state->mutex);
          if (state->abandoned) return;
          state->answer = std::move(answer);
          const std::uint64_t one = 1;
          [[maybe_unused]] auto n = ::write(state->fd, &one, sizeof one);
        });
    return {};
  }

  void cancel(const std::string& reason) override { stop(AttemptEnding::Cancelled, reason); }

 private:
  void release() {
    if (timer_ != 0) loop_.cancel_timer(timer_);
    timer_ = 0;
    std::lock_guard lock(state_->mutex);
    state_->abandoned = true;
    if (state_->fd >= 0) {
      loop_.unwatch(state_->fd);
      ::close(state_->fd);
      state_->fd = -1;
    }
  }

  void stop(AttemptEnding ending, const std::string& reason) {
    if (!done_) return;
    client_.cancel(call_, reason);  // notifications/cancelled, with the reason
    release();
    AttemptOutcome outcome;
    outcome.ending = ending;
    outcome.message = reason;
    report(std::move(outcome), true);
  }

  void answered() {
    std::optional<Expected<mcp::CallResult>> answer;
    {
      std::lock_guard lock(state_->mutex);
      std::uint64_t count = 0;
      [[maybe_unused]] auto n = ::read(state_->fd, &count, sizeof count);
      answer = std::move(state_->answer);
      state_->answer.reset();
    }
    if (!answer || !done_) return;
    release();
    report(settle(std::move(*answer)), false);
  }

  AttemptOutcome settle(Expected<mcp::CallResult> answer) const {
    AttemptOutcome outcome;
    if (!answer) {
      outcome.ending = AttemptEnding::Error;
      outcome.message =
          answer.error().message.starts_with("MCP server")
              ? answer.error().message
              : fmt::format("{}: the server answered with an error: {}", label_, answer.error().message);
      return outcome;
    }
    const mcp::CallResult& result = *answer;
    outcome.stdout_text =
        result.structured ? json_text(*result.structured) + (result.text.empty() ? "" : "\n") + result.text
                          : result.text;
    if (result.is_error) {
      outcome.ending = AttemptEnding::Error;
      outcome.message = fmt::format("{} returned an error (isError): {}", label_,
                                    result.text.empty() ? "(no text content)" : result.text);
      return outcome;
    }
    if (!output_schema_.is_null()) {
      std::string problem;
      if (!result.structured) {
        problem = "it gave no structuredContent, though the tool declares an outputSchema";
      } else if (auto violations = schema_violations(output_schema_, *result.structured); !violations) {
        problem = fmt::format("its outputSchema cannot be used: {}", violations.error().message);
      } else if (!violations->empty()) {
        problem = fmt::format("its structuredContent violates the outputSchema: {}", *violations);
      }
      if (!problem.empty()) {
        outcome.ending = AttemptEnding::Error;
        outcome.message = fmt::format("{}: {}", label_, problem);
        return outcome;
      }
    }
    outcome.ending = AttemptEnding::Exited;
    outcome.exit_code = 0;
    outcome.result = result.structured ? json_text(*result.structured) : result.text;
    if (static_cast<std::int64_t>(outcome.result.size()) > max_output_) {
      // Cut, it would be a result the server never gave (and JSON no longer).
      outcome.ending = AttemptEnding::Error;
      outcome.message = fmt::format("{}: its result is {} bytes, more than the step's max_output ({})",
                                    label_, outcome.result.size(), max_output_);
      outcome.result.clear();
    }
    return outcome;
  }

  // Reports from the loop (deferred when called from cancel(): never from inside the caller).
  void report(AttemptOutcome outcome, bool defer) {
    outcome.duration = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started_);
    if (secrets_) {
      outcome.result = secrets_->mask(outcome.result);
      outcome.message = secrets_->mask(outcome.message);
      if (outcome.stdout_text) outcome.stdout_text = secrets_->mask(*outcome.stdout_text);
    }
    if (outcome.stdout_text) {
      outcome.stdout_bytes = static_cast<std::int64_t>(outcome.stdout_text->size());
      if (outcome.stdout_bytes > max_output_) {
        outcome.stdout_text->resize(static_cast<std::size_t>(max_output_));
        *outcome.stdout_text +=
            OutputSink::truncation_marker(max_output_, outcome.stdout_bytes - max_output_);
        outcome.stdout_truncated = true;
      }
    }
    outcome.output_tail = outcome.stdout_text.value_or(outcome.message);
    if (outcome.output_tail.size() > 2048)
      outcome.output_tail = outcome.output_tail.substr(outcome.output_tail.size() - 2048);
    DoneCallback done = std::move(done_);
    done_ = nullptr;
    if (defer)
      loop_.defer(
          [done = std::move(done), outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
    else
      done(std::move(outcome));
  }

  McpClient& client_;
  EventLoop& loop_;
  DoneCallback done_;
  std::string label_;
  json output_schema_;
  std::shared_ptr<const SecretMasker> secrets_;
  std::int64_t max_output_;
  std::shared_ptr<McpCallState> state_;
  SteadyClock::time_point started_;
  std::uint64_t call_ = 0;
  EventLoop::TimerId timer_ = 0;
};

// ---- the executor -------------------------------------------------------------

McpExecutor::McpExecutor(std::shared_ptr<const ToolRegistry> registry) : registry_(std::move(registry)) {}

McpExecutor::~McpExecutor() = default;

McpClient& McpExecutor::client() const {
  std::lock_guard lock(mutex_);
  if (!client_) client_ = std::make_unique<McpClient>(registry_, mcp_log_folder());
  return *client_;
}

Expected<std::vector<mcp::ToolInfo>> McpExecutor::server_tools(const std::string& server) const {
  return client().tools(server, kListTimeout);
}

RiskLevel McpExecutor::tool_risk(const RegisteredTool& server, const mcp::ToolInfo* tool) {
  if (tool != nullptr)
    if (auto it = server.mcp.tools.find(tool->name); it != server.mcp.tools.end() && it->second.risk)
      return *it->second.risk;
  // Not listed: nothing is known of it, so it may destroy (MCP's default).
  return mcp::annotation_risk(tool != nullptr ? tool->annotations : mcp::ToolAnnotations{});
}

void McpExecutor::check_step(const Step& step, Diagnostics& out) const {
  auto problem = [&](std::initializer_list<std::string_view> fields, std::string message) {
    out.push_back(step_diagnostic(step, fields, std::move(message)));
  };
  const std::string name = tool_name_of(step.executor);
  auto target = registry_->find_mcp(name);
  if (!target) return;  // ToolExecutor only sends MCP steps here
  const auto& [server, tool_name] = *target;
  auto tools = server_tools(server->name);
  if (!tools) {
    problem({"executor"}, fmt::format("tool:{}: cannot list the tools of MCP server '{}': {}", name,
                                      server->name, tools.error().message));
    return;
  }
  const mcp::ToolInfo* tool = find_tool(*tools, tool_name);
  if (tool == nullptr) {
    problem({"executor"}, fmt::format("tool:{}: MCP server '{}' has no tool '{}'{} (its tools: {})", name,
                                      server->name, tool_name, did_you_mean(tool_name, tool_names(*tools)),
                                      join(tool_names(*tools), ", ")));
    return;
  }
  auto literal = literal_inputs(json(step.inputs));
  if (!literal) return;  // placeholders: checked when an attempt starts
  json arguments = arguments_of(*literal);
  coerce_rendered_text(arguments, tool->input_schema);
  auto problems = schema_violations(tool->input_schema, arguments);
  if (!problems)
    problem({"executor"}, fmt::format("tool:{}: the tool's inputSchema cannot be used by orch: {}", name,
                                      problems.error().message));
  else if (!problems->empty())
    problem({"inputs"},
            fmt::format("tool:{}: the inputs do not match the tool's inputSchema: {}", name, *problems));
}

std::vector<Postcondition> McpExecutor::default_post() const {
  Postcondition exit_zero;
  exit_zero.kind = PostKind::ExitZero;
  return {exit_zero};
}

RiskLevel McpExecutor::risk(const Step& step) const {
  const RiskLevel declared = step.risk.value_or(RiskLevel::Low);
  auto target = registry_->find_mcp(tool_name_of(step.executor));
  if (!target) return RiskLevel::Critical;
  const RegisteredTool& server = *target->first;
  if (server.status == ToolStatus::Pending || server.status == ToolStatus::Planned)
    return RiskLevel::Critical;
  auto tools = server_tools(server.name);
  const mcp::ToolInfo* tool = tools ? find_tool(*tools, target->second) : nullptr;
  RiskLevel level = std::max({declared, server.risk, tool_risk(server, tool)});
  if (server.status == ToolStatus::InProgress) level = std::max(level, RiskLevel::Medium);
  if (!server.safe_for_agents) level = std::max(level, RiskLevel::High);
  return level;
}

std::string McpExecutor::risk_reason(const Step& step) const {
  const std::string name = tool_name_of(step.executor);
  auto target = registry_->find_mcp(name);
  if (!target) return fmt::format("tool '{}' is not in the registry", name);
  const RegisteredTool& server = *target->first;
  if (server.status == ToolStatus::Pending || server.status == ToolStatus::Planned)
    return fmt::format("MCP server '{}' has status {}: it is not ready to run", server.name,
                       tool_status_name(server.status));
  if (server.risk == RiskLevel::Critical)
    return fmt::format("the registry rates MCP server '{}' critical", server.name);
  if (auto it = server.mcp.tools.find(target->second);
      it != server.mcp.tools.end() && it->second.risk == RiskLevel::Critical)
    return fmt::format("the registry rates tool '{}' of MCP server '{}' critical", target->second,
                       server.name);
  return "";
}

std::string McpExecutor::describe(const AttemptSpec& spec) const {
  const std::string name = tool_name_of(spec.executor);
  auto target = registry_->find_mcp(name);
  std::string where;
  if (target) {
    const RegisteredTool& server = *target->first;
    if (!server.mcp.url.empty()) {
      where = server.mcp.url;
    } else {
      std::vector<std::string> words;
      for (const auto& w : server.command) words.push_back(shell_quote(w));
      where = join(words, " ");
    }
  }
  std::string text =
      fmt::format("MCP tools/call '{}' on server '{}' ({})\narguments: {}", target ? target->second : name,
                  target ? target->first->name : "?", where, json_text(spec.inputs));
  SecretMasker secrets;
  if (spec.inputs.is_object())
    for (const auto& [key, value] : spec.inputs.items())
      if (value.is_string()) secrets.add_if_secret(key, value.get_ref<const std::string&>());
  return secrets.empty() ? text : secrets.mask(text);
}

Expected<std::unique_ptr<RunningAttempt>> McpExecutor::start(const AttemptSpec& spec, EventLoop& loop,
                                                             DoneCallback done) {
  const std::string name = tool_name_of(spec.executor);
  auto target = registry_->find_mcp(name);
  if (!target)
    return refused_attempt(fmt::format("tool:{}: no MCP server of the registry has this tool", name), loop,
                           std::move(done), AttemptEnding::SetupFailed);
  const auto& [server, tool_name] = *target;
  auto tools = server_tools(server->name);
  if (!tools) return refused_attempt(tools.error().message, loop, std::move(done));
  const mcp::ToolInfo* tool = find_tool(*tools, tool_name);
  if (tool == nullptr)
    return refused_attempt(
        fmt::format("tool:{}: MCP server '{}' has no tool '{}'", name, server->name, tool_name), loop,
        std::move(done), AttemptEnding::SetupFailed);
  json arguments = arguments_of(json(spec.inputs));
  coerce_rendered_text(arguments, tool->input_schema);
  auto problems = schema_violations(tool->input_schema, arguments);
  if (!problems || !problems->empty())
    return refused_attempt(fmt::format("tool:{}: the inputs do not match the tool's inputSchema: {}", name,
                                       problems ? *problems : problems.error().message),
                           loop, std::move(done));
  auto attempt = std::make_unique<Attempt>(client(), loop, std::move(done), fmt::format("tool:{}", name),
                                           tool->output_schema, secrets_of(*server, spec), spec.max_output);
  ORCH_TRY(attempt->start(server->name, tool_name, std::move(arguments), spec.timeout));
  return std::unique_ptr<RunningAttempt>(std::move(attempt));
}

}  // namespace orch
