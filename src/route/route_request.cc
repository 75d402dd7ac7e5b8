#include "route/route_request.h"

#include <fmt/format.h>

#include "route/commands.h"
#include "route/words.h"

namespace orch::route {

Expected<RouteDecision> route_request(const RouteTables& tables, const ToolRegistry* registry,
                                      std::string_view request) {
  const std::vector<std::string> words = words_of(request);
  RouteDecision d;
  // A command ("/tk:route ...") has absolute priority: its domain, and its
  // request type when the table gives one, are not read from the words.
  if (auto command = find_command(tables.requests.commands, request)) {
    d.domain = command_domain(tables.requests.commands, *command);
    auto type = command_request_type(*command);
    d.request_type = type ? std::move(*type) : request_type_of(tables, words);
  } else {
    d.request_type = request_type_of(tables, words);
    d.domain = domain_of(tables, words);
  }
  d.tool = route_to_tool(registry, words);
  if (d.request_type.decided()) {
    d.budget = ORCH_TRY(allocate_budget(tables, d.request_type.name, request));
  } else {
    d.budget_reason = fmt::format("no allocation: the request type is undecided ({})", d.request_type.reason);
  }
  return d;
}

}  // namespace orch::route
