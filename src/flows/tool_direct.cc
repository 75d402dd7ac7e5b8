#include "flows/tool_direct.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <system_error>
#include <vector>

#include "route/classify.h"
#include "route/words.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::flows {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

std::string folded_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
  return s;
}

// The request cut at white space, each word without the punctuation around it
// ("readme." and "`notes.txt`," are readme and notes.txt).
std::vector<std::string> words_as_written(const std::string& request) {
  static constexpr std::string_view kAround = "\"'`,;:!?()[]{}<>";
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < request.size()) {
    const std::size_t end = std::min(request.find_first_of(" \t\r\n", at), request.size());
    std::string_view word(request.data() + at, end - at);
    at = end + 1;
    while (!word.empty() && kAround.find(word.front()) != std::string_view::npos) word.remove_prefix(1);
    while (!word.empty() && (kAround.find(word.back()) != std::string_view::npos || word.back() == '.'))
      word.remove_suffix(1);
    if (!word.empty()) out.emplace_back(word);
  }
  return out;
}

bool regular_file_at(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The workspace files a word names (see tool_direct.h), in the order of the
// folder's listing sorted by name. A word with ".." or a leading "/" names none.
std::vector<std::string> files_named_by(const std::string& word, const fs::path& workspace) {
  const fs::path as_path(word);
  if (as_path.is_absolute()) return {};
  for (const auto& part : as_path)
    if (part == "..") return {};
  if (regular_file_at(workspace / as_path)) return {as_path.lexically_normal().generic_string()};
  if (word.find('/') != std::string::npos) return {};
  std::vector<std::string> matches;
  std::error_code ec;
  for (fs::directory_iterator it(workspace, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(".") || !regular_file_at(it->path())) continue;
    const std::string folded = folded_case(name);
    if (folded == folded_case(word) || folded.substr(0, folded.find('.')) == folded_case(word))
      matches.push_back(name);
  }
  std::sort(matches.begin(), matches.end());
  return matches;
}

// The files the request names, each once, in the request's order. The words of
// the capability it named ("count", "lines") are what it asks, not what on.
Expected<std::vector<std::string>> files_named_by_request(const Trace& trace, const std::string& capability,
                                                          const fs::path& workspace) {
  const std::vector<std::string> asked = route::words_of(capability);
  std::vector<std::string> files;
  for (const auto& word : words_as_written(trace.request)) {
    if (std::find(asked.begin(), asked.end(), folded_case(word)) != asked.end()) continue;
    const std::vector<std::string> named = files_named_by(word, workspace);
    if (named.size() > 1)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("'{}' could name any of {}: name the file", word, join(named, ", ")));
    if (named.size() == 1 && std::find(files.begin(), files.end(), named[0]) == files.end())
      files.push_back(named[0]);
  }
  return files;
}

// Whether a property schema takes a list of strings (true) or one string (false);
// nullopt when it takes neither.
std::optional<bool> takes_files(const json& property) {
  if (!property.is_object() || !property.contains("type")) return false;  // anything: one string will do
  const json& type = property["type"];
  auto has = [&](const char* t) {
    return type == t || (type.is_array() && std::find(type.begin(), type.end(), t) != type.end());
  };
  if (has("array")) {
    const json items = property.value("items", json::object());
    if (!items.is_object() || !items.contains("type") || items["type"] == "string") return true;
    return std::nullopt;
  }
  if (has("string")) return false;
  return std::nullopt;
}

}  // namespace

std::string ToolDirectCall::describe() const {
  ojson arguments = inputs;
  arguments.erase("command");
  return arguments.empty() ? fmt::format("{} {}", tool, command)
                           : fmt::format("{} {} with {}", tool, command, json_text(arguments));
}

bool is_tool_direct(const Trace& trace) {
  return trace.llm == route::model_need_name(route::ModelNeed::None);
}

Expected<ToolDirectCall> tool_direct_call(const Trace& trace, const ToolRegistry* registry,
                                          const fs::path& workspace) {
  const json route = trace.engine_results.value("route", json::object());
  const json chosen = route.value("tool", json::object());
  if (route.value("status", std::string()) != "ok" || !chosen.value("chosen", false))
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("the ROUTE stage chose no tool ({})",
                    route.contains("error") ? route.value("error", std::string())
                                            : chosen.value("reason", std::string("no route result"))));
  ToolDirectCall call;
  call.tool = chosen.value("tool", std::string());
  call.command = chosen.value("command", std::string());
  call.capability = chosen.value("capability", std::string());
  const RegisteredTool* tool = registry ? registry->find(call.tool) : nullptr;
  const ToolCommand* command = tool ? tool->find_command(call.command) : nullptr;
  if (!command)
    return fail(ErrorCode::InvalidInput,
                fmt::format("tool '{}' {} is not in the tool registry any more", call.tool, call.command));

  call.inputs = {{"command", call.command}};
  std::vector<std::string> required;
  for (const auto& r : command->input_schema.value("required", json::array()))
    if (r.is_string()) required.push_back(r.get<std::string>());
  if (required.size() > 1)
    return fail(ErrorCode::InvalidInput,
                fmt::format("tool '{}' {} requires the inputs {}: without a model orch gives a tool only the "
                            "files a request names",
                            call.tool, call.command, join(required, ", ")));
  if (required.size() == 1) {
    const std::string& name = required[0];
    const json properties = command->input_schema.value("properties", json::object());
    const std::optional<bool> list =
        takes_files(properties.is_object() ? properties.value(name, json::object()) : json::object());
    if (!list)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("tool '{}' {} requires the input '{}', which takes no file name: without a "
                              "model orch gives a tool only the files a request names",
                              call.tool, call.command, name));
    const std::vector<std::string> files =
        ORCH_TRY(files_named_by_request(trace, call.capability, workspace));
    if (files.empty())
      return fail(ErrorCode::InvalidInput,
                  fmt::format("the request names no file of the workspace for the input '{}' of tool '{}' {}",
                              name, call.tool, call.command));
    if (!*list && files.size() > 1)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("the request names {} files ({}); the input '{}' of tool '{}' {} takes one",
                              files.size(), join(files, ", "), name, call.tool, call.command));
    call.inputs[name] = *list ? ojson(files) : ojson(files[0]);
  }
  ojson arguments = call.inputs;
  arguments.erase("command");
  const std::vector<std::string> problems = command->input_checker.validate(json::parse(arguments.dump()));
  if (!problems.empty())
    return fail(ErrorCode::InvalidInput,
                fmt::format("tool '{}' {}: the inputs {} do not fit its input_schema: {}", call.tool,
                            call.command, json_text(arguments), problems[0]));
  return call;
}

}  // namespace orch::flows
