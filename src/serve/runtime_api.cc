// The routes of task traces, reviews and cycle runs. See runtime_api.h.
#include "serve/runtime_api.h"

#include <fmt/format.h>

#include "cli/cycle_report.h"
#include "orch/report.h"

namespace orch::serve {

namespace {

// A document the store keeps as text, parsed (a damaged one is said, not hidden).
nlohmann::ordered_json document(const std::string& text) {
  auto doc = nlohmann::ordered_json::parse(text, nullptr, false);
  if (doc.is_discarded()) return {{"error", "the ledger's document for this record is not valid JSON"}};
  return doc;
}

Reply not_found(const char* what, const std::string& id) {
  return json_reply({{"error", fmt::format("no {} '{}' in the ledger", what, id)}}, 404);
}

}  // namespace

Reply RuntimeApi::traces() {
  auto all = ledger_.traces().list_traces();
  if (!all) return error_reply(all.error());
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const TraceRecord& t : *all)
    out.push_back({{"id", t.id},
                   {"request", t.request},
                   {"project", t.project},
                   {"state", t.state},
                   {"status", trace_status_name(t.status)},
                   {"run_id", t.run_id},
                   {"created_at", iso_time(t.created_at)},
                   {"updated_at", iso_time(t.updated_at)},
                   {"closed_at", iso_time(t.closed_at)}});
  return json_reply(out);
}

Reply RuntimeApi::trace(const std::string& id) {
  auto found = ledger_.traces().find_trace(id);
  if (!found) return error_reply(found.error());
  if (!*found) return not_found("task trace", id);
  auto events = ledger_.traces().trace_events(id);
  if (!events) return error_reply(events.error());
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const TraceEventRecord& e : *events) {
    auto data = nlohmann::ordered_json::parse(e.data_json, nullptr, false);
    list.push_back({{"seq", e.seq},
                    {"ts", iso_time(e.ts)},
                    {"kind", e.kind},
                    {"state", e.state},
                    {"data", data.is_discarded() ? nlohmann::ordered_json(e.data_json) : data}});
  }
  return json_reply({{"trace", document((*found)->doc_json)}, {"events", list}});
}

Reply RuntimeApi::reviews() {
  auto all = ledger_.reviews().list_reviews();
  if (!all) return error_reply(all.error());
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ReviewRecord& r : *all)
    out.push_back({{"id", r.id},
                   {"name", r.name},
                   {"status", review_status_name(r.status)},
                   {"verdict", r.verdict},
                   {"rounds", r.rounds},
                   {"created_at", iso_time(r.created_at)},
                   {"updated_at", iso_time(r.updated_at)}});
  return json_reply(out);
}

Reply RuntimeApi::review(const std::string& id) {
  auto found = ledger_.reviews().find_review(id);
  if (!found) return error_reply(found.error());
  if (!*found) return not_found("review", id);
  return json_reply(document((*found)->doc_json));
}

Reply RuntimeApi::cycles() {
  auto all = ledger_.cycles().list_cycles();
  if (!all) return error_reply(all.error());
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const CycleRecord& c : *all)
    out.push_back({{"id", c.id},
                   {"name", c.name},
                   {"status", cycle_status_name(c.status)},
                   {"cycles", c.cycles},
                   {"created_at", iso_time(c.created_at)},
                   {"updated_at", iso_time(c.updated_at)}});
  return json_reply(out);
}

Reply RuntimeApi::cycle(const std::string& id) {
  auto found = ledger_.cycles().find_cycle(id);
  if (!found) return error_reply(found.error());
  if (!*found) return not_found("cycle run", id);
  auto status = cli::cycle_status_json(**found);
  if (!status) return error_reply(status.error());
  auto audit = cli::cycle_audit_json(**found, ledger_.cycles());
  if (!audit) return error_reply(audit.error());
  nlohmann::ordered_json out;
  out["status"] = nlohmann::ordered_json::parse(status->dump());
  out["audit"] = nlohmann::ordered_json::parse(audit->dump());
  out["run"] = document((*found)->doc_json);
  return json_reply(out);
}

}  // namespace orch::serve
