#include "route/route_request.h"

#include <fmt/format.h>

#include "route/words.h"

namespace orch::route {

Expected<RouteDecision> route_request(const RouteTables& tables, const ToolRegistry* registry,
                                      std::string_view request) {
  const std::vector<std::string> words = words_of(request);
  RouteDecision d;
  d.request_type = request_type_of(tables, words);
  d.domain = domain_of(tables, words);
  d.tool = route_to_tool(registry, words);
  if (d.request_type.decided()) {
    d.budget = ORCH_TRY(allocate_budget(tables, d.request_type.name, request));
  } else {
    d.budget_reason = fmt::format("no allocation: the request type is undecided ({})", d.request_type.reason);
  }
  return d;
}

}  // namespace orch::route
