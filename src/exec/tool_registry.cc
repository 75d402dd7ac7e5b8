// exec/tool_registry.cc — reading and checking a registry file.
//
// The text is parsed by the plan layer's line-numbered readers (plan/doc_node.h),
// so every problem can name its line. Two passes check it: the embedded
// schemas/registry.schema.json, and RegistryReader, which builds the registry
// while it checks the same shape with friendlier words (did-you-mean for keys,
// statuses and risk levels) plus what a schema cannot say (schemas that compile,
// inputs that no `args` entry passes). The reader's problems are reported when it
// has any; otherwise the schema's. A test keeps the two in agreement.
#include "exec/tool_registry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "exec/config_check.h"
#include "exec/mcp_registry_entry.h"
#include "exec/registry_places.h"
#include "plan/json_reader.h"
#include "util/doc_node.h"
#include "util/read_file.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch {

namespace {

using detail::field_of_pointer;
using detail::pointer_child;
using detail::RegistryPlaces;
namespace fs = std::filesystem;
// The document keeps the file's order, so problems come in the order they were written.
using ojson = nlohmann::ordered_json;

constexpr ToolStatus kStatuses[] = {ToolStatus::Planned, ToolStatus::InProgress, ToolStatus::DryRunValidated,
                                    ToolStatus::ProdReady, ToolStatus::Pending};

// Builds the registry from the parsed document while collecting every problem.
class RegistryReader final : public RegistryFields {
 public:
  RegistryReader(std::string file, const RegistryPlaces& places, fs::path base_dir)
      : file_(std::move(file)), places_(places), base_dir_(std::move(base_dir)) {}

  void problem(const std::string& pointer, const std::string& message, bool at_key = false) override {
    const RegistryPlaces::Place* place = places_.find(pointer);
    int line = place ? (at_key ? place->key_line : place->value_line) : 0;
    std::string field = place && !place->field.empty() ? place->field : field_of_pointer(pointer);
    problems_.emplace_back(line, line > 0 ? fmt::format("{}:{}: {}: {}", file_, line, field, message)
                                          : fmt::format("{}: {}: {}", file_, field, message));
  }
  // (line, message) pairs, in the order they were found.
  std::vector<std::pair<int, std::string>>& problems() { return problems_; }

  ToolRegistry read(const ojson& doc) {
    ToolRegistry registry;
    if (!doc.is_object()) {
      problem("", "must be a mapping with `tools` (docs/tools.md)");
      return registry;
    }
    only_keys(doc, "", {"version", "tools"});
    if (auto it = doc.find("version"); it != doc.end() && *it != ojson(1))
      problem("/version", fmt::format("must be 1 (the only format there is), not {}", it->dump()));
    auto tools = doc.find("tools");
    if (tools == doc.end() || !tools->is_object() || tools->empty()) {
      problem(tools == doc.end() ? "" : "/tools", "`tools` must map tool names to tools");
      return registry;
    }
    for (const auto& [name, value] : tools->items()) {
      std::string pointer = pointer_child("/tools", name);
      if (!is_executor_name(name))
        problem(pointer, "a tool name is letters, digits, '_', '.' and '-', starting with a letter or digit",
                true);
      registry.tools[name] = read_tool(name, value, pointer);
    }
    return registry;
  }

  // Keys starting with "x-" are notes (and YAML anchors' homes), except in `args` entries.
  void only_keys(const ojson& object, const std::string& pointer, const std::vector<std::string>& known,
                 bool notes_allowed = true) override {
    for (const auto& [key, value] : object.items()) {
      if ((notes_allowed && key.starts_with("x-")) ||
          std::find(known.begin(), known.end(), key) != known.end())
        continue;
      problem(pointer_child(pointer, key), "unknown key" + did_you_mean(key, known), true);
    }
  }

  std::optional<std::string> text(const ojson& object, const std::string& pointer,
                                  const std::string& key) override {
    auto it = object.find(key);
    if (it == object.end()) return std::nullopt;
    if (!it->is_string()) {
      problem(pointer_child(pointer, key), fmt::format("must be a string, not {}", it->dump()));
      return std::nullopt;
    }
    return it->get<std::string>();
  }

