#include "flows/chain.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "engine/attempt_render.h"
#include "exec/config_check.h"
#include "orch/clock.h"
#include "orch/placeholder.h"
#include "orch/plan_loader.h"
#include "orch/report.h"
#include "orch/validate.h"
#include "plan/json_reader.h"
#include "route/skill_output.h"
#include "util/json_text.h"
#include "util/read_file.h"
#include "util/strings.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch::flows {

namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kSkillName = "orch chain";
// A step's result larger than this is cut in the report (result_truncated: true);
// the whole result stays in the ledger.
constexpr std::size_t kMaxReportedResult = 64 * 1024;
constexpr std::size_t kTruncatedResult = 4 * 1024;

// The keys a chain step may have: its own, and those passed to the plan step as written.
const std::vector<std::string> kOwnKeys = {"id", "executor", "goal", "inputs", "pass_previous"};
const std::vector<std::string> kPlanKeys = {"run",      "sh",          "env",        "timeout",
                                            "attempts", "retry_delay", "max_output", "budget",
                                            "post",     "writes",      "output",     "risk"};

std::string json_type_name(const ojson& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  return "an object";
}

ChainRefusal invalid(std::string message, std::vector<std::string> problems = {}) {
  return ChainRefusal{"invalid_chain", std::move(message), std::move(problems)};
}

// `${previous.result}` / `${previous.json[.PATH]}` → `${steps.PREV.…}`. `$${` stays a
// literal (a run of `$` before `{` is read as parse_template reads it). Sets `error` for a malformed
// reference or one in the first step.
std::string rewrite_previous(const std::string& text, const std::string& prev_id, std::string& error) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '$') {
      std::size_t n = 0;
      while (i + n < text.size() && text[i + n] == '$') ++n;
      // Escaped `$`s stay as written; before `{` an odd one left starts a
      // placeholder, which is read below.
      const std::size_t keep = i + n < text.size() && text[i + n] == '{' ? n - n % 2 : n;
      out.append(keep, '$');
      i += keep;
      if (keep == n) continue;
    }
    const bool starts = text.compare(i, 10, "${previous") == 0 && i + 10 < text.size() &&
                        (text[i + 10] == '.' || text[i + 10] == '}');
    if (!starts) {
      out += text[i++];
      continue;
    }
    std::size_t close = text.find('}', i);
    if (close == std::string::npos) {
      error =
          fmt::format("unterminated '${{': '{}' has no closing '}}'", quote_for_message(text.substr(i), 40));
      return text;
    }
    std::string what = text.substr(i + 2, close - i - 2);  // previous.result, previous.json.a
    std::string rest = what.substr(8);                     // .result, .json.a, ""
    if (rest != ".result" && rest != ".json" && !rest.starts_with(".json.")) {
      error = fmt::format(
          "unknown placeholder '${{{}}}' (use ${{previous.result}} or ${{previous.json.PATH}})", what);
      return text;
    }
    if (prev_id.empty()) {
      error = fmt::format("'${{{}}}' in the first step: it has no previous step", what);
      return text;
    }
    out += "${steps." + prev_id + rest + "}";
    i = close + 1;
  }
  return out;
}

// Rewrites every string leaf of `value` (not object keys); the first error wins.
void rewrite_leaves(ojson& value, const std::string& prev_id, const std::string& where, std::string& error) {
  if (!error.empty()) return;
  if (value.is_string()) {
    std::string e;
    value = rewrite_previous(value.get<std::string>(), prev_id, e);
    if (!e.empty()) error = where + ": " + e;
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it)
      rewrite_leaves(it.value(), prev_id, where + "." + it.key(), error);
  } else if (value.is_array()) {
    for (std::size_t k = 0; k < value.size(); ++k)
      rewrite_leaves(value[k], prev_id, fmt::format("{}[{}]", where, k), error);
  }
}

// True when a string leaf of `value` holds a placeholder naming step `id`.
bool refers_to(const ojson& value, const std::string& id) {
  if (value.is_string()) {
    auto t = parse_template(value.get<std::string>());
    if (!t) return false;
    for (const auto& seg : t->segments)
      if ((seg.kind == Segment::Kind::StepResult || seg.kind == Segment::Kind::StepJson) && seg.text == id)
        return true;
    return false;
  }
  if (value.is_object() || value.is_array())
    for (const auto& v : value)
      if (refers_to(v, id)) return true;
  return false;
}

