#include "route/commands.h"

#include <fmt/format.h>

#include <algorithm>

namespace orch::route {

namespace {

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool is_name_char(char c) {
  c = lower(c);
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Decided with confidence 1: a command is not a guess from words.
LabelChoice certain(const std::string& name, const CommandMatch& command, std::string reason) {
  LabelChoice choice;
  choice.name = name;
  choice.confidence = 1.0;
  choice.scores.push_back(LabelScore{name, 0.0, 1.0, {command.text}});
  choice.reason = std::move(reason);
  return choice;
}

}  // namespace

std::optional<CommandMatch> find_command(const CommandTable& table, std::string_view request) {
  if (table.prefix.empty()) return std::nullopt;
  std::size_t at = 0;
  while (at < request.size() && is_blank(request[at])) ++at;
  std::string_view rest = request.substr(at);
  if (rest.size() <= table.prefix.size()) return std::nullopt;
  for (std::size_t i = 0; i < table.prefix.size(); ++i)
    if (lower(rest[i]) != lower(table.prefix[i])) return std::nullopt;
  std::size_t end = table.prefix.size();
  while (end < rest.size() && is_name_char(rest[end])) ++end;
  if (end == table.prefix.size() || (end < rest.size() && !is_blank(rest[end]))) return std::nullopt;
  CommandMatch m;
  for (char c : rest.substr(table.prefix.size(), end - table.prefix.size())) m.name += lower(c);
  m.text = table.prefix + m.name;
  auto it = std::find_if(table.commands.begin(), table.commands.end(),
                         [&](const CommandSpec& c) { return c.name == m.name; });
  if (it != table.commands.end()) m.spec = &*it;
  return m;
}

LabelChoice command_domain(const CommandTable& table, const CommandMatch& command) {
  return certain(table.domain, command,
                 fmt::format("'{}' is a {} command{} (requests.yaml commands): absolute priority over the "
                             "domain words (seed 004)",
                             command.text, table.prefix, command.spec ? "" : " the table does not list"));
}

std::optional<LabelChoice> command_request_type(const CommandMatch& command) {
  if (!command.spec || command.spec->request_type.empty()) return std::nullopt;
  return certain(command.spec->request_type, command,
                 fmt::format("'{}' is a {} command (requests.yaml commands)", command.text,
                             command.spec->request_type));
}

}  // namespace orch::route