  std::optional<std::vector<std::string>> words(const ojson& object, const std::string& pointer,
                                                const std::string& key, bool allow_empty_word) override {
    auto it = object.find(key);
    if (it == object.end()) return std::nullopt;
    if (it->is_string()) {
      problem(pointer_child(pointer, key),
              fmt::format("must be a list of words ([\"jq\", \"-c\"]): orch never splits "
                          "a command on spaces, nor runs it through a shell"));
      return std::nullopt;
    }
    if (!it->is_array()) {
      problem(pointer_child(pointer, key), "must be a list of strings");
      return std::nullopt;
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < it->size(); ++i) {
      const ojson& w = (*it)[i];
      if (!w.is_string() || (!allow_empty_word && w.get_ref<const std::string&>().empty())) {
        // `[true]` is a YAML boolean: say what was read, so the fix (quotes) is plain.
        problem(pointer_child(pointer_child(pointer, key), i),
                fmt::format("must be a {}string, not {}", allow_empty_word ? "" : "non-empty ", w.dump()));
        continue;
      }
      out.push_back(w.get<std::string>());
    }
    return out;
  }

  std::optional<RiskLevel> risk(const ojson& object, const std::string& pointer) override {
    auto name = text(object, pointer, "risk");
    if (!name) return std::nullopt;
    std::string lower = *name;
    std::string upper = *name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // Lower or upper case, as the schema says ("LOW" in the seed's tables).
    auto level = *name == lower || *name == upper ? parse_risk_level(*name) : std::nullopt;
    if (!level) {
      problem(pointer_child(pointer, "risk"),
              fmt::format("'{}' is not a risk level: low, medium, high or critical{}", *name,
                          did_you_mean(lower, {"low", "medium", "high", "critical"})));
    }
    return level;
  }

 private:
  std::optional<JsonSchema> schema(const ojson& object, const std::string& pointer, const std::string& key,
                                   nlohmann::json* raw) {
    auto it = object.find(key);
    if (it == object.end()) return std::nullopt;
    if (!it->is_object()) {
      problem(pointer_child(pointer, key), "must be a JSON Schema (a mapping; {} allows anything)");
      return std::nullopt;
    }
    auto compiled = JsonSchema::parse(nlohmann::json(*it));
    if (!compiled) {
      problem(pointer_child(pointer, key), compiled.error().message);
      return std::nullopt;
    }
    if (raw) *raw = nlohmann::json(*it);
    return std::move(*compiled);
  }

