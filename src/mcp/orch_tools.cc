// mcp/orch_tools.cc — opening the tools' environment and calling one (mcp/orch_tools.h).
#include "mcp/orch_tools.h"

#include <fmt/format.h>

#include <filesystem>

#include "cli/common.h"

namespace orch::mcp {

namespace fs = std::filesystem;

Expected<std::unique_ptr<OrchTools>> OrchTools::open(const ServerOptions& options) {
  std::unique_ptr<OrchTools> tools(
      new OrchTools(options, ORCH_TRY(cli::open_task(options.flags, true, true))));
  // A VERIFY's checks stop on SIGINT/SIGTERM as from the CLI, and what they did is
  // not recorded; the server itself stops by the signal's default.
  tools->open_.env.handle_signals = true;
  return tools;
}

const std::map<std::string, OrchTools::Handler>& OrchTools::handlers() {
  static const std::map<std::string, Handler> table = {
      {"task_plan", &OrchTools::task_plan},
      {"task_log", &OrchTools::task_log},
      {"task_close", &OrchTools::task_close},
      {"task_show", &OrchTools::task_show},
      {"validate", &OrchTools::validate},
      {"run", &OrchTools::run},
      {"status", &OrchTools::status},
      {"logs", &OrchTools::logs},
      {"route", &OrchTools::route},
      {"similarity", &OrchTools::similarity},
      {"plan", &OrchTools::plan},
      {"review_show", &OrchTools::review_show},
      {"cycle_status", &OrchTools::cycle_status},
  };
  return table;
}

std::vector<std::string> OrchTools::tool_names() {
  std::vector<std::string> names;
  for (const auto& [name, handler] : handlers()) names.push_back(name);
  return names;
}

ToolResult OrchTools::call(const std::string& name, const nlohmann::json& arguments) {
  auto handler = handlers().find(name);
  if (handler == handlers().end()) return ToolResult::error(fmt::format("orch has no tool '{}'", name));
  auto result = (this->*(handler->second))(arguments);
  if (!result) return ToolResult::error(result.error().message);
  return std::move(*result);
}

std::string OrchTools::workspace_file(const std::string& flag, const char* fallback) const {
  if (!flag.empty()) return fs::absolute(flag).string();
  const fs::path f = open_.env.workspace / fallback;
  std::error_code ec;
  return fs::exists(f, ec) ? f.string() : std::string();
}

nlohmann::json plain_json(const nlohmann::ordered_json& doc) {
  return nlohmann::json::parse(doc.dump());
}

std::string one_line(const std::string& text, std::size_t max) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > max) line = line.substr(0, max - 3) + "...";
  return line;
}

}  // namespace orch::mcp
