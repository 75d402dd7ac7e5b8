// orch events [RUN_ID] [--kind KIND] [--step STEP] [--after SEQ] [--json]
//
// The events of a run, in order: every state change the engine recorded (the
// kinds and their data are listed in docs/store.md). Read from the ledger only,
// so it is safe while the run goes on; --after SEQ gives what came after the
// last event already seen, to follow a run.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/number_option.h"
#include "orch/report.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::cli {

namespace {

struct EventsArgs {
  std::string run_id;
  std::string kind;
  std::string step;
  std::int64_t after = 0;
  bool json = false;
  std::string store = kDefaultStore;
};

// One event as `--json` gives it (schemas/events.schema.json).
nlohmann::ordered_json event_json(const EventRecord& e) {
  // The ledger holds only valid JSON objects as data (the events table checks it).
  nlohmann::ordered_json data = nlohmann::ordered_json::parse(e.data_json, nullptr, false);
  if (!data.is_object()) data = nlohmann::ordered_json::object();
  return {{"seq", e.seq},      {"time", iso_time(e.ts)}, {"kind", e.kind},
          {"step", e.step_id}, {"attempt", e.attempt},   {"data", std::move(data)}};
}

// "SEQ  TIME  KIND  STEP#ATTEMPT  DATA": the step and attempt "-" for a run's
// own event, no data when it has none.
std::string event_line(const EventRecord& e) {
  std::string where = e.step_id.empty() ? "-" : terminal_text(e.step_id);
  if (e.attempt > 0) where += fmt::format("#{}", e.attempt);
  std::string line = fmt::format("{:>6}  {}  {:<20}  {}", e.seq, iso_time(e.ts), e.kind, where);
  if (e.data_json != "{}" && !e.data_json.empty()) line += "  " + terminal_text(e.data_json);
  return line + "\n";
}

}  // namespace

Command add_events(CLI::App& app) {
  auto args = std::make_shared<EventsArgs>();
  CLI::App* sub = app.add_subcommand(
      "events", "Print the events of a run (default: the newest), in order: every state change it recorded.");
  sub->add_option("RUN_ID", args->run_id, "the run (default: the newest)")
      ->check(not_empty(std::string(kRunIdWanted) + ", or none for the newest run"));
  sub->add_option("--kind", args->kind, "only the events of this kind (attempt_finished, ...; docs/store.md)")
      ->check(not_empty("an event kind"));
  sub->add_option("--step", args->step, "only the events of this step")->check(not_empty("a step id"));
  sub->add_option("--after", args->after,
                  "only the events after this seq (the last one seen: to follow a run)")
      ->transform(whole_number(0, std::numeric_limits<std::int64_t>::max()));
  sub->add_flag("--json", args->json,
                "print an array of {seq, time, kind, step, attempt, data} (schemas/events.schema.json)");
  sub->add_option("--store", args->store, std::string(kStoreHelpPrefix) + " (default: .orch/orch.db)")
      ->envname(kStoreEnv);
  return [args]() -> int {
    auto ledger = open_ledger(args->store, true);
    if (!ledger) return report_error(ledger.error());
    Store& store = (*ledger)->runs();
    std::string id = args->run_id;
    if (id.empty()) {
      auto latest = latest_run_id(store);
      if (!latest) return report_error(latest.error());
      id = *latest;
    }
    auto run = store.find_run(id);
    if (!run) return report_error(run.error());
    if (!*run) return report_error(store.no_run(id));
    if (!args->step.empty()) {
      // A step the run does not have is a mistake to name, not a step with no events.
      auto step = store.find_step(id, args->step);
      if (!step) return report_error(step.error());
      if (!*step) {
        auto steps = store.steps(id);
        if (!steps) return report_error(steps.error());
        std::vector<std::string> ids;
        for (const auto& s : *steps) ids.push_back(s.step_id);
        return report_error(
            Error{ErrorCode::NotFound,
                  fmt::format("run {} has no step '{}'{}", id, args->step, did_you_mean(args->step, ids))});
      }
    }
    // One kind is read through the store's (run, seq) index rather than in full.
    auto events = args->kind.empty() ? store.events(id, args->after) : store.events_of_kind(id, args->kind);
    if (!events) return report_error(events.error());
    std::erase_if(*events, [&](const EventRecord& e) {
      return e.seq <= args->after || (!args->step.empty() && e.step_id != args->step);
    });
    if (args->json) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& e : *events) list.push_back(event_json(e));
      std::printf("%s\n", json_text(list, 2).c_str());
      return kExitSucceeded;
    }
    for (const auto& e : *events) std::fputs(event_line(e).c_str(), stdout);
    return kExitSucceeded;
  };
}

}  // namespace orch::cli