  RegisteredTool read_tool(const std::string& name, const ojson& value, const std::string& pointer) {
    RegisteredTool tool;
    tool.name = name;
    if (!value.is_object()) {
      problem(pointer, "must be a mapping (command, status, risk, commands, ...)");
      return tool;
    }
    if (auto kind = text(value, pointer, "kind"); kind && *kind != "cli") {
      if (*kind == "mcp") {
        tool.kind = ToolKind::Mcp;
      } else {
        problem(pointer_child(pointer, "kind"), fmt::format("'{}' is not a kind: cli (the default) or mcp{}",
                                                            *kind, did_you_mean(*kind, {"cli", "mcp"})));
        return tool;
      }
    }
    if (tool.kind == ToolKind::Mcp) {
      only_keys(value, pointer, kMcpEntryKeys);
      for (const char* key : {"status", "risk"})
        if (!value.contains(key)) problem(pointer, fmt::format("missing `{}`", key), true);
    } else {
      only_keys(value, pointer,
                {"kind", "description", "command", "status", "safe_for_agents", "risk", "output_schema",
                 "commands"});
      for (const char* key : {"command", "status", "risk", "commands"})
        if (!value.contains(key)) problem(pointer, fmt::format("missing `{}`", key), true);
    }
    tool.description = text(value, pointer, "description").value_or("");
    if (auto command = words(value, pointer, "command", false)) {
      if (command->empty())
        problem(pointer_child(pointer, "command"), "must name at least the program to run");
      tool.command = std::move(*command);
      // A program path with a '/' is relative to the registry's folder; a bare name is looked up in PATH.
      if (!tool.command.empty() && !base_dir_.empty() && tool.command[0].find('/') != std::string::npos &&
          fs::path(tool.command[0]).is_relative())
        tool.command[0] = (base_dir_ / tool.command[0]).lexically_normal().string();
    }
    if (auto status = text(value, pointer, "status")) {
      if (auto parsed = parse_tool_status(*status)) {
        tool.status = *parsed;
      } else {
        std::vector<std::string> names;
        for (ToolStatus s : kStatuses) names.push_back(tool_status_name(s));
        problem(pointer_child(pointer, "status"),
                fmt::format("'{}' is not a status{}: {}", *status, did_you_mean(*status, names),
                            join(names, ", ")));
      }
    }
    if (auto it = value.find("safe_for_agents"); it != value.end()) {
      if (it->is_boolean())
        tool.safe_for_agents = it->get<bool>();
      else
        problem(pointer_child(pointer, "safe_for_agents"),
                fmt::format("must be true or false, not {}", it->dump()));
    }
    tool.risk = risk(value, pointer).value_or(RiskLevel::Low);
    if (tool.kind == ToolKind::Mcp) {
      read_mcp_server(*this, value, pointer, base_dir_, tool);
      return tool;
    }
    nlohmann::json tool_output;
    auto tool_contract = schema(value, pointer, "output_schema", &tool_output);

    auto commands = value.find("commands");
    if (commands == value.end()) return tool;
    if (!commands->is_object() || commands->empty()) {
      problem(pointer_child(pointer, "commands"),
              "must map sub-command names to sub-commands (at least one)");
      return tool;
    }
    for (const auto& [command_name, command_value] : commands->items()) {
      std::string command_pointer = pointer_child(pointer_child(pointer, "commands"), command_name);
      if (!is_executor_name(command_name))
        problem(command_pointer,
                "a sub-command name is letters, digits, '_', '.' and '-', starting with a letter or digit",
                true);
      ToolCommand command = read_command(command_name, command_value, command_pointer);
      if (command.output_schema.is_null() && tool_contract) {
        command.output_schema = tool_output;
        command.output_contract = *tool_contract;
      } else if (command.output_schema.is_null() && !value.contains("output_schema") &&
                 command_value.is_object() && !command_value.contains("output_schema")) {
        // An output_schema given but refused has its own problem: it is not missing too.
        problem(command_pointer,
                fmt::format("no output_schema (the JSON output contract): give one here or at "
                            "tools.{}.output_schema",
                            name));
      }
      tool.commands[command_name] = std::move(command);
    }
    return tool;
  }

  ToolCommand read_command(const std::string& name, const ojson& value, const std::string& pointer) {
    ToolCommand command;
    command.name = name;
    command.input_checker = *JsonSchema::parse(nlohmann::json::object());
    if (!value.is_object()) {
      problem(pointer, "must be a mapping (args, input_schema, output_schema, ...; {} for none)");
      return command;
    }
    only_keys(value, pointer,
              {"description", "argv", "args", "input_schema", "output_schema", "risk", "capabilities"});
    command.description = text(value, pointer, "description").value_or("");
    command.argv = words(value, pointer, "argv", true).value_or(std::vector<std::string>{});
    command.risk = risk(value, pointer);
    command.capabilities = words(value, pointer, "capabilities", false).value_or(std::vector<std::string>{});
    std::set<std::string> unique_capabilities(command.capabilities.begin(), command.capabilities.end());
    if (unique_capabilities.size() != command.capabilities.size())
      problem(pointer_child(pointer, "capabilities"), "lists a capability twice");
    if (auto checker = schema(value, pointer, "input_schema", &command.input_schema))
      command.input_checker = *checker;
    if (auto contract = schema(value, pointer, "output_schema", &command.output_schema))
      command.output_contract = *contract;
    read_args(value, pointer, command);
    return command;
  }