bool has_prefix(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The position (1-based) of each step id.
std::map<std::string, int> positions_of(const Plan& plan) {
  std::map<std::string, int> out;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) out[plan.steps[i].id] = static_cast<int>(i) + 1;
  return out;
}

std::string step_label(int pos, const std::string& id) {
  return fmt::format("step {} ('{}')", pos, id);
}

std::string diagnostic_text(const Diagnostic& d, const std::map<std::string, int>& pos) {
  if (auto it = pos.find(d.step_id); it != pos.end())
    return step_label(it->second, d.step_id) + ": " + d.message;
  return d.message;
}

// A result as the report shows it: parsed when it is JSON, else the text.
ojson result_value(const std::string& result) {
  ojson parsed = ojson::parse(result, nullptr, false);
  if (!parsed.is_discarded()) return parsed;
  return result;
}

const char* chain_step_status(StepStatus s) {
  switch (s) {
    case StepStatus::Done:
      return "success";
    case StepStatus::Failed:
      return "error";
    case StepStatus::Skipped:
      return "skipped";
    case StepStatus::Pending:
      return "pending";
    case StepStatus::Running:
      return "running";
    case StepStatus::Cancelled:
      return "cancelled";
    case StepStatus::AwaitingApproval:
      return "awaiting_approval";
  }
  return "pending";
}

RiskLevel risk_of(const Step& step, const ExecutorRegistry& executors) {
  if (const Executor* e = executors.find(step.executor)) return e->risk(step);
  return step.risk.value_or(RiskLevel::Low);
}

// The skill-output envelope (route/skill_output.h) with a chain's own fields.
ojson report_skeleton(const std::string& status, int max_steps) {
  ojson r = route::skill_output_skeleton(kSkillName, status, iso_time(Clock::system().wall_ms()));
  r["chain_policy"] = "abort_on_failure";
  r["chain_limit"] = max_steps;
  r["execution_chain"] = ojson::array();
  return r;
}

}  // namespace

ChainExpected<ChainInput> read_chain_input(const std::string& arg) {
  std::string_view t = trim(arg);
  if (t.empty())
    return std::unexpected(invalid("--steps is empty: give a JSON array of steps, or a file holding one"));
  ChainInput in;
  std::string text;
  bool yaml = false;
  if (t.front() == '[' || t.front() == '{') {
    text = std::string(t);
  } else {
    // A folder or a file that cannot be opened says so with the system's reason, never as a
    // parse error of nothing.
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec))
      return std::unexpected(invalid(fmt::format(
          "--steps '{}': is a folder, not a file (give a JSON array inline, or a JSON/YAML file)", arg)));
    auto read = read_file_text(arg);
    if (!read) {
      const std::string& why = read.error().message;
      const std::string reason = why.starts_with(arg + ": cannot open: ") ? why.substr(arg.size() + 15) : why;
      return std::unexpected(invalid(fmt::format(
          "--steps '{}': cannot read the file: {} (give a JSON array inline, or a JSON/YAML file)", arg,
          reason)));
    }
    text = std::move(*read);
    in.source = arg;
    yaml = arg.ends_with(".yaml") || arg.ends_with(".yml");
  }
  const std::string what = in.source.empty() ? "--steps" : in.source;
  // A key written twice in one mapping is refused, as in a plan: parsed, the
  // later value would silently win.
  std::vector<std::string> duplicates;
  if (yaml) {
    auto doc = detail::read_yaml_doc(text);
    if (!doc)
      return std::unexpected(
          invalid(fmt::format("{}:{}: not valid YAML: {}", what, doc.error().line, doc.error().message)));
    collect_duplicate_keys(*doc, "", what, duplicates);
    in.steps = yaml_to_ordered_json(*doc);
  } else {
    try {
      in.steps = ojson::parse(text);
    } catch (const ojson::exception& e) {
      std::string msg = e.what();
      if (auto end = msg.find("] "); msg.starts_with("[json.exception.") && end != std::string::npos)
        msg = msg.substr(end + 2);
      return std::unexpected(invalid(fmt::format("{}: not valid JSON: {}", what, msg)));
    }
    // nlohmann keeps the last of a repeated key and says nothing: the plan
    // reader's JSON parser keeps each with its line.
    if (auto doc = detail::read_json_doc(text)) collect_duplicate_keys(*doc, "", what, duplicates);
  }
  if (!duplicates.empty())
    return std::unexpected(invalid(fmt::format("{}: a key is written twice", what), std::move(duplicates)));
  return in;
}

