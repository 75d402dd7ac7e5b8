#include "flows/task_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <ctime>
#include <utility>

namespace orch::flows {

using json = nlohmann::json;

namespace {

constexpr std::array<std::pair<TaskState, const char*>, 12> kStates{{
    {TaskState::Classify, "CLASSIFY"},
    {TaskState::Route, "ROUTE"},
    {TaskState::Recall, "RECALL"},
    {TaskState::Similarity, "SIMILARITY"},
    {TaskState::Plan, "PLAN"},
    {TaskState::Execute, "EXECUTE"},
    {TaskState::Verify, "VERIFY"},
    {TaskState::Review, "REVIEW"},
    {TaskState::Summarize, "SUMMARIZE"},
    {TaskState::Done, "DONE"},
    {TaskState::Escalated, "ESCALATED"},
    {TaskState::Abandoned, "ABANDONED"},
}};

constexpr std::array<std::pair<Verdict, const char*>, 3> kVerdicts{{
    {Verdict::Pass, "PASS"},
    {Verdict::PassWithWarnings, "PASS-WITH-WARNINGS"},
    {Verdict::Fail, "FAIL"},
}};

std::string names(const std::vector<TaskState>& states) {
  std::string out;
  for (TaskState s : states) {
    if (!out.empty()) out += ", ";
    out += task_state_name(s);
  }
  return out;
}

// Where the trace stands in its pipeline: the index of its current stage, or -1
// at CLASSIFY.
int position(const Trace& trace) {
  const TaskState now = trace.state();
  for (std::size_t i = 0; i < trace.pipeline.size(); ++i)
    if (trace.pipeline[i] == now) return static_cast<int>(i);
  return -1;
}

// True when the last VERIFY since the last EXECUTE said FAIL: it blocks every
// later stage and close pass until a retry's VERIFY does better.
bool blocked_by_verify(const Trace& trace) {
  for (auto it = trace.transitions.rbegin(); it != trace.transitions.rend(); ++it) {
    if (it->state == TaskState::Execute) return false;
    if (it->state == TaskState::Verify) {
      const VerifyRecord* v = trace.last_verification();
      return v != nullptr && v->verdict == Verdict::Fail;
    }
  }
  return false;
}

template <class T>
Expected<T> field(const json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end()) return fail(ErrorCode::InvalidInput, fmt::format("trace: field '{}' is missing", key));
  try {
    return it->get<T>();
  } catch (const json::exception& e) {
    return fail(ErrorCode::InvalidInput, fmt::format("trace: field '{}': {}", key, e.what()));
  }
}

template <class T>
T optional_field(const json& doc, const char* key, T fallback) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

json outcome_json(const CheckOutcome& o) {
  json j = {{"check", o.check},
            {"kind", o.kind},
            {"status", check_status_name(o.status)},
            {"detail", o.detail},
            {"duration_ms", o.duration_ms}};
  if (!o.command.empty()) j["command"] = o.command;
  return j;
}

}  // namespace

const char* task_state_name(TaskState state) {
  for (const auto& [s, n] : kStates)
    if (s == state) return n;
  return "UNKNOWN";
}

std::optional<TaskState> parse_task_state(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const auto& [s, n] : kStates)
    if (upper == n) return s;
  return std::nullopt;
}

bool is_final(TaskState state) {
  return state == TaskState::Done || state == TaskState::Escalated || state == TaskState::Abandoned;
}

const char* check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::Passed:
      return "passed";
    case CheckStatus::Failed:
      return "failed";
    case CheckStatus::NotRun:
      return "not_run";
    case CheckStatus::Attested:
      return "attested";
    case CheckStatus::Refuted:
      return "refuted";
    case CheckStatus::Unattested:
      return "unattested";
  }
  return "failed";
}

std::optional<CheckStatus> parse_check_status(std::string_view name) {
  for (CheckStatus s : {CheckStatus::Passed, CheckStatus::Failed, CheckStatus::NotRun, CheckStatus::Attested,
                        CheckStatus::Refuted, CheckStatus::Unattested})
    if (name == check_status_name(s)) return s;
  return std::nullopt;
}

const char* verdict_name(Verdict verdict) {
  for (const auto& [v, n] : kVerdicts)
    if (v == verdict) return n;
  return "FAIL";
}

bool is_command_item(const json& item) {
  return item.is_object() && item.contains("command");
}

std::vector<TaskState> parse_pipeline(const std::vector<std::string>& stages, std::string* bad_stage) {
  std::vector<TaskState> out;
  for (const std::string& name : stages) {
    auto s = parse_task_state(name);
    if (!s || *s == TaskState::Classify || is_final(*s)) {
      if (bad_stage) *bad_stage = name;
      return {};
    }
    out.push_back(*s);
  }
  return out;
}