  void read_args(const ojson& value, const std::string& pointer, ToolCommand& command) {
    std::set<std::string> passed;
    if (auto it = value.find("args"); it != value.end()) {
      const std::string args_pointer = pointer_child(pointer, "args");
      if (!it->is_array()) {
        problem(args_pointer, "must be a list of {input: NAME, flag: --FLAG} and {word: WORD}");
      } else {
        for (std::size_t i = 0; i < it->size(); ++i)
          read_arg((*it)[i], pointer_child(args_pointer, i), command, passed);
      }
    }
    // What the argument schema names must reach the tool.
    const nlohmann::json& s = command.input_schema;
    std::set<std::string> declared;
    if (auto props = s.find("properties"); props != s.end() && props->is_object())
      for (const auto& [key, _] : props->items()) declared.insert(key);
    if (auto req = s.find("required"); req != s.end() && req->is_array())
      for (const auto& r : *req)
        if (r.is_string()) declared.insert(r.get<std::string>());
    // ...and what `args` passes must be allowed by it.
    if (auto extra = s.find("additionalProperties"); extra != s.end() && *extra == false) {
      for (const ToolArg& arg : command.args)
        if (!arg.word && !arg.input.empty() && !declared.contains(arg.input))
          problem(pointer_child(pointer, "input_schema"),
                  fmt::format("forbids input '{}' (additionalProperties: false), which `args` passes",
                              arg.input));
    }
    for (const auto& input : declared) {
      if (input == "command") {
        problem(pointer_child(pointer, "input_schema"),
                "`command` is the step's choice of sub-command, not an argument: "
                "leave it out of the schema");
      } else if (!passed.contains(input)) {
        problem(pointer_child(pointer, "input_schema"),
                fmt::format("declares input '{}' but no `args` entry passes it to the tool", input));
      }
    }
  }

  void read_arg(const ojson& arg, const std::string& pointer, ToolCommand& command,
                std::set<std::string>& passed) {
    if (!arg.is_object()) {
      problem(pointer, "must be a mapping: {input: NAME, flag: --FLAG} or {word: WORD}");
      return;
    }
    only_keys(arg, pointer, {"input", "flag", "joined", "word"}, false);
    ToolArg out;
    if (arg.contains("word")) {
      if (arg.size() != 1)
        problem(pointer, "a fixed `word` stands alone (no input, flag or joined beside it)");
      out.word = text(arg, pointer, "word");
      if (out.word) command.args.push_back(std::move(out));
      return;
    }
    auto input = text(arg, pointer, "input");
    if (!input) {
      if (!arg.contains("input"))
        problem(pointer,
                "missing `input` (the name of the step input it passes) or `word` (a fixed argv element)");
      return;
    }
    out.input = *input;
    if (!is_identifier(out.input)) {
      problem(pointer_child(pointer, "input"),
              fmt::format("'{}' is not an input name ([A-Za-z_][A-Za-z0-9_]*)", out.input));
    } else if (out.input == "command") {
      problem(pointer_child(pointer, "input"), "`command` names the sub-command; it cannot be an argument");
    } else if (!passed.insert(out.input).second) {
      problem(pointer_child(pointer, "input"), fmt::format("input '{}' is passed twice", out.input));
    }
    if (auto flag = text(arg, pointer, "flag")) {
      if (flag->empty())
        problem(pointer_child(pointer, "flag"), "must not be empty (leave it out for a positional argument)");
      out.flag = *flag;
    }
    if (auto it = arg.find("joined"); it != arg.end()) {
      if (!it->is_boolean())
        problem(pointer_child(pointer, "joined"), "must be true or false");
      else
        out.joined = it->get<bool>();
      if (out.joined && out.flag.empty())
        problem(pointer_child(pointer, "joined"), "needs a `flag` to join the value to");
    }
    command.args.push_back(std::move(out));
  }

  std::string file_;
  const RegistryPlaces& places_;
  fs::path base_dir_;
  std::vector<std::pair<int, std::string>> problems_;
};

// The schema's own violations ("/tools/jq/status: Failed to match ... (value: \"x\")"), with lines.
std::vector<std::string> schema_problems(const nlohmann::json& doc, const std::string& file,
                                         const RegistryPlaces& places) {
  static const Expected<JsonSchema> schema =
      JsonSchema::parse(nlohmann::json::parse(tool_registry_schema_text()));
  if (!schema)
    return {fmt::format("{}: the built-in registry schema is broken: {}", file, schema.error().message)};
  std::vector<std::string> out;
  for (const std::string& v : schema->validate(doc)) {
    std::string pointer;
    std::string message = v;
    if (v.starts_with("/")) {
      auto colon = v.find(": ");
      pointer = v.substr(0, colon);
      message = colon == std::string::npos ? v : v.substr(colon + 2);
    } else if (v.starts_with("(root): ")) {
      message = v.substr(8);
    }
    const RegistryPlaces::Place* place = places.find(pointer);
    int line = place ? place->value_line : 0;
    std::string field = field_of_pointer(pointer);
    out.push_back(line > 0 ? fmt::format("{}:{}: {}: {}", file, line, field, message)
                           : fmt::format("{}: {}: {}", file, field, message));
  }
  return out;
}

}  // namespace

