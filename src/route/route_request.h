// route/route_request.h — `orch route`: a request's type, domain, tool and budget (seed 004).
//
// Puts together commands.h (a /tk: command: absolute priority), domains.h
// (request type and domain, each with its confidence),
// tool_route.h (the registry tool, CLI-first) and budget_allocation.h (the
// allocation for the request type). Runs nothing. When the request type is
// undecided there is no allocation: orch does not guess a type to budget for.
//
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exec/tool_registry.h"
#include "orch/error.h"
#include "route/budget_allocation.h"
#include "route/domains.h"
#include "route/tables.h"
#include "route/tool_route.h"

namespace orch::route {

struct RouteDecision {
  LabelChoice request_type;  // name empty: undecided (reported as "unknown")
  LabelChoice domain;        // name empty: no domain (reported as "unknown", confidence 0)
  ToolRoute tool;            // chosen, or none with the reason (the caller falls back to a model)
  std::optional<BudgetAllocation> budget;  // none when the request type is undecided
  std::string budget_reason;               // why there is no allocation

  bool decided() const { return request_type.decided() && domain.decided(); }
};

// `registry` may be null (no registry: no tool is chosen, and the reason says so).
Expected<RouteDecision> route_request(const RouteTables& tables, const ToolRegistry* registry,
                                      std::string_view request);

}  // namespace orch::route
