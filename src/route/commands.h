// route/commands.h — seed 004's own commands: "/tk:route", "/tk:chain", ... .
//
// Seed 004 gives the orchestrator "absolute priority on every /tk:* command". A
// request whose first non-blank text is the table's prefix (requests.yaml
// `commands.prefix`, "/tk:", matched without regard to ASCII case) followed by a
// name is a command: its domain is the table's `commands.domain` (system) with
// confidence 1, whatever domain words follow, and a command the table lists with
// a request type has that type with confidence 1. A name the table does not list
// is still a command (the priority is on any /tk:*); its request type is scored
// from the words as usual. Words never make a command: "tk route" is not one.
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "route/domains.h"
#include "route/tables.h"

namespace orch::route {

struct CommandMatch {
  std::string text;                   // "/tk:budget-check", the name lower-cased
  std::string name;                   // "budget-check"
  const CommandSpec* spec = nullptr;  // null: a name the table does not list
};

std::optional<CommandMatch> find_command(const CommandTable& table, std::string_view request);

// The command's domain: the table's, decided with confidence 1.
LabelChoice command_domain(const CommandTable& table, const CommandMatch& command);

// The request type the table gives the command; nullopt when it gives none.
std::optional<LabelChoice> command_request_type(const CommandMatch& command);

}  // namespace orch::route
