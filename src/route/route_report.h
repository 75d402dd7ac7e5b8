// route/route_report.h — what `orch route` reports: the routing (route_request.h)
// and the classification (classify.h) of one request, as the skill-output
// contract (skill_output.h, skill_name "orch route") or as text for people.
//
// One answer: the route is decided when the request type and the domain (seed
// 004's intent) are, and undecided otherwise; every field says the same. The
// seed 000 classification is reported beside it and is no part of the verdict.
// Decided: status "success", error null, data.decided true (exit 0). Undecided:
// status "partial", error {code "route_undecided", message: each part's field
// and reason, recoverable: true (a clearer request decides it)}, data.decided
// false with the same reasons in data.undecided (exit 3: a person must say
// more). --dry-run only makes the status "dry_run"; the rest is the same.
// intent.decided covers seed 004's intent alone (its type and domain), and
// classification.ambiguous the seed 000 intent alone. Nothing is ever run
// (a route decides, it does not execute), so tokens_used is 0 and run_id null.
// The capability gate is asked without recall: model_need is "none" for a trivial
// request a registry tool covers, else "required" (cache-first needs the recall
// index, which `orch task` consults).
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "exec/tool_registry.h"
#include "orch/error.h"
#include "route/classify.h"
#include "route/route_request.h"
#include "route/tables.h"

namespace orch::route {

constexpr const char* kRouteSkillName = "orch route";

// What a route must decide — seed 004's request type and domain — named by the
// report field that holds it. The seed 000 classification (the kind of work:
// bug_fix, feature, ...) is reported beside the route, ambiguous or not, but is
// not part of its verdict: a query or a watch request is no kind of work, and
// the seed's own example ("liste les repos Claude") names none.
enum class RoutePart { RequestType, Domain };
const char* route_part_field(RoutePart part);  // "intent.type", "intent.domain"

struct UndecidedPart {
  RoutePart part;
  std::string reason;
  std::string text() const;  // "intent.domain: no domain word in the request"
};

struct RouteReport {
  std::string request;
  RouteDecision decision;
  Classification classification;
  ModelNeed model_need = ModelNeed::Required;
  std::string strategy;
  std::vector<std::string> pipeline;
  std::vector<TableSource> tables;
  bool dry_run = false;

  // What could not be decided (request type, domain), one reason each.
  std::vector<UndecidedPart> undecided() const;
  bool decided() const { return undecided().empty(); }
  std::string status() const;  // "success", "partial" or "dry_run"
  std::string summary() const;
};

Expected<RouteReport> make_route_report(const RouteTables& tables, const ToolRegistry* registry,
                                        std::string_view request, bool dry_run);

// The skill-output document; `timestamp` as skill_output_skeleton wants it.
nlohmann::ordered_json route_report_json(const RouteReport& report, std::string_view timestamp);

// The report for people: one labelled line per finding.
std::string format_route_report(const RouteReport& report);

}  // namespace orch::route
