#include "route/route_report.h"

#include <fmt/format.h>

#include <cmath>

#include "route/skill_output.h"
#include "util/strings.h"

namespace orch::route {

namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kUnknown = "unknown";

double rounded(double confidence) {
  return std::round(confidence * 1000.0) / 1000.0;
}

ojson scores_json(const std::vector<LabelScore>& scores) {
  ojson out = ojson::array();
  for (const auto& s : scores)
    out.push_back({{"name", s.name},
                   {"confidence", rounded(s.confidence)},
                   {"weight", s.weight},
                   {"matched", s.matched}});
  return out;
}

std::vector<std::string> texts(const std::vector<UndecidedPart>& parts) {
  std::vector<std::string> out;
  for (const auto& u : parts) out.push_back(u.text());
  return out;
}

ojson intent_json(const RouteDecision& d, const std::vector<UndecidedPart>& undecided) {
  // Seed 004's intent: its type and domain, whose verdict is the route's.
  ojson j = ojson::object();
  j["type"] = d.request_type.decided() ? d.request_type.name : kUnknown;
  j["confidence"] = rounded(d.request_type.confidence);
  j["type_reason"] = d.request_type.reason;
  j["types"] = scores_json(d.request_type.scores);
  j["domain"] = d.domain.decided() ? d.domain.name : kUnknown;
  j["domain_confidence"] = rounded(d.domain.confidence);
  j["domain_reason"] = d.domain.reason;
  j["domains"] = scores_json(d.domain.scores);
  j["decided"] = undecided.empty();
  j["undecided"] = texts(undecided);
  return j;
}

ojson routing_json(const ToolRoute& t) {
  ojson j = ojson::object();
  j["match"] = t.chosen ? "tool" : "no_match";
  j["selected_tool"] = t.chosen ? ojson(t.tool) : ojson(nullptr);
  j["tool_type"] = t.chosen ? ojson("cli") : ojson(nullptr);
  j["command"] = t.chosen ? ojson(t.command) : ojson(nullptr);
  j["capability"] = t.chosen ? ojson(t.capability) : ojson(nullptr);
  j["registry_status"] = t.chosen ? ojson(t.status) : ojson(nullptr);
  j["risk"] = t.chosen ? ojson(t.risk) : ojson(nullptr);
  j["capabilities_named"] = t.named;
  j["fallback"] = t.chosen ? ojson(nullptr) : ojson("model");
  j["reason"] = t.reason;
  return j;
}

ojson budget_json(const RouteDecision& d) {
  if (!d.budget) return nullptr;
  const BudgetAllocation& b = *d.budget;
  return {{"request_type", b.request_type},
          {"allocated", b.allocated},
          {"safety_buffer", b.safety_buffer},
          {"effective", b.effective_budget},
          {"input_estimated", b.input_estimated},
          {"input_chars", b.input_chars},
          {"used", 0}};
}

ojson classification_json(const RouteReport& r) {
  const Classification& c = r.classification;
  ojson scores = ojson::array();
  for (const auto& s : c.scores)
    scores.push_back({{"intent", s.intent}, {"hits", s.hits}, {"matched", s.matched}});
  ojson verify = ojson::array();
  for (const auto& item : c.verify) {
    ojson v = {{"check", item.check}};
    if (item.attest)
      v["attest"] = true;
    else
      v["command"] = item.command;
    verify.push_back(std::move(v));
  }
  ojson j = ojson::object();
  j["intent"] = c.ambiguous ? ojson(nullptr) : ojson(c.intent);
  j["ambiguous"] = c.ambiguous;
  j["intent_reason"] = c.intent_reason;
  j["scores"] = scores;
  j["complexity"] = c.complexity;
  j["complexity_reasons"] = c.complexity_reasons;
  j["word_count"] = c.word_count;
  j["model_need"] = model_need_name(r.model_need);
  j["strategy"] = r.strategy;
  j["pipeline"] = r.pipeline;
  j["engines"] = c.engines;
  j["recall_tags"] = c.recall_tags;
  j["budget_tokens"] = c.budget_tokens;
  j["verify"] = verify;
  return j;
}

std::string confidence_text(double c) {
  return fmt::format("{:.2f}", c);
}

}  // namespace

const char* route_part_field(RoutePart part) {
  switch (part) {
    case RoutePart::RequestType:
      return "intent.type";
    case RoutePart::Domain:
      return "intent.domain";
  }
  return "intent.type";
}

std::string UndecidedPart::text() const {
  return fmt::format("{}: {}", route_part_field(part), reason);
}

std::vector<UndecidedPart> RouteReport::undecided() const {
  std::vector<UndecidedPart> out;
  if (!decision.request_type.decided()) out.push_back({RoutePart::RequestType, decision.request_type.reason});
  if (!decision.domain.decided()) out.push_back({RoutePart::Domain, decision.domain.reason});
  return out;
}

std::string RouteReport::status() const {
  if (dry_run) return "dry_run";
  return decided() ? "success" : "partial";
}