ChainExpected<Chain> build_chain(const ChainInput& input, const ChainOptions& options) {
  const ojson& steps = input.steps;
  const std::string what = input.source.empty() ? "--steps" : input.source;
  if (!steps.is_array())
    return std::unexpected(
        invalid(fmt::format("{}: a chain is a JSON array of steps, got {}", what, json_type_name(steps))));
  if (steps.empty())
    return std::unexpected(invalid(fmt::format("{}: a chain needs at least one step", what)));
  if (options.max_steps < 1)
    return std::unexpected(
        invalid(fmt::format("the step limit must be at least 1 (got {})", options.max_steps)));
  // The limit comes first, before anything else is looked at: never truncated.
  if (steps.size() > static_cast<std::size_t>(options.max_steps))
    return std::unexpected(ChainRefusal{
        "chain_limit_exceeded",
        fmt::format(
            "the chain has {} steps, more than the limit of {}; nothing was run (raise the limit with "
            "--max-steps N or ORCH_CHAIN_MAX_STEPS, or split the chain)",
            steps.size(), options.max_steps),
        {}});

  std::vector<std::string> problems;
  std::vector<std::string> all_keys = kOwnKeys;
  all_keys.insert(all_keys.end(), kPlanKeys.begin(), kPlanKeys.end());
  ojson plan_steps = ojson::array();
  std::string prev_id;
  // The ids the user gave, so that a default id ("step2") never takes one of them, and the
  // position that first gave each, so that a repeated one names the chain steps.
  std::map<std::string, int> explicit_ids;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].is_object() && steps[i].contains("id") && steps[i]["id"].is_string() &&
        !steps[i]["id"].get<std::string>().empty())
      explicit_ids.emplace(steps[i]["id"].get<std::string>(), static_cast<int>(i) + 1);
  std::set<std::string> taken;
  auto default_id = [&](int pos) {
    std::string id = fmt::format("step{}", pos);
    for (int n = 2; explicit_ids.contains(id) || taken.contains(id); ++n)
      id = fmt::format("step{}-{}", pos, n);
    return id;
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const int pos = static_cast<int>(i) + 1;
    const ojson& item = steps[i];
    auto problem = [&](const std::string& msg) { problems.push_back(fmt::format("step {}: {}", pos, msg)); };
    if (!item.is_object()) {
      problem(fmt::format("a step is an object {{\"executor\": ..., \"inputs\": {{...}}}}, got {}",
                          json_type_name(item)));
      prev_id = default_id(pos);
      taken.insert(prev_id);
      continue;
    }
    bool ok = true;
    for (auto it = item.begin(); it != item.end(); ++it) {
      const std::string& key = it.key();
      if (key.starts_with("x-")) continue;
      if (key == "deps") {
        problem("'deps' is not a chain key: step n always runs after step n-1");
        ok = false;
      } else if (std::find(all_keys.begin(), all_keys.end(), key) == all_keys.end()) {
        problem(fmt::format("unknown key '{}'{}", key, did_you_mean(key, all_keys)));
        ok = false;
      }
    }
    std::string id;
    if (item.contains("id")) {
      if (!item["id"].is_string() || item["id"].get<std::string>().empty()) {
        problem(fmt::format("'id' must be a non-empty string, got {}", json_type_name(item["id"])));
        ok = false;
      } else {
        id = item["id"].get<std::string>();
        if (int first = explicit_ids.at(id); first != pos) {
          problem(fmt::format("id '{}' is already the id of step {}: ids must differ", id, first));
          ok = false;
        }
      }
    }
    if (id.empty()) id = default_id(pos);
    taken.insert(id);
    std::string executor;
    if (!item.contains("executor")) {
      problem(
          "'executor' is required (tool:NAME, worker:NAME, llm, llm:MODEL, shell, builtin:echo, "
          "builtin:json)");
      ok = false;
    } else if (!item["executor"].is_string() || item["executor"].get<std::string>().empty()) {
      problem(fmt::format("'executor' must be a non-empty string, got {}", json_type_name(item["executor"])));
      ok = false;
    } else {
      executor = item["executor"].get<std::string>();
    }
    if (item.contains("goal") && !item["goal"].is_string()) {
      problem(fmt::format("'goal' must be a string, got {}", json_type_name(item["goal"])));
      ok = false;
    } else if (item.contains("goal") &&
               item["goal"].get<std::string>().find("${previous") != std::string::npos) {
      problem("'goal' is not a template: put ${previous.result} in an input instead");
      ok = false;
    }
    if (item.contains("inputs") && !item["inputs"].is_object()) {
      problem(fmt::format("'inputs' must be an object, got {}", json_type_name(item["inputs"])));
      ok = false;
    }
    if (item.contains("pass_previous") && !item["pass_previous"].is_boolean()) {
      problem(fmt::format("'pass_previous' must be true or false, got {}",
                          json_type_name(item["pass_previous"])));
      ok = false;
    }
    if (!ok) {
      prev_id = id;
      continue;
    }

    ojson step = ojson::object();
    step["id"] = id;
    if (item.contains("goal")) step["goal"] = item["goal"];
    step["executor"] = executor;
    if (!prev_id.empty()) step["deps"] = ojson::array({prev_id});
    for (const auto& key : kPlanKeys)
      if (item.contains(key)) step[key] = item[key];
    ojson inputs = item.value("inputs", ojson::object());
    // ${previous.…} wherever a template may be.
    std::string error;
    rewrite_leaves(inputs, prev_id, "inputs", error);
    if (step.contains("run")) rewrite_leaves(step["run"], prev_id, "run", error);
    if (step.contains("sh")) rewrite_leaves(step["sh"], prev_id, "sh", error);
    if (step.contains("env")) rewrite_leaves(step["env"], prev_id, "env", error);
    if (!error.empty()) {
      problem(error);
      prev_id = id;
      continue;
    }
    // The implicit channel, when the step does not take the previous result itself.
    const bool pass = item.value("pass_previous", true);
    const bool explicit_ref = refers_to(inputs, prev_id) ||
                              (step.contains("run") && refers_to(step["run"], prev_id)) ||
                              (step.contains("sh") && refers_to(step["sh"], prev_id)) ||
                              (step.contains("env") && refers_to(step["env"], prev_id));
    if (!prev_id.empty() && pass && !explicit_ref) {
      const std::string ref = "${steps." + prev_id + ".result}";
      if (has_prefix(executor, "tool:") || executor == "shell") {
        if (!step.contains("env") || !step["env"].is_object()) {
          if (!step.contains("env")) step["env"] = ojson::object();
        }
        if (step["env"].is_object() && !step["env"].contains("ORCH_CHAIN_PREVIOUS"))
          step["env"]["ORCH_CHAIN_PREVIOUS"] = ref;
      } else if (has_prefix(executor, "worker:") || executor == "builtin:json") {
        if (!inputs.contains("previous")) inputs["previous"] = ref;
      } else if (executor == "llm" || has_prefix(executor, "llm:")) {
        if (inputs.contains("prompt") && inputs["prompt"].is_string())
          inputs["prompt"] =
              inputs["prompt"].get<std::string>() + "\n\nThe result of the previous step:\n" + ref;
      }
    }
    step["inputs"] = std::move(inputs);
    plan_steps.push_back(std::move(step));
    prev_id = id;
  }
  auto refuse = [&](std::vector<std::string> list) {
    std::string msg = fmt::format("{}: {} problem{} in the chain; nothing was run", what, list.size(),
                                  list.size() == 1 ? "" : "s");
    return std::unexpected(invalid(std::move(msg), std::move(list)));
  };
  if (!problems.empty()) return refuse(std::move(problems));

  ojson plan = ojson::object();
  plan["name"] = "chain";
  plan[kChainPlanKey] = {{"version", 1}, {"max_steps", options.max_steps}};
  plan["on_failure"] = "abort";
  plan["concurrency"] = 1;
  if (options.budget_tokens || options.budget_cost_usd) {
    ojson budget = ojson::object();
    if (options.budget_tokens) budget["tokens"] = *options.budget_tokens;
    if (options.budget_cost_usd) budget["cost_usd"] = *options.budget_cost_usd;
    plan["budget"] = std::move(budget);
  }
  plan["steps"] = std::move(plan_steps);
  Chain chain;
  chain.text = json_text(plan, 2);
  chain.max_steps = options.max_steps;
  LoadResult loaded = parse_plan(chain.text, input.source.empty() ? "chain" : input.source);
  const auto pos = positions_of(loaded.plan);
  for (const auto& d : loaded.diagnostics) problems.push_back(diagnostic_text(d, pos));
  if (!problems.empty()) return refuse(std::move(problems));
  loaded.plan.source_path = input.source;
  Diagnostics semantic =
      validate_plan(loaded.plan, validate_options_for(options.workspace, input.source, *options.executors));
  for (const auto& d : semantic) problems.push_back(diagnostic_text(d, pos));
  if (!problems.empty()) return refuse(std::move(problems));
  // The risk of each step as its executor saw it when the chain was built, kept
  // in the stored plan so the report can be rebuilt from the ledger alone.
  ojson risks = ojson::array();
  for (const auto& st : loaded.plan.steps) risks.push_back(risk_level_name(risk_of(st, *options.executors)));
  plan[kChainPlanKey]["risks"] = std::move(risks);
  chain.text = json_text(plan, 2);
  chain.plan = std::move(loaded.plan);
  return chain;
}

