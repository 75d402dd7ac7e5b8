#include "flows/task_verifier.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "util/json_text.h"

namespace orch::flows {

using json = nlohmann::json;

namespace {

std::string check_text(const json& item) {
  if (item.is_string()) return item.get<std::string>();
  if (item.is_object()) return item.value("check", std::string());
  return item.dump();
}

std::string tail(const std::string& text, std::size_t max = 400) {
  if (text.size() <= max) return text;
  return "..." + text.substr(text.size() - max);
}

}  // namespace

Expected<void> add_attestation(VerifyOptions& options, std::string_view spec, bool refuting, int items) {
  const auto eq = spec.find('=');
  const std::string_view which = spec.substr(0, eq);
  const std::string note = eq == std::string_view::npos ? std::string() : std::string(spec.substr(eq + 1));
  const char* flag = refuting ? "--refute" : "--attest";
  if (which == "all") {
    if (refuting) return fail(ErrorCode::InvalidInput, "--refute needs an item number: --refute N=why");
    options.attest_all = true;
    if (!note.empty()) options.note = note;
    return {};
  }
  int n = 0;
  const auto [end, ec] = std::from_chars(which.data(), which.data() + which.size(), n);
  if (ec != std::errc() || end != which.data() + which.size() || n < 1 || n > items)
    return fail(ErrorCode::InvalidInput,
                fmt::format("{} '{}': expected N or N=note with N an item number from 1 to {}{}", flag, spec,
                            items, refuting ? "" : ", or all"));
  if (refuting && note.empty())
    return fail(ErrorCode::InvalidInput, fmt::format("--refute '{}': say why: --refute {}=why", spec, n));
  (refuting ? options.refute : options.attest)[n] = note;
  return {};
}

void decide_verdict(VerifyRecord& record) {
  double evidence = 0;
  int failed = 0, unattested = 0, supported = 0;
  for (const auto& item : record.items) {
    switch (item.status) {
      case CheckStatus::Passed:
        evidence += 1.0;
        ++supported;
        break;
      case CheckStatus::Attested:
        evidence += 0.5;
        ++supported;
        break;
      case CheckStatus::Unattested:
      case CheckStatus::NotRun:
        ++unattested;
        break;
      case CheckStatus::Failed:
      case CheckStatus::Refuted:
        ++failed;
        break;
    }
  }
  const double n = static_cast<double>(record.items.size());
  record.confidence = n == 0 ? 0 : std::round(evidence / n * 100) / 100;
  if (failed > 0 || supported == 0)
    record.verdict = Verdict::Fail;
  else if (unattested > 0)
    record.verdict = Verdict::PassWithWarnings;
  else
    record.verdict = Verdict::Pass;
}

Expected<VerifierRun> run_verifier(Store& store, const Trace& trace, const VerifyOptions& options) {
  VerifierRun out;
  VerifyRecord& record = out.record;
  record.retry = trace.retries;
  const int count = static_cast<int>(trace.verify.size());
  for (const auto& [n, why] : options.refute)
    if (n > count)
      return fail(ErrorCode::InvalidInput, fmt::format("--refute {}: the checklist has {} items", n, count));
  for (const auto& [n, note] : options.attest) {
    if (n > count)
      return fail(ErrorCode::InvalidInput, fmt::format("--attest {}: the checklist has {} items", n, count));
    if (options.refute.contains(n))
      return fail(ErrorCode::InvalidInput,
                  fmt::format("--attest {0} and --refute {0} contradict each other: give one", n));
    const json& item = trace.verify[static_cast<std::size_t>(n - 1)];
    if (is_command_item(item))
      return fail(ErrorCode::InvalidInput,
                  fmt::format("--attest {}: item {} is a command (`{}`): it passes by its exit code, not by "
                              "attestation (--refute {}=why overrules it)",
                              n, n, item["command"].get<std::string>(), n));
  }

  // The command items, as one plan: v1, v2, ... in checklist order.
  json steps = json::array();
  for (int i = 0; i < count; ++i) {
    const json& item = trace.verify[static_cast<std::size_t>(i)];
    if (!is_command_item(item)) continue;
    steps.push_back({{"id", fmt::format("v{}", i + 1)},
                     {"goal", check_text(item)},
                     {"sh", item["command"].get<std::string>()},
                     {"timeout", fmt::format("{}ms", options.timeout.count())}});
  }
  std::map<std::string, StepRecord> step_of;
  std::map<std::string, AttemptRecord> attempt_of;
  if (!steps.empty()) {
    const json plan_doc = {{"name", fmt::format("verify {}", trace.id)},
                           {"concurrency", 1},
                           {"on_failure", "continue"},
                           {"steps", steps}};
    const std::string text = json_text(plan_doc, 2);
    LoadResult loaded = parse_plan(text, fmt::format("verify {}", trace.id));
    auto executors = options.executors
                         ? options.executors
                         : std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
    Diagnostics problems = loaded.diagnostics;
    if (problems.empty())
      problems = validate_plan(loaded.plan, validate_options_for(options.workspace, "", *executors));
    if (!problems.empty())
      return fail(ErrorCode::InvalidInput,
                  fmt::format("the VERIFY checklist of trace '{}' is not runnable: {}", trace.id,
                              problems[0].message));
    EngineOptions engine_options;
    engine_options.workspace = options.workspace;
    engine_options.executors = executors;
    engine_options.handle_signals = options.handle_signals;
    Engine engine(store, std::move(engine_options));
    auto outcome = ORCH_TRY(engine.run(loaded.plan, text));
    out.run_id = outcome.run_id;
    if (outcome.status == RunStatus::Interrupted) {
      out.interrupted = true;
      return out;
    }
    auto rows = ORCH_TRY(store.steps(outcome.run_id));
    for (auto& row : rows) step_of[row.step_id] = row;
    auto attempts = ORCH_TRY(store.attempts(outcome.run_id));
    for (auto& a : attempts) attempt_of[a.step_id] = a;  // the last one per step
  }

  for (int i = 0; i < count; ++i) {
    const json& item = trace.verify[static_cast<std::size_t>(i)];
    CheckOutcome o;
    o.check = check_text(item);
    const int number = i + 1;
    if (is_command_item(item)) {
      o.kind = "command";
      o.command = item["command"].get<std::string>();
      const std::string id = fmt::format("v{}", number);
      auto row = step_of.find(id);
      auto attempt = attempt_of.find(id);
      const bool passed = row != step_of.end() && row->second.status == StepStatus::Done;
      o.status = passed ? CheckStatus::Passed : CheckStatus::Failed;
      if (attempt != attempt_of.end()) {
        o.duration_ms = attempt->second.duration_ms;
        o.detail = passed ? fmt::format("exit 0") : attempt->second.reason;
        if (!passed && !attempt->second.output_tail.empty())
          o.detail += "\n" + tail(attempt->second.output_tail);
      } else if (row != step_of.end()) {
        o.detail = row->second.reason;
      }
      if (options.refute.contains(number)) {
        o.status = CheckStatus::Refuted;
        o.detail = options.refute.at(number);
      }
    } else {
      o.kind = "attest";
      if (auto r = options.refute.find(number); r != options.refute.end()) {
        o.status = CheckStatus::Refuted;
        o.detail = r->second;
      } else if (auto a = options.attest.find(number); a != options.attest.end()) {
        o.status = CheckStatus::Attested;
        o.detail = a->second.empty() ? options.note : a->second;
      } else if (options.attest_all) {
        o.status = CheckStatus::Attested;
        o.detail = options.note;
      } else {
        o.status = CheckStatus::Unattested;
      }
    }
    record.items.push_back(std::move(o));
  }
  decide_verdict(record);
  return out;
}

}  // namespace orch::flows
