#include "exec/worker_config.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "exec/config_check.h"
#include "util/yaml_json.h"

namespace orch {

using nlohmann::json;

const WorkerConfig* WorkerCatalog::find(const std::string& executor) const {
  if (!executor.starts_with("worker:")) return nullptr;
  auto it = workers.find(executor.substr(7));
  return it == workers.end() ? nullptr : &it->second;
}

namespace {

const std::vector<std::string> kSlots{"prompt", "prompt_file", "workspace", "model"};

// Every "{...}" in an argv element must be a known slot.
void check_slots(ConfigChecker& check, const std::string& field, const std::string& arg) {
  for (std::size_t open = arg.find('{'); open != std::string::npos; open = arg.find('{', open + 1)) {
    std::size_t close = arg.find('}', open);
    if (close == std::string::npos) return;
    std::string name = arg.substr(open + 1, close - open - 1);
    if (std::find(kSlots.begin(), kSlots.end(), name) == kSlots.end())
      check.problem(field,
                    fmt::format("unknown slot '{{{}}}' (slots: {{prompt}}, {{prompt_file}}, {{workspace}}, "
                                "{{model}}){}",
                                name, did_you_mean(name, kSlots)));
  }
}

}  // namespace

Expected<WorkerCatalog> parse_worker_catalog(const std::string& text, const std::string& file) {
  json doc = ORCH_TRY(parse_config_yaml(text, file));
  ConfigChecker check(file);
  WorkerCatalog catalog;
  if (!doc.is_object()) {
    check.problem("(top)", "must be a mapping with 'workers'");
    return std::unexpected(check.error());
  }
  check.only_keys(doc, "", {"workers"});
  json workers = doc.value("workers", json::object());
  if (!workers.is_object() || workers.empty()) check.problem("workers", "must map worker names to workers");
  if (!workers.is_object()) workers = json::object();
  for (const auto& [name, w] : workers.items()) {
    const std::string field = "workers." + name;
    if (!is_executor_name(name))
      check.problem(field, fmt::format("a worker name is {} (it is written `worker:NAME` in a plan)",
                                       kExecutorNameRule));
    if (!w.is_object()) {
      check.problem(field, "must be a mapping");
      continue;
    }
    check.only_keys(w, field,
                    {"argv", "stdin", "model", "output", "result", "usage", "error", "error_message",
                     "timeout", "stall_after", "env", "reserve_tokens"});
    WorkerConfig c;
    c.name = name;
    auto argv = w.find("argv");
    if (argv == w.end() || !argv->is_array() || argv->empty()) {
      check.problem(field + ".argv", "must be a non-empty list of arguments, e.g. [agent, -p, \"{prompt}\"]");
    } else {
      bool has_prompt = false;
      for (std::size_t i = 0; i < argv->size(); ++i) {
        const json& a = (*argv)[i];
        std::string f = fmt::format("{}.argv.{}", field, i);
        if (!a.is_string() && !a.is_number()) {
          check.problem(f, "must be a string");
          continue;
        }
        std::string arg = a.is_string() ? a.get<std::string>() : a.dump();
        check_slots(check, f, arg);
        has_prompt = has_prompt || arg.find("{prompt}") != std::string::npos ||
                     arg.find("{prompt_file}") != std::string::npos;
        c.argv.push_back(arg);
      }
      if (auto in = check.string(w, field, "stdin", false)) {
        if (*in == "prompt")
          c.prompt_on_stdin = true;
        else if (*in != "none")
          check.problem(field + ".stdin", fmt::format("'{}' is not prompt or none{}", *in,
                                                      did_you_mean(*in, {"prompt", "none"})));
      }
      if (!has_prompt && !c.prompt_on_stdin)
        check.problem(
            field + ".argv",
            "has no {prompt} or {prompt_file} slot, and stdin is not prompt: the worker would never "
            "see its task");
    }
    if (auto m = check.string(w, field, "model", false)) c.model = *m;
    if (auto o = check.string(w, field, "output", false)) {
      if (*o == "text") {
        c.output = WorkerOutput::Text;
      } else if (*o == "json") {
        c.output = WorkerOutput::Json;
      } else if (*o == "jsonl") {
        c.output = WorkerOutput::JsonLines;
      } else {
        check.problem(field + ".output", fmt::format("'{}' is not text, json or jsonl{}", *o,
                                                     did_you_mean(*o, {"text", "json", "jsonl"})));
      }
    }
    if (auto r = check.string(w, field, "result", false)) c.result_path = *r;
    if (c.output != WorkerOutput::Text && c.result_path.empty())
      check.problem(field + ".result", "missing: a json or jsonl worker names the path of its result text");
    if (c.output == WorkerOutput::Text && !c.result_path.empty())
      check.problem(field + ".result",
                    "only for output json or jsonl (a text worker's result is its stdout)");
    if (auto u = w.find("usage"); u != w.end() && !u->is_null()) {
      if (!u->is_object()) {
        check.problem(
            field + ".usage",
            "must be a mapping of tokens_in, tokens_out, cost_usd, cache_read, cache_write to paths");
      } else {
        check.only_keys(*u, field + ".usage",
                        {"tokens_in", "tokens_out", "cost_usd", "cache_read", "cache_write"});
        if (auto p = check.string(*u, field + ".usage", "tokens_in", false)) c.tokens_in_path = *p;
        if (auto p = check.string(*u, field + ".usage", "tokens_out", false)) c.tokens_out_path = *p;
        if (auto p = check.string(*u, field + ".usage", "cost_usd", false)) c.cost_path = *p;
        if (auto p = check.string(*u, field + ".usage", "cache_read", false)) c.cache_read_path = *p;
        if (auto p = check.string(*u, field + ".usage", "cache_write", false)) c.cache_write_path = *p;
        if (c.output == WorkerOutput::Text)
          check.problem(field + ".usage",
                        "only for output json or jsonl (a text worker may write $ORCH_USAGE_FILE)");
      }
    }
    if (auto e = check.string(w, field, "error", false)) c.error_path = *e;
    if (auto e = check.string(w, field, "error_message", false)) c.error_message_path = *e;
    if (c.output == WorkerOutput::Text && !c.error_path.empty())
      check.problem(field + ".error",
                    "only for output json or jsonl (a text worker's failure is its exit status)");
    if (!c.error_message_path.empty() && c.error_path.empty())
      check.problem(field + ".error_message", "needs 'error': the path that says the answer is an error");
    c.timeout = check.duration(w, field, "timeout");
    c.stall_after = check.duration(w, field, "stall_after");
    if (auto r = w.find("reserve_tokens"); r != w.end() && !r->is_null()) {
      if (!r->is_number_integer() || r->get<std::int64_t>() < 0)
        check.problem(field + ".reserve_tokens", "must be a whole number of tokens, 0 or more");
      else
        c.reserve_tokens = r->get<std::int64_t>();
    }
    if (auto e = w.find("env"); e != w.end() && !e->is_null()) {
      if (!e->is_object()) {
        check.problem(field + ".env", "must map variable names to values");
      } else {
        for (const auto& [k, v] : e->items()) {
          if (!is_identifier(k)) check.problem(field + ".env." + k, "not a valid environment variable name");
          if (v.is_string())
            c.env[k] = v.get<std::string>();
          else if (v.is_number() || v.is_boolean())
            c.env[k] = v.dump();
          else
            check.problem(field + ".env." + k, "must be a string");
        }
      }
    }
    catalog.workers[name] = std::move(c);
  }
  if (!check.ok()) return std::unexpected(check.error());
  return catalog;
}

Expected<WorkerCatalog> load_worker_catalog(const std::filesystem::path& file) {
  return parse_worker_catalog(ORCH_TRY(read_config_file(file, "workers")), file.string());
}

}  // namespace orch