ChainExpected<void> check_approvals(const Chain& chain, const std::vector<std::string>& approve) {
  std::vector<std::string> ids;
  for (const auto& step : chain.plan.steps) ids.push_back(step.id);
  for (const auto& id : approve) {
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) continue;
    return std::unexpected(
        invalid(fmt::format("--approve {}: the plan has no step '{}'{}", id, id, did_you_mean(id, ids))));
  }
  return {};
}

Expected<RunOutcome> run_chain(Store& store, const Chain& chain, EngineOptions options) {
  options.keep_going = false;  // abort on failure is what a chain is
  Engine engine(store, std::move(options));
  return engine.run(chain.plan, chain.text);
}

namespace {
// Whether the engine recorded attempt `a` as a transient failure (a provider's
// 429/5xx, a dropped connection: its attempt_finished event says so).
bool was_transient(Store& store, const std::string& run_id, const AttemptRecord& a) {
  auto events = store.events_of_kind(run_id, "attempt_finished");
  if (!events) return false;
  for (const auto& e : *events) {
    if (e.step_id != a.step_id || e.attempt != a.number) continue;
    auto data = nlohmann::json::parse(e.data_json, nullptr, false);
    return data.is_object() && data.value("transient", false);
  }
  return false;
}
}  // namespace

Expected<ojson> build_chain_report(Store& store, const std::string& run_id,
                                   const ExecutorRegistry& executors) {
  ojson run_report = ORCH_TRY(build_run_report(store, run_id, ReportDetail::Summary));
  PlanVersion version = ORCH_TRY(store.latest_plan(run_id));
  ojson plan_doc = ojson::parse(version.text, nullptr, false);
  if (!plan_doc.is_object() || !plan_doc.contains(kChainPlanKey))
    return fail(ErrorCode::InvalidInput,
                fmt::format("run {} is not a chain (it was not started by `orch chain`)", run_id));
  const ojson& marker = plan_doc[kChainPlanKey];
  const int max_steps =
      marker.is_object() ? marker.value("max_steps", kDefaultChainMaxSteps) : kDefaultChainMaxSteps;
  // Recorded when the chain was built; else (a plan edited with --replan) asked again.
  const ojson recorded_risks = marker.is_object() ? marker.value("risks", ojson::array()) : ojson::array();
  LoadResult loaded = parse_plan(version.text, version.path.empty() ? "chain" : version.path);
  std::map<std::string, const Step*> plan_steps;
  for (const auto& s : loaded.plan.steps) plan_steps[s.id] = &s;
  std::vector<StepRecord> steps = ORCH_TRY(store.steps(run_id));
  std::vector<AttemptRecord> attempts = ORCH_TRY(store.attempts(run_id));
  std::map<std::string, const AttemptRecord*> last_attempt;
  std::map<std::string, int> attempt_count;
  for (const auto& a : attempts) {
    last_attempt[a.step_id] = &a;
    ++attempt_count[a.step_id];
  }

  const auto& run = run_report["run"];
  const std::string run_status = run["status"];
  const RunStatus status = parse_run_status(run_status).value_or(RunStatus::Failed);
  ojson r = report_skeleton("success", max_steps);
  r["run_id"] = run_id;
  r["timestamp"] = run["created_at"];
  r["duration_ms"] = run["elapsed_ms"];

  std::int64_t tin = 0, tout = 0;
  double cost = 0;
  int done = 0;
  const StepRecord* stop = nullptr;  // the step the chain stopped at
  const StepRecord* last_done = nullptr;
  ojson chain_list = ojson::array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepRecord& s = steps[i];
    tin += s.tokens_in;
    tout += s.tokens_out;
    cost += s.cost_usd;
    if (s.status == StepStatus::Done) {
      ++done;
      last_done = &s;
    }
    // Where the chain stopped: the first failed step, else the first not done.
    if (s.status == StepStatus::Failed && (stop == nullptr || stop->status != StepStatus::Failed)) stop = &s;
    if (s.status != StepStatus::Done && stop == nullptr) stop = &s;
    ojson e = ojson::object();
    e["step"] = static_cast<int>(i) + 1;
    e["id"] = s.step_id;
    e["executor"] = s.executor;
    e["goal"] = s.goal;
    e["status"] = chain_step_status(s.status);
    auto ps = plan_steps.find(s.step_id);
    RiskLevel risk = ps != plan_steps.end() ? risk_of(*ps->second, executors) : RiskLevel::Low;
    if (i < recorded_risks.size() && recorded_risks[i].is_string())
      if (auto level = parse_risk_level(recorded_risks[i].get<std::string>())) risk = *level;
    e["risk"] = risk_level_name(risk);
    e["duration_ms"] = s.wall_ms;
    e["attempts"] = attempt_count[s.step_id];
    e["tokens"] = route::skill_output_tokens(s.tokens_in, s.tokens_out);
    e["cost_usd"] = s.cost_usd;
    if (s.status == StepStatus::Done) {
      e["result_bytes"] = s.result.size();
      if (s.result.size() <= kMaxReportedResult) {
        e["result"] = result_value(s.result);
        e["result_truncated"] = false;
      } else {
        e["result"] = utf8_prefix(s.result, kTruncatedResult);
        e["result_truncated"] = true;
      }
    }
    e["reason"] = s.reason;
    chain_list.push_back(std::move(e));
  }
  r["tokens_used"] = route::skill_output_tokens(tin, tout);
  r["cost_usd"] = cost;
  r["execution_chain"] = std::move(chain_list);
  if (last_done != nullptr) {
    r["output"]["data"] = last_done->result.size() <= kMaxReportedResult
                              ? result_value(last_done->result)
                              : ojson(utf8_prefix(last_done->result, kTruncatedResult));
  }

  const int total = static_cast<int>(steps.size());
  const int n = stop ? stop->idx + 1 : 0;
  const std::string stop_desc =
      stop ? fmt::format("step {}/{} '{}' ({})", n, total, stop->step_id, stop->executor) : std::string();
  auto set_error = [&](const std::string& code, const std::string& message, bool recoverable) {
    r["error"] =
        route::skill_output_error(code, message, recoverable, stop ? std::optional<int>(n) : std::nullopt);
  };
  switch (status) {
    case RunStatus::Succeeded:
      r["status"] = "success";
      r["output"]["summary"] = fmt::format("chain of {} step{} succeeded", total, total == 1 ? "" : "s");
      break;
    case RunStatus::Running:
      r["status"] = "running";
      r["output"]["summary"] = fmt::format("chain running: {} of {} steps done", done, total);
      break;
    case RunStatus::AwaitingApproval: {
      // The first step waiting is where the chain paused.
      for (const auto& s : steps)
        if (s.status == StepStatus::AwaitingApproval) {
          stop = &s;
          break;
        }
      const int k = stop ? stop->idx + 1 : 0;
      r["status"] = "awaiting_approval";
      r["output"]["summary"] = fmt::format("chain paused at step {}/{}: awaiting approval", k, total);
      r["error"] = route::skill_output_error(fmt::format("CHAIN_PAUSED_STEP_{}", k),
                                             stop ? fmt::format("step {}/{} '{}' ({}): {}", k, total,
                                                                stop->step_id, stop->executor, stop->reason)
                                                  : run["reason"].get<std::string>(),
                                             true, stop ? std::optional<int>(k) : std::nullopt);
      break;
    }
    case RunStatus::Interrupted:
    case RunStatus::Cancelled: {
      const bool interrupted = status == RunStatus::Interrupted;
      r["status"] = interrupted ? "interrupted" : "cancelled";
      r["output"]["summary"] =
          fmt::format("chain {} at {}", interrupted ? "interrupted" : "cancelled", stop_desc);
      std::string why = run["reason"].get<std::string>();
      if (why.find("orch resume") == std::string::npos)
        why += fmt::format("; `orch resume {}` continues it", run_id);
      set_error(fmt::format("CHAIN_{}_STEP_{}", interrupted ? "INTERRUPTED" : "CANCELLED", n), why, true);
      break;
    }
    case RunStatus::BudgetExhausted:
      r["status"] = done > 0 ? "partial" : "error";
      r["output"]["summary"] = fmt::format("chain stopped at {}: budget exhausted", stop_desc);
      set_error(fmt::format("CHAIN_BUDGET_EXHAUSTED_STEP_{}", n),
                fmt::format("{}: {}", stop_desc,
                            stop && !stop->reason.empty() ? stop->reason : run["reason"].get<std::string>()),
                false);
      break;
    case RunStatus::Failed:
    case RunStatus::Escalated: {
      // Recoverable: the step's last attempt ended in a way that may not repeat
      // (timed out, stalled, killed, interrupted), so `orch resume` may well finish it.
      bool recoverable = false;
      if (stop) {
        if (auto it = last_attempt.find(stop->step_id); it != last_attempt.end()) {
          const AttemptRecord& a = *it->second;
          recoverable = a.status == AttemptStatus::TimedOut || a.status == AttemptStatus::Stalled ||
                        a.status == AttemptStatus::Interrupted || a.status == AttemptStatus::Cancelled ||
                        a.ending == "signaled" || was_transient(store, run_id, a);
        }
      }
      const int skipped = total - n;
      r["status"] = done > 0 ? "partial" : "error";
      r["output"]["summary"] = fmt::format("chain aborted at {}; {} later step{} skipped", stop_desc, skipped,
                                           skipped == 1 ? "" : "s");
      set_error(
          fmt::format("CHAIN_ABORTED_STEP_{}", n),
          fmt::format("{} failed: {}", stop_desc, stop ? stop->reason : run["reason"].get<std::string>()),
          recoverable);
      break;
    }
  }
  return r;
}