std::string RouteReport::summary() const {
  const RouteDecision& d = decision;
  const std::vector<UndecidedPart> u = undecided();
  std::string s = u.empty() ? "decided: " : fmt::format("undecided ({}): ", join(texts(u), "; "));
  s += fmt::format(
      "{} request, domain {}", d.request_type.decided() ? d.request_type.name : kUnknown,
      d.domain.decided() ? fmt::format("{} ({})", d.domain.name, confidence_text(d.domain.confidence))
                         : std::string(kUnknown));
  s += d.tool.chosen ? fmt::format(" -> tool {} {}", d.tool.tool, d.tool.command) : " -> no tool (a model)";
  if (d.budget) s += fmt::format(", effective budget {} tokens", d.budget->effective_budget);
  s += fmt::format("; intent {}, {}, {}", classification.ambiguous ? "ambiguous" : classification.intent,
                   classification.complexity, strategy);
  if (dry_run) s += "; dry run: nothing was run";
  return s;
}

Expected<RouteReport> make_route_report(const RouteTables& tables, const ToolRegistry* registry,
                                        std::string_view request, bool dry_run) {
  RouteReport r;
  r.request = std::string(request);
  r.decision = ORCH_TRY(route_request(tables, registry, request));
  r.classification = classify(tables, request);
  r.model_need = model_need(false, r.classification.complexity, r.decision.tool.chosen);
  r.strategy = strategy_for(tables, r.classification.complexity, r.model_need);
  r.pipeline = pipeline_for(tables, r.strategy);
  r.tables = tables.sources;
  r.dry_run = dry_run;
  return r;
}

ojson route_report_json(const RouteReport& r, std::string_view timestamp) {
  const std::vector<UndecidedPart> undecided = r.undecided();
  ojson doc = skill_output_skeleton(kRouteSkillName, r.status(), timestamp);
  ojson tables = ojson::array();
  for (const auto& t : r.tables)
    tables.push_back({{"name", t.name}, {"file", t.file}, {"overridden", t.overridden}});
  ojson data = ojson::object();
  data["request"] = r.request;
  data["decided"] = undecided.empty();
  data["undecided"] = texts(undecided);
  data["intent"] = intent_json(r.decision, undecided);
  data["routing"] = routing_json(r.decision.tool);
  data["token_budget"] = budget_json(r.decision);
  if (!r.decision.budget) data["token_budget_reason"] = r.decision.budget_reason;
  data["classification"] = classification_json(r);
  data["tables"] = tables;
  doc["output"] = {{"summary", r.summary()}, {"data", data}};
  if (!undecided.empty())
    doc["error"] = skill_output_error("route_undecided", join(texts(undecided), "; "), true, std::nullopt);
  return doc;
}

std::string format_route_report(const RouteReport& r) {
  const RouteDecision& d = r.decision;
  const Classification& c = r.classification;
  std::string out;
  auto line = [&out](std::string_view label, const std::string& text) {
    out += fmt::format("{:<13} {}\n", label, text);
  };
  auto others = [](const LabelChoice& choice) {
    std::vector<std::string> parts;
    for (const auto& s : choice.scores)
      parts.push_back(fmt::format("{} {}", s.name, confidence_text(s.confidence)));
    return parts.empty() ? std::string() : fmt::format(" [scored: {}]", join(parts, ", "));
  };
  line("request type", (d.request_type.decided()
                            ? fmt::format("{} ({}): {}", d.request_type.name,
                                          confidence_text(d.request_type.confidence), d.request_type.reason)
                            : fmt::format("unknown: {}", d.request_type.reason)) +
                           others(d.request_type));
  line("domain", (d.domain.decided() ? fmt::format("{} ({}): {}", d.domain.name,
                                                   confidence_text(d.domain.confidence), d.domain.reason)
                                     : fmt::format("unknown (0.00): {}", d.domain.reason)) +
                     others(d.domain));
  line("tool", d.tool.chosen ? fmt::format("{} {}: {}", d.tool.tool, d.tool.command, d.tool.reason)
                             : fmt::format("none, a model would do it: {}", d.tool.reason));
  if (d.budget) {
    const BudgetAllocation& b = *d.budget;
    line("budget",
         fmt::format("{}: allocated {}, safety buffer {}, effective {}; input ~{} tokens (estimated from {} "
                     "characters)",
                     b.request_type, b.allocated, b.safety_buffer, b.effective_budget, b.input_estimated,
                     b.input_chars));
  } else {
    line("budget", d.budget_reason);
  }
  line("intent",
       c.ambiguous ? "ambiguous: " + c.intent_reason : fmt::format("{}: {}", c.intent, c.intent_reason));
  line("complexity",
       fmt::format("{} ({}; {} words)", c.complexity, join(c.complexity_reasons, ", "), c.word_count));
  line("strategy",
       fmt::format("{} (model {}): {}", r.strategy, model_need_name(r.model_need), join(r.pipeline, " -> ")));
  line("tokens", fmt::format("{} for the task", c.budget_tokens));
  if (!c.engines.empty()) line("engines", join(c.engines, ", "));
  if (!c.recall_tags.empty()) line("recall tags", join(c.recall_tags, ", "));
  if (!c.verify.empty()) {
    std::size_t commands = 0;
    for (const auto& item : c.verify) commands += item.attest ? 0 : 1;
    line("verify", fmt::format("{} checks ({} attested, {} by command)", c.verify.size(),
                               c.verify.size() - commands, commands));
  }
  const std::vector<UndecidedPart> undecided = r.undecided();
  std::string status = r.status();
  if (!undecided.empty()) status += ": undecided " + join(texts(undecided), "; ");
  if (r.dry_run)
    status +=
        (undecided.empty() ? ": " : "; ") + std::string("nothing was run (a route never runs anything)");
  line("status", status);
  return out;
}

}  // namespace orch::route
