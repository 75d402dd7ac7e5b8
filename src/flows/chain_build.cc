// `orch chain`: a chain's steps turned into an ordinary plan (step n+1 depends
// on step n, on_failure abort, concurrency 1), the output of each passed to the
// next, the step limit, and the run through the engine.
#include <fmt/format.h>

#include <map>
#include <set>

#include "engine/attempt_render.h"
#include "flows/chain.h"
#include "flows/chain_internal.h"
#include "orch/placeholder.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::flows {

using ojson = nlohmann::ordered_json;

namespace chain_detail {

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

ChainRefusal invalid(std::string message, std::vector<std::string> problems) {
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

RiskLevel risk_of(const Step& step, const ExecutorRegistry& executors) {
  if (const Executor* e = executors.find(step.executor)) return e->risk(step);
  return step.risk.value_or(RiskLevel::Low);
}

}  // namespace chain_detail

ChainExpected<Chain> build_chain(const ChainInput& input, const ChainOptions& options) {
  const ojson& steps = input.steps;
  const std::string what = input.source.empty() ? "--steps" : input.source;
  if (!steps.is_array())
    return std::unexpected(chain_detail::invalid(fmt::format("{}: a chain is a JSON array of steps, got {}",
                                                             what, chain_detail::json_type_name(steps))));
  if (steps.empty())
    return std::unexpected(chain_detail::invalid(fmt::format("{}: a chain needs at least one step", what)));
  if (options.max_steps < 1)
    return std::unexpected(
        chain_detail::invalid(fmt::format("the step limit must be at least 1 (got {})", options.max_steps)));
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
  std::vector<std::string> all_keys = chain_detail::kOwnKeys;
  all_keys.insert(all_keys.end(), chain_detail::kPlanKeys.begin(), chain_detail::kPlanKeys.end());
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
                          chain_detail::json_type_name(item)));
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
        problem(
            fmt::format("'id' must be a non-empty string, got {}", chain_detail::json_type_name(item["id"])));
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
      problem(fmt::format("'executor' must be a non-empty string, got {}",
                          chain_detail::json_type_name(item["executor"])));
      ok = false;
    } else {
      executor = item["executor"].get<std::string>();
    }
    if (item.contains("goal") && !item["goal"].is_string()) {
      problem(fmt::format("'goal' must be a string, got {}", chain_detail::json_type_name(item["goal"])));
      ok = false;
    } else if (item.contains("goal") &&
               item["goal"].get<std::string>().find("${previous") != std::string::npos) {
      problem("'goal' is not a template: put ${previous.result} in an input instead");
      ok = false;
    }
    if (item.contains("inputs") && !item["inputs"].is_object()) {
      problem(
          fmt::format("'inputs' must be an object, got {}", chain_detail::json_type_name(item["inputs"])));
      ok = false;
    }
    if (item.contains("pass_previous") && !item["pass_previous"].is_boolean()) {
      problem(fmt::format("'pass_previous' must be true or false, got {}",
                          chain_detail::json_type_name(item["pass_previous"])));
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
    for (const auto& key : chain_detail::kPlanKeys)
      if (item.contains(key)) step[key] = item[key];
    ojson inputs = item.value("inputs", ojson::object());
    // ${previous.…} wherever a template may be.
    std::string error;
    chain_detail::rewrite_leaves(inputs, prev_id, "inputs", error);
    if (step.contains("run")) chain_detail::rewrite_leaves(step["run"], prev_id, "run", error);
    if (step.contains("sh")) chain_detail::rewrite_leaves(step["sh"], prev_id, "sh", error);
    if (step.contains("env")) chain_detail::rewrite_leaves(step["env"], prev_id, "env", error);
    if (!error.empty()) {
      problem(error);
      prev_id = id;
      continue;
    }
    // The implicit channel, when the step does not take the previous result itself.
    const bool pass = item.value("pass_previous", true);
    const bool explicit_ref = chain_detail::refers_to(inputs, prev_id) ||
                              (step.contains("run") && chain_detail::refers_to(step["run"], prev_id)) ||
                              (step.contains("sh") && chain_detail::refers_to(step["sh"], prev_id)) ||
                              (step.contains("env") && chain_detail::refers_to(step["env"], prev_id));
    if (!prev_id.empty() && pass && !explicit_ref) {
      const std::string ref = "${steps." + prev_id + ".result}";
      if (chain_detail::has_prefix(executor, "tool:") || executor == "shell") {
        if (!step.contains("env") || !step["env"].is_object()) {
          if (!step.contains("env")) step["env"] = ojson::object();
        }
        if (step["env"].is_object() && !step["env"].contains("ORCH_CHAIN_PREVIOUS"))
          step["env"]["ORCH_CHAIN_PREVIOUS"] = ref;
      } else if (chain_detail::has_prefix(executor, "worker:") || executor == "builtin:json") {
        if (!inputs.contains("previous")) inputs["previous"] = ref;
      } else if (executor == "llm" || chain_detail::has_prefix(executor, "llm:")) {
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
    return std::unexpected(chain_detail::invalid(std::move(msg), std::move(list)));
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
  const auto pos = chain_detail::positions_of(loaded.plan);
  for (const auto& d : loaded.diagnostics) problems.push_back(chain_detail::diagnostic_text(d, pos));
  if (!problems.empty()) return refuse(std::move(problems));
  loaded.plan.source_path = input.source;
  Diagnostics semantic =
      validate_plan(loaded.plan, validate_options_for(options.workspace, input.source, *options.executors));
  for (const auto& d : semantic) problems.push_back(chain_detail::diagnostic_text(d, pos));
  if (!problems.empty()) return refuse(std::move(problems));
  // The risk of each step as its executor saw it when the chain was built, kept
  // in the stored plan so the report can be rebuilt from the ledger alone.
  ojson risks = ojson::array();
  for (const auto& st : loaded.plan.steps)
    risks.push_back(risk_level_name(chain_detail::risk_of(st, *options.executors)));
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
    return std::unexpected(chain_detail::invalid(
        fmt::format("--approve {}: the plan has no step '{}'{}", id, id, did_you_mean(id, ids))));
  }
  return {};
}

Expected<RunOutcome> run_chain(Store& store, const Chain& chain, EngineOptions options) {
  options.keep_going = false;  // abort on failure is what a chain is
  Engine engine(store, std::move(options));
  return engine.run(chain.plan, chain.text);
}

}  // namespace orch::flows
