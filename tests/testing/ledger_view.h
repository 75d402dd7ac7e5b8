// testing/ledger_view.h — what the CLI says of a ledger, for the black-box tests.
//
// The CLI tests read runs, steps, attempts and events as a user does: through
// `orch status --json`, `orch runs --json`, `orch events --json` and `orch logs
// --json`, never by SQL on the ledger's file, so what they check holds for any
// ledger backend. (The few tests whose subject is the SQLite file itself use
// testing/sqlite_ledger.h, which says so.)
#pragma once

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/testing.h"

namespace orch::testing {

// `orch ARGS` run in `dir`, its stdout parsed; null when orch failed (no ledger
// yet, an unknown run) or printed no JSON.
inline nlohmann::json orch_json(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  const CommandResult r = run_orch(args, dir);
  if (r.exit_code != 0) return nullptr;
  nlohmann::json doc = nlohmann::json::parse(r.out, nullptr, false);
  return doc.is_discarded() ? nlohmann::json() : doc;
}

// The run report, `orch status [RUN_ID] --json [MORE...]`: the newest run when
// `run_id` is empty; null when there is none.
inline nlohmann::json run_report(const std::filesystem::path& dir, const std::string& run_id = "",
                                 const std::vector<std::string>& more = {}) {
  std::vector<std::string> args{"status"};
  if (!run_id.empty()) args.push_back(run_id);
  args.push_back("--json");
  args.insert(args.end(), more.begin(), more.end());
  return orch_json(args, dir);
}

// `orch runs --json`: the runs, newest first; empty when there is no ledger yet.
inline nlohmann::json run_list(const std::filesystem::path& dir) {
  nlohmann::json runs = orch_json({"runs", "--json"}, dir);
  return runs.is_array() ? runs : nlohmann::json::array();
}

// How many runs `orch runs --json` lists whose `key` is `value` ("status", "succeeded").
inline int runs_where(const std::filesystem::path& dir, const std::string& key, const nlohmann::json& value) {
  int n = 0;
  for (const auto& run : run_list(dir)) n += run.value(key, nlohmann::json()) == value ? 1 : 0;
  return n;
}

// `orch events [RUN_ID] --json [--kind KIND]`: the run's events in order (the
// newest run's when `run_id` is empty); empty when there is no such run yet.
inline nlohmann::json run_events(const std::filesystem::path& dir, const std::string& run_id = "",
                                 const std::string& kind = "") {
  std::vector<std::string> args{"events"};
  if (!run_id.empty()) args.push_back(run_id);
  if (!kind.empty()) args.insert(args.end(), {"--kind", kind});
  args.push_back("--json");
  nlohmann::json events = orch_json(args, dir);
  return events.is_array() ? events : nlohmann::json::array();
}

// The step `id` of a run report; null when the report has no such step.
inline nlohmann::json step_of(const nlohmann::json& report, const std::string& id) {
  if (!report.is_object() || !report.contains("steps")) return nullptr;
  for (const auto& step : report["steps"])
    if (step["id"] == id) return step;
  return nullptr;
}

// The attempts of step `id` in a run report, in order; empty when it has none.
inline nlohmann::json attempts_of(const nlohmann::json& report, const std::string& id) {
  const nlohmann::json step = step_of(report, id);
  return step.is_object() ? step["attempts"] : nlohmann::json::array();
}

// Every attempt of every step of a run report.
inline std::vector<nlohmann::json> all_attempts(const nlohmann::json& report) {
  std::vector<nlohmann::json> all;
  if (!report.is_object() || !report.contains("steps")) return all;
  for (const auto& step : report["steps"])
    for (const auto& a : step["attempts"]) all.push_back(a);
  return all;
}

// How many attempts of a run report have `key` equal to `value` ("status", "interrupted").
inline int attempts_where(const nlohmann::json& report, const std::string& key, const nlohmann::json& value) {
  int n = 0;
  for (const auto& a : all_attempts(report)) n += a.value(key, nlohmann::json()) == value ? 1 : 0;
  return n;
}

// How many steps of a run report are in `status` ("done"); -1 without a report.
inline int steps_in(const nlohmann::json& report, const std::string& status) {
  if (!report.is_object() || !report.contains("counts")) return -1;
  return report["counts"][status].get<int>();
}

// Milliseconds since the epoch of a report's time ("2026-11-30T03:12:01.123Z"); 0 for "".
inline std::int64_t epoch_ms(const std::string& iso) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &ms) != 7)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000 + ms;
}

}  // namespace orch::testing