std::vector<TaskState> legal_next_states(const Trace& trace) {
  const TaskState now = trace.state();
  if (is_final(now)) return {};
  std::vector<TaskState> next;
  const bool blocked = now == TaskState::Verify && blocked_by_verify(trace);
  const int pos = position(trace);
  if (!blocked && pos + 1 < static_cast<int>(trace.pipeline.size()))
    next.push_back(trace.pipeline[static_cast<std::size_t>(pos + 1)]);
  if (now == TaskState::Verify && trace.retries < kMaxRetries) next.push_back(TaskState::Execute);
  return next;
}

Expected<void> check_enter(const Trace& trace, TaskState next) {
  const TaskState now = trace.state();
  if (is_final(now))
    return fail(ErrorCode::InvalidInput, fmt::format("trace '{}' is closed ({}): no state can be entered",
                                                     trace.id, task_state_name(now)));
  if (next == TaskState::Abandoned)
    return fail(ErrorCode::InvalidInput,
                "ABANDONED is entered only by gc (`orch task gc`, of a trace left idle), not by logging it; "
                "to give up on a trace, `orch task close TRACE --result fail`");
  if (is_final(next))
    return fail(ErrorCode::InvalidInput,
                fmt::format("{} is entered by closing the trace (`orch task close`), not by logging it",
                            task_state_name(next)));
  const auto legal = legal_next_states(trace);
  if (std::find(legal.begin(), legal.end(), next) != legal.end()) return {};
  std::string why;
  if (legal.empty() && now == TaskState::Verify)
    why = fmt::format(
        "VERIFY failed and the {} retries are used up: the only way on is `orch task close {} "
        "--result fail`",
        kMaxRetries, trace.id);
  else if (now == TaskState::Verify && blocked_by_verify(trace))
    why = fmt::format("VERIFY failed, which blocks {} until a retry passes: the legal next state is {}",
                      next == TaskState::Execute ? "it" : task_state_name(next), names(legal));
  else if (legal.empty())
    why = "the pipeline is complete: close the trace";
  else
    why = fmt::format("the legal next state{} {} {}", legal.size() == 1 ? " is" : "s are", names(legal),
                      next == TaskState::Execute && now == TaskState::Verify
                          ? fmt::format("(the {} retries are used up)", kMaxRetries)
                          : std::string());
  while (!why.empty() && why.back() == ' ') why.pop_back();
  return fail(ErrorCode::InvalidInput, fmt::format("illegal transition {} -> {}: {}", task_state_name(now),
                                                   task_state_name(next), why));
}

Expected<void> check_close(const Trace& trace, std::string_view result) {
  const TaskState now = trace.state();
  if (is_final(now))
    return fail(ErrorCode::InvalidInput,
                fmt::format("trace '{}' is already closed ({})", trace.id, task_state_name(now)));
  if (result == "fail") return {};
  if (result != "pass")
    return fail(ErrorCode::InvalidInput, fmt::format("--result must be pass or fail, not '{}'", result));
  if (now != TaskState::Summarize) {
    const auto legal = legal_next_states(trace);
    return fail(ErrorCode::InvalidInput,
                fmt::format("close --result pass is legal only after SUMMARIZE; trace '{}' is at {}{}",
                            trace.id, task_state_name(now),
                            legal.empty() ? std::string()
                                          : fmt::format(" (the legal next state: {})", names(legal))));
  }
  return {};
}

void enter_state(Trace& trace, TaskState next, std::string note, std::string t) {
  if (trace.state() == TaskState::Verify && next == TaskState::Execute) ++trace.retries;
  trace.transitions.push_back({std::move(t), next, std::move(note)});
}

json to_json(const Trace& trace) {
  json pipeline = json::array();
  for (TaskState s : trace.pipeline) pipeline.push_back(task_state_name(s));
  json transitions = json::array();
  for (const auto& tr : trace.transitions)
    transitions.push_back({{"t", tr.t}, {"state", task_state_name(tr.state)}, {"note", tr.note}});
  json verifications = json::array();
  for (const auto& v : trace.verifications) {
    json items = json::array();
    for (const auto& o : v.items) items.push_back(outcome_json(o));
    verifications.push_back({{"verdict", verdict_name(v.verdict)},
                             {"confidence", v.confidence},
                             {"t", v.t},
                             {"retry", v.retry},
                             {"items", std::move(items)}});
  }
  json verify = json::array();
  for (const auto& item : trace.verify) verify.push_back(item);
  json doc{
      {"id", trace.id},
      {"request", trace.request},
      {"project", trace.project},
      {"workspace", trace.workspace},
      {"intent", trace.intent.empty() ? json(nullptr) : json(trace.intent)},
      {"complexity", trace.complexity},
      {"strategy", trace.strategy},
      {"engines", trace.engines},
      {"pipeline", std::move(pipeline)},
      {"verify", std::move(verify)},
      {"recall_tags", trace.recall_tags},
      {"ambiguous", trace.ambiguous},
      {"state", task_state_name(trace.state())},
      {"transitions", std::move(transitions)},
      {"retries", trace.retries},
      {"result", trace.result ? json(*trace.result) : json(nullptr)},
      {"summary", trace.summary},
      {"verifications", std::move(verifications)},
      {"engine_results", trace.engine_results},
      {"learning_results", trace.learning_results},
      {"budget", trace.budget},
      {"llm", trace.llm},
      {"classification", trace.classification},
      {"run_id", trace.run_id},
      {"created_at", iso8601_utc(trace.created_at_ms)},
      {"updated_at", iso8601_utc(trace.updated_at_ms)},
  };
  if (!trace.fix.empty()) doc["fix"] = trace.fix;
  return doc;
}