ojson chain_dry_run_report(const Chain& chain, const ExecutorRegistry& executors,
                           const DryRunOptions& options) {
  ojson r = report_skeleton("dry_run", chain.max_steps);
  const std::filesystem::path workspace = std::filesystem::absolute(options.workspace);
  ojson list = ojson::array();
  int refused = 0, waiting = 0;
  const ResultLookup none{[](const std::string&) -> std::optional<std::string> { return std::nullopt; },
                          [](int) -> std::optional<std::string> { return std::nullopt; }, nullptr};
  for (std::size_t i = 0; i < chain.plan.steps.size(); ++i) {
    const Step& step = chain.plan.steps[i];
    const Executor* executor = executors.find(step.executor);
    const RiskLevel risk = risk_of(step, executors);
    std::string guard = "runs";
    if (risk == RiskLevel::Critical) {
      guard = "refused";
      ++refused;
    } else if (risk != RiskLevel::Low) {
      const bool approved =
          options.approve_steps.contains(step.id) || (risk == RiskLevel::Medium && options.approve_medium);
      guard = approved ? "approved" : "needs_approval";
      if (!approved) ++waiting;
    }
    AttemptSpec spec;
    spec.run_id = "dry-run";
    spec.step_id = step.id;
    spec.executor = step.executor;
    spec.goal = step.goal;
    spec.workspace = workspace;
    // Filled when nothing depends on an earlier result; otherwise shown as written.
    if (auto rendered = render_step(step, none, 1, "")) {
      spec.argv = rendered->argv;
      spec.env = rendered->env;
      spec.inputs = rendered->inputs;
    } else {
      spec.inputs = step.inputs;
      spec.argv = step.run;
      if (step.sh) spec.argv = {"/bin/sh", "-c", *step.sh};
    }
    ojson e = ojson::object();
    e["step"] = static_cast<int>(i) + 1;
    e["id"] = step.id;
    e["executor"] = step.executor;
    e["goal"] = step.goal;
    e["status"] = "planned";
    e["risk"] = risk_level_name(risk);
    e["guard"] = guard;
    std::string command = executor ? executor->describe(spec) : std::string();
    if (i > 0 && step.env.contains("ORCH_CHAIN_PREVIOUS"))
      command += fmt::format("\nenv ORCH_CHAIN_PREVIOUS: the result of step {}", i);
    e["command"] = command;
    e["duration_ms"] = 0;
    e["attempts"] = 0;
    e["tokens"] = route::skill_output_tokens(0, 0);
    e["cost_usd"] = 0.0;
    e["reason"] = "";
    list.push_back(std::move(e));
  }
  const std::size_t n = chain.plan.steps.size();
  std::string summary =
      fmt::format("{} step{} (limit {}), nothing was run", n, n == 1 ? "" : "s", chain.max_steps);
  if (refused > 0) summary += fmt::format("; {} would be refused (critical risk)", refused);
  if (waiting > 0) summary += fmt::format("; {} would wait for approval", waiting);
  r["output"]["summary"] = summary;
  r["execution_chain"] = std::move(list);
  return r;
}