const char* tool_status_name(ToolStatus status) {
  switch (status) {
    case ToolStatus::Planned:
      return "planned";
    case ToolStatus::InProgress:
      return "in_progress";
    case ToolStatus::DryRunValidated:
      return "dry_run_validated";
    case ToolStatus::ProdReady:
      return "prod_ready";
    case ToolStatus::Pending:
      return "pending";
  }
  return "planned";
}

std::optional<ToolStatus> parse_tool_status(std::string_view name) {
  for (ToolStatus s : kStatuses)
    if (name == tool_status_name(s)) return s;
  return std::nullopt;
}

const ToolCommand* RegisteredTool::find_command(const std::string& command_name) const {
  auto it = commands.find(command_name);
  return it == commands.end() ? nullptr : &it->second;
}

std::vector<std::string> RegisteredTool::command_names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : commands) out.push_back(n);
  return out;
}

bool RegisteredTool::selectable() const {
  return safe_for_agents && (status == ToolStatus::DryRunValidated || status == ToolStatus::ProdReady);
}

const RegisteredTool* ToolRegistry::find(const std::string& name) const {
  auto it = tools.find(name);
  return it == tools.end() ? nullptr : &it->second;
}

std::optional<std::pair<const RegisteredTool*, std::string>> ToolRegistry::find_mcp(
    const std::string& name) const {
  if (tools.contains(name)) return std::nullopt;
  const auto dot = name.find('.');
  if (dot == std::string::npos) return std::nullopt;
  const RegisteredTool* server = find(name.substr(0, dot));
  if (server == nullptr || server->kind != ToolKind::Mcp) return std::nullopt;
  return std::make_pair(server, name.substr(dot + 1));
}

std::vector<std::string> ToolRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : tools) out.push_back(n);
  return out;
}

Expected<ToolRegistry> parse_tool_registry(const std::string& text, const std::string& file,
                                           const fs::path& base_dir) {
  detail::DocNode root;
  if (file.ends_with(".json")) {
    auto doc = detail::read_json_doc(text);
    if (!doc)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("{}:{}: JSON syntax error: {}", file, doc.error().line, doc.error().message));
    root = std::move(*doc);
  } else {
    auto doc = detail::read_yaml_doc(text);
    if (!doc)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("{}:{}: YAML syntax error: {}", file, doc.error().line, doc.error().message));
    root = std::move(*doc);
  }
  RegistryPlaces places;
  places.collect(root, "", "", root.line);
  RegistryReader reader(file, places, base_dir);
  ToolRegistry registry = reader.read(yaml_to_ordered_json(root));
  registry.file = file;
  std::vector<std::pair<int, std::string>> found;
  for (const auto& [line, d] : places.duplicates) found.emplace_back(line, fmt::format("{}:{}", file, d));
  found.insert(found.end(), reader.problems().begin(), reader.problems().end());
  // In file order, so a person can work down the list.
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> problems;
  for (auto& [line, message] : found) problems.push_back(std::move(message));
  if (problems.empty()) problems = schema_problems(yaml_to_json(root), file, places);
  if (!problems.empty()) return fail(ErrorCode::InvalidInput, join(problems, "\n"));
  return registry;
}

Expected<ToolRegistry> load_tool_registry(const fs::path& file) {
  // A folder is named as one, not read as an empty registry.
  std::error_code dir_ec;
  if (fs::is_directory(file, dir_ec))
    return fail(ErrorCode::NotFound,
                fmt::format("{}: cannot read the tool registry: is a folder, not a file", file.string()));
  // Held to the limit the other configuration files have (a registry path that
  // is a stream, /dev/zero, stops there).
  auto text = read_file_text(file);
  if (!text) {
    std::string why = text.error().message;
    if (why.starts_with(file.string() + ": ")) why.erase(0, file.string().size() + 2);
    if (why.starts_with("cannot open: ")) why.erase(0, std::string_view("cannot open: ").size());
    return fail(ErrorCode::NotFound,
                fmt::format("{}: cannot read the tool registry: {}", file.string(), why));
  }
  fs::path base = file.parent_path();
  if (base.empty()) base = ".";
  std::error_code ec;
  fs::path absolute_base = fs::absolute(base, ec);
  return parse_tool_registry(*text, file.string(), ec ? base : absolute_base);
}

}  // namespace orch