Expected<Trace> trace_from_json(const json& doc) {
  if (!doc.is_object()) return fail(ErrorCode::InvalidInput, "trace: not a JSON object");
  Trace t;
  t.id = ORCH_TRY(field<std::string>(doc, "id"));
  t.request = ORCH_TRY(field<std::string>(doc, "request"));
  t.project = optional_field<std::string>(doc, "project", "");
  t.workspace = optional_field<std::string>(doc, "workspace", "");
  t.intent = optional_field<std::string>(doc, "intent", "");
  t.complexity = ORCH_TRY(field<std::string>(doc, "complexity"));
  t.strategy = ORCH_TRY(field<std::string>(doc, "strategy"));
  t.engines = optional_field<std::vector<std::string>>(doc, "engines", {});
  std::string bad;
  const auto stages = ORCH_TRY(field<std::vector<std::string>>(doc, "pipeline"));
  t.pipeline = parse_pipeline(stages, &bad);
  if (!bad.empty())
    return fail(ErrorCode::InvalidInput, fmt::format("trace: pipeline: unknown stage '{}'", bad));
  if (auto it = doc.find("verify"); it != doc.end() && it->is_array())
    for (const auto& item : *it) t.verify.push_back(item);
  t.recall_tags = optional_field<std::vector<std::string>>(doc, "recall_tags", {});
  t.ambiguous = optional_field<bool>(doc, "ambiguous", false);
  if (auto it = doc.find("transitions"); it != doc.end() && it->is_array()) {
    for (const auto& tr : *it) {
      auto state = parse_task_state(optional_field<std::string>(tr, "state", ""));
      if (!state) return fail(ErrorCode::InvalidInput, "trace: transitions: a state is missing or unknown");
      t.transitions.push_back(
          {optional_field<std::string>(tr, "t", ""), *state, optional_field<std::string>(tr, "note", "")});
    }
  }
  t.retries = optional_field<int>(doc, "retries", 0);
  if (auto it = doc.find("result"); it != doc.end() && it->is_string()) t.result = it->get<std::string>();
  t.summary = optional_field<std::string>(doc, "summary", "");
  t.fix = optional_field<std::string>(doc, "fix", "");
  if (auto it = doc.find("verifications"); it != doc.end() && it->is_array()) {
    for (const auto& v : *it) {
      VerifyRecord r;
      const auto name = optional_field<std::string>(v, "verdict", "FAIL");
      for (const auto& [value, n] : kVerdicts)
        if (name == n) r.verdict = value;
      r.confidence = optional_field<double>(v, "confidence", 0);
      r.t = optional_field<std::string>(v, "t", "");
      r.retry = optional_field<int>(v, "retry", 0);
      if (auto items = v.find("items"); items != v.end() && items->is_array())
        for (const auto& o : *items) {
          const auto word = optional_field<std::string>(o, "status", "");
          const auto status = parse_check_status(word);
          if (!status)
            return fail(ErrorCode::InvalidInput,
                        fmt::format("trace: a verification item's status '{}' is not one of passed, failed, "
                                    "not_run, attested, refuted, unattested",
                                    word));
          r.items.push_back({optional_field<std::string>(o, "check", ""),
                             optional_field<std::string>(o, "kind", ""),
                             optional_field<std::string>(o, "command", ""), *status,
                             optional_field<std::string>(o, "detail", ""),
                             optional_field<std::int64_t>(o, "duration_ms", 0)});
        }
      t.verifications.push_back(std::move(r));
    }
  }
  t.engine_results = optional_field<json>(doc, "engine_results", json::object());
  t.learning_results = optional_field<json>(doc, "learning_results", json::object());
  t.budget = optional_field<json>(doc, "budget", json::object());
  t.llm = optional_field<std::string>(doc, "llm", "");
  t.classification = optional_field<json>(doc, "classification", json::object());
  t.run_id = optional_field<std::string>(doc, "run_id", "");
  return t;
}

}  // namespace orch::flows