ojson chain_error_report(const std::string& code, const std::string& message, int max_steps,
                         const std::vector<std::string>& problems) {
  ojson r = report_skeleton("error", max_steps);
  r["output"]["summary"] = message;
  r["error"] = route::skill_output_error(code, message, false, std::nullopt);
  if (!problems.empty()) r["error"]["problems"] = problems;
  return r;
}

std::string format_chain_report(const ojson& report) {
  const std::string status = report["status"];
  std::string out;
  const auto& run_id = report["run_id"];
  out += fmt::format("chain{} {}: {}\n", run_id.is_string() ? " " + run_id.get<std::string>() : std::string(),
                     status, report["output"]["summary"].get<std::string>());
  const auto& list = report["execution_chain"];
  std::size_t id_w = 4, ex_w = 8;
  for (const auto& e : list) {
    id_w = std::max(id_w, e["id"].get<std::string>().size());
    ex_w = std::max(ex_w, e["executor"].get<std::string>().size());
  }
  id_w = std::min<std::size_t>(id_w, 32);
  ex_w = std::min<std::size_t>(ex_w, 32);
  const bool dry = status == "dry_run";
  if (!list.empty()) {
    if (dry)
      out += fmt::format("  {:>2}  {:<{}}  {:<{}}  {:<8}  {}\n", "#", "STEP", id_w, "EXECUTOR", ex_w, "RISK",
                         "GUARD");
    else
      out += fmt::format("  {:>2}  {:<{}}  {:<{}}  {:<8}  {:<17}  {:>8}  {:>8}  {}\n", "#", "STEP", id_w,
                         "EXECUTOR", ex_w, "RISK", "STATUS", "TIME", "TOKENS", "REASON");
  }
  for (const auto& e : list) {
    if (dry) {
      out += fmt::format("  {:>2}  {:<{}}  {:<{}}  {:<8}  {}\n", e["step"].get<int>(),
                         e["id"].get<std::string>(), id_w, e["executor"].get<std::string>(), ex_w,
                         e["risk"].get<std::string>(), e["guard"].get<std::string>());
      std::string command = e["command"];
      std::istringstream lines(command);
      for (std::string line; std::getline(lines, line);) out += "        " + line + "\n";
      continue;
    }
    std::string reason = e["reason"];
    if (auto nl = reason.find('\n'); nl != std::string::npos) reason = reason.substr(0, nl);
    if (reason.size() > 100) reason = utf8_prefix(reason, 97) + "...";
    out += fmt::format("  {:>2}  {:<{}}  {:<{}}  {:<8}  {:<17}  {:>8}  {:>8}  {}\n", e["step"].get<int>(),
                       e["id"].get<std::string>(), id_w, e["executor"].get<std::string>(), ex_w,
                       e["risk"].get<std::string>(), e["status"].get<std::string>(),
                       human_duration(e["duration_ms"].get<std::int64_t>()),
                       e["tokens"]["total"].get<std::int64_t>(), reason);
  }
  if (!dry && report["run_id"].is_string())
    out += fmt::format(
        "tokens {} (in {}, out {}), cost {}, {}\n", report["tokens_used"]["total"].get<std::int64_t>(),
        report["tokens_used"]["input"].get<std::int64_t>(),
        report["tokens_used"]["output"].get<std::int64_t>(), dollars(report["cost_usd"].get<double>()),
        human_duration(report["duration_ms"].get<std::int64_t>()));
  if (report["error"].is_object()) {
    const auto& e = report["error"];
    out += fmt::format(
        "error {} ({}): {}\n", e["code"].get<std::string>(),
        e["recoverable"].get<bool>() ? "recoverable: `orch resume` may continue it" : "not recoverable",
        e["message"].get<std::string>());
    if (e.contains("problems"))
      for (const auto& p : e["problems"]) out += "  " + p.get<std::string>() + "\n";
  }
  return out;
}

int chain_exit_code(const ojson& report) {
  const std::string status = report["status"];
  if (status == "success" || status == "dry_run") return kExitSucceeded;
  if (status == "awaiting_approval") return kExitEscalated;
  if (status == "interrupted" || status == "cancelled") return kExitInterrupted;
  if (report["error"].is_object()) {
    const std::string code = report["error"]["code"];
    if (code == "chain_limit_exceeded" || code == "invalid_chain") return kExitInvalid;
    if (code.starts_with("CHAIN_BUDGET_EXHAUSTED_")) return kExitBudget;
  }
  return kExitFailed;
}

}  // namespace orch::flows
