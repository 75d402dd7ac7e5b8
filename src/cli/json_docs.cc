// cli/json_docs.cc — the --json documents commands and `orch mcp` share (cli/json_docs.h).
#include "cli/json_docs.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "util/json_text.h"
#include "util/strings.h"

namespace orch::cli {

namespace {

const char* source_name(OutputSource s) {
  switch (s) {
    case OutputSource::File:
      return "file";
    case OutputSource::Ledger:
      return "ledger";
    case OutputSource::None:
      return "none";
  }
  return "none";
}

nlohmann::ordered_json diagnostics_json(const Diagnostics& all) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& d : all)
    out.push_back({{"file", d.file}, {"line", d.line}, {"step", d.step_id}, {"message", d.message}});
  return out;
}

}  // namespace

nlohmann::ordered_json trigger_json(const flows::TriggerResult& t) {
  nlohmann::ordered_json trigger = {
      {"signal", flows::job_signal_name(t.signal)}, {"job", t.is_job()}, {"explanation", t.explanation()}};
  if (!t.items.empty()) trigger["items"] = t.items;
  if (!t.phrase.empty()) trigger["phrase"] = t.phrase;
  if (!t.verbs.empty()) trigger["verbs"] = t.verbs;
  return trigger;
}

nlohmann::ordered_json planned_json(const flows::PlannedRequest& p) {
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  for (const auto& d : p.model_problems) problems.push_back(d.to_string());
  nlohmann::ordered_json out = {{"path", flows::plan_path_name(p.path)}};
  if (!p.template_name.empty()) out["template"] = p.template_name;
  out["why"] = p.why;
  out["trigger"] = trigger_json(p.trigger);
  out["planning_runs"] = p.planning_runs;
  out["model_problems"] = problems;
  out["steps"] = p.plan.steps.size();
  out["plan"] = p.text;
  return out;
}

Diagnostics critical_step_warnings(const Plan& plan, const ExecutorRegistry& executors,
                                   const std::string& shown) {
  Diagnostics warnings;
  for (const Step& step : plan.steps) {
    const Executor* executor = executors.find(step.executor);
    if (executor == nullptr || executor->risk(step) != RiskLevel::Critical) continue;
    std::string why = step.risk == RiskLevel::Critical
                          ? std::string("the step is declared risk: critical")
                          : fmt::format("executor '{}' rates it critical", step.executor);
    if (std::string cause = executor->risk_reason(step); !cause.empty() && step.risk != RiskLevel::Critical)
      why += ": " + cause;
    warnings.push_back(Diagnostic{step.loc.file.empty() ? shown : step.loc.file, step.loc.line, step.id,
                                  "warning: the risk guard will refuse this step (" + why + ")"});
  }
  return warnings;
}

nlohmann::ordered_json validation_json(const std::string& shown, const PlanInput& in,
                                       const Diagnostics& warnings) {
  return {{"valid", in.problems.empty()},
          {"plan", shown},
          {"steps", in.plan.steps.size()},
          {"errors", diagnostics_json(in.problems)},
          {"warnings", diagnostics_json(warnings)}};
}

nlohmann::ordered_json invalid_plan_json(const std::string& shown, const std::string& reason) {
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  std::size_t start = 0;
  while (start <= reason.size()) {
    std::size_t end = reason.find('\n', start);
    if (end == std::string::npos) end = reason.size();
    std::string line = reason.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    std::string file = shown;
    int number = 0;
    std::string message = line;
    if (auto colon = line.find(':'); colon != std::string::npos && colon > 0) {
      std::size_t digits = colon + 1;
      while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
      // A line number too large for an int is not one: the line stays whole.
      if (digits > colon + 1 && line.compare(digits, 2, ": ") == 0 &&
          std::from_chars(line.data() + colon + 1, line.data() + digits, number).ec == std::errc()) {
        file = line.substr(0, colon);
        message = line.substr(digits + 2);
      }
    }
    errors.push_back({{"file", file}, {"line", number}, {"step", ""}, {"message", message}});
  }
  return {{"valid", false},
          {"plan", shown},
          {"steps", 0},
          {"errors", errors},
          {"warnings", nlohmann::ordered_json::array()}};
}

Expected<ChosenAttempt> find_attempt(Store& store, const LogsQuery& q) {
  auto run = ORCH_TRY(store.find_run(q.run_id));
  if (!run) return std::unexpected(store.no_run(q.run_id));
  auto attempts = ORCH_TRY(store.attempts(q.run_id, q.step));
  if (attempts.empty()) {
    // A step the run does not have is not the same as one that never ran.
    auto steps = ORCH_TRY(store.steps(q.run_id));
    std::vector<std::string> ids;
    for (const auto& s : steps) ids.push_back(s.step_id);
    if (std::find(ids.begin(), ids.end(), q.step) == ids.end())
      return fail(ErrorCode::NotFound,
                  fmt::format("run {} has no step '{}'{}", q.run_id, q.step, did_you_mean(q.step, ids)));
    return fail(ErrorCode::NotFound, fmt::format("run {} has no attempts of step '{}'", q.run_id, q.step));
  }
  if (q.attempt <= 0) return ChosenAttempt{attempts.back(), attempts.size()};
  for (const auto& a : attempts)
    if (a.number == q.attempt) return ChosenAttempt{a, attempts.size()};
  return fail(ErrorCode::NotFound,
              fmt::format("step '{}' has no attempt {} (it has {})", q.step, q.attempt, attempts.size()));
}

nlohmann::ordered_json logs_json(const LogsQuery& args, const ChosenAttempt& chosen, const OutputRead& read,
                                 const std::string& text) {
  const AttemptRecord& a = chosen.attempt;
  std::int64_t bytes = args.err ? a.stderr_bytes : a.stdout_bytes;
  // A running attempt's byte count is written when it ends: until then, its file's.
  if (a.status == AttemptStatus::Running) bytes = std::max<std::int64_t>(bytes, std::ssize(text));
  // json_text() replaces what is not UTF-8; read back, such a text is not the stream's.
  const nlohmann::ordered_json as_text = text;
  const bool lossy = nlohmann::ordered_json::parse(json_text(as_text)).get<std::string>() != text;
  return {{"run_id", args.run_id},
          {"step", args.step},
          {"attempt", a.number},
          {"attempts", chosen.attempts},
          {"status", attempt_status_name(a.status)},
          {"stream", args.err ? "stderr" : "stdout"},
          {"source", source_name(read.source)},
          {"path", read.file},
          {"bytes", bytes},
          {"truncated", args.err ? a.stderr_truncated : a.stdout_truncated},
          {"text", as_text},
          {"text_bytes", text.size()},
          {"lossy", lossy},
          {"output_tail", a.output_tail}};
}
nlohmann::ordered_json similarity_json(const std::string& text, const std::vector<memory::Hit>& hits) {
  nlohmann::ordered_json matches = nlohmann::ordered_json::array();
  for (const auto& h : hits)
    matches.push_back({{"kind", h.kind},
                       {"id", h.id},
                       {"title", h.title},
                       {"path", h.path},
                       {"score", h.score},
                       {"similar", h.score >= memory::kSimilarThreshold}});
  return {{"query", text}, {"threshold", memory::kSimilarThreshold}, {"matches", matches}};
}

}  // namespace orch::cli
