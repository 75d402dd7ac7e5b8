// cli/completion_tree.cc — the CLI11 App tree read into CompletionCommands.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "cli/completion.h"
#include "util/strings.h"

namespace orch::cli {

namespace {

bool mentions(std::string_view text, std::string_view word) {
  return ascii_lower(text).find(word) != std::string::npos;
}

// The value an option or positional takes, from what CLI11 knows of it: a set of
// choices (CLI::IsMember makes its type name "TEXT:{pass,fail}"), a number, a
// folder (its description says so), else a file, as a shell completes by default.
CompletionValue value_of(const CLI::Option& option) {
  const std::string type = option.get_type_name();
  CompletionValue value;
  if (auto open = type.find('{'), close = type.rfind('}');
      open != std::string::npos && close != std::string::npos && close > open) {
    value.kind = CompletionValue::Kind::Choice;
    std::string_view list = std::string_view(type).substr(open + 1, close - open - 1);
    while (!list.empty()) {
      const std::size_t comma = std::min(list.find(','), list.size());
      std::string_view item = list.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty()) value.choices.emplace_back(item);
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
    return value;
  }
  if (type.starts_with("INT") || type.starts_with("UINT") || type.starts_with("FLOAT") ||
      type.starts_with("NUMBER")) {
    value.kind = CompletionValue::Kind::Nothing;
  } else if (mentions(option.get_description(), "folder") ||
             mentions(option.get_description(), "directory")) {
    value.kind = CompletionValue::Kind::Directory;
  }
  return value;
}

void add_command(const CLI::App& app, const std::string& path, std::vector<CompletionCommand>& tree) {
  CompletionCommand command;
  command.path = path;
  command.description = app.get_description();
  // Options of option groups (unnamed sub-Apps) belong to this command.
  std::vector<const CLI::App*> holders = {&app};
  std::vector<const CLI::App*> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name().empty())
      holders.push_back(sub);
    else if (!sub->get_group().empty())
      subcommands.push_back(sub);
  }
  for (const CLI::App* holder : holders) {
    for (const CLI::Option* option : holder->get_options({})) {
      if (option->get_group().empty()) continue;  // hidden
      if (!option->nonpositional()) {
        const CompletionValue value = value_of(*option);
        if (!command.has_positionals || value.kind == CompletionValue::Kind::Choice)
          command.positional = value;
        command.has_positionals = true;
        continue;
      }
      CompletionOption o;
      for (const std::string& s : option->get_snames()) o.names.push_back("-" + s);
      for (const std::string& l : option->get_lnames()) o.names.push_back("--" + l);
      o.description = option->get_description();
      o.takes_value = option->get_items_expected_max() > 0;
      if (o.takes_value) o.value = value_of(*option);
      command.options.push_back(std::move(o));
    }
  }
  for (const CLI::App* sub : subcommands)
    command.subcommands.emplace_back(sub->get_name(), sub->get_description());
  tree.push_back(std::move(command));
  for (const CLI::App* sub : subcommands) add_command(*sub, path + " " + sub->get_name(), tree);
}

}  // namespace

std::string with_program(std::string_view script, std::string_view program) {
  std::string out;
  for (std::size_t at = 0;;) {
    const std::size_t mark = script.find("@@", at);
    out += script.substr(at, mark == std::string_view::npos ? std::string_view::npos : mark - at);
    if (mark == std::string_view::npos) return out;
    out += program;
    at = mark + 2;
  }
}

std::vector<CompletionCommand> completion_tree(const CLI::App& root) {
  std::vector<CompletionCommand> tree;
  add_command(root, root.get_name(), tree);
  return tree;
}

std::string completion_value_word(const CompletionValue& value) {
  switch (value.kind) {
    case CompletionValue::Kind::File:
      return "@file";
    case CompletionValue::Kind::Directory:
      return "@dir";
    case CompletionValue::Kind::Nothing:
      return "@none";
    case CompletionValue::Kind::Choice:
      break;
  }
  return join(value.choices, " ");
}

std::vector<std::pair<std::string, std::string>> option_value_cases(
    const std::vector<CompletionCommand>& tree) {
  std::vector<std::pair<std::string, std::string>> cases;
  for (const CompletionCommand& c : tree) {
    std::map<std::string, std::vector<std::string>> by_value;  // value word -> "PATH OPTION" patterns
    for (const CompletionOption& o : c.options)
      if (o.takes_value)
        for (const std::string& name : o.names)
          by_value[completion_value_word(o.value)].push_back(c.path + " " + name);
    for (const auto& [value, patterns] : by_value) {
      std::string alternatives;
      for (const std::string& p : patterns)
        alternatives += (alternatives.empty() ? "" : "|") + shell_quote(p);
      cases.emplace_back(std::move(alternatives), value);
    }
  }
  return cases;
}

}  // namespace orch::cli
