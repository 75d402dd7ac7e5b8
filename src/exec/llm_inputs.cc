#include "exec/llm_inputs.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "orch/validate.h"
#include "util/strings.h"

namespace orch {

namespace {

using ojson = nlohmann::ordered_json;

const std::vector<std::string>& known_inputs() {
  static const std::vector<std::string> names{
      "prompt", "system", "response_format", "temperature", "top_p", "max_tokens", "stop", "seed"};
  return names;
}

bool is_whole(const ojson& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 0x1p53;
}

// The seed as the request carries it: the integer as written (never through a
// double, which would round one past 2^53), or a float with no fraction.
std::optional<std::int64_t> seed_of(const ojson& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<std::int64_t>();
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (is_whole(v)) return static_cast<std::int64_t>(v.get<double>());  // within 2^53: exact
  return std::nullopt;
}

}  // namespace

void check_llm_inputs(const Step& step, std::optional<LlmApi> api, Diagnostics& out) {
  if (!step.inputs.is_object()) return;
  auto problem = [&](const std::string& name, std::string message) {
    out.push_back(step_diagnostic(step, {"inputs"}, fmt::format("inputs.{}: {}", name, std::move(message))));
  };
  for (const auto& [name, value] : step.inputs.items()) {
    if (name == "tools" || name == "tool_choice" || name == "functions") {
      problem(name,
              "an llm step is one call and runs no tools: give each tool a step of its own (`executor: "
              "tool:NAME`, docs/tools.md) or use a worker (an agent CLI)");
    } else if (name == "temperature") {
      // The Messages API takes 0 to 1, Chat Completions 0 to 2.
      const double most = api == LlmApi::Anthropic ? 1 : 2;
      if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > most)
        problem(name, fmt::format("must be a number from 0 to {} for this model's API, not {}", most,
                                  quote_for_message(value.dump())));
    } else if (name == "top_p") {
      if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() > 1)
        problem(name, fmt::format("must be a number above 0 and at most 1, not {}",
                                  quote_for_message(value.dump())));
    } else if (name == "max_tokens") {
      if (!is_whole(value) || value.get<double>() < 1 ||
          value.get<double>() > static_cast<double>(std::numeric_limits<int>::max()))
        problem(name, fmt::format("must be a whole number of tokens above 0, not {}",
                                  quote_for_message(value.dump())));
    } else if (name == "stop") {
      bool ok = value.is_string() && !value.get_ref<const std::string&>().empty();
      if (value.is_array()) {
        ok = !value.empty() && value.size() <= 4;
        for (const auto& s : value) ok = ok && s.is_string() && !s.get_ref<const std::string&>().empty();
      }
      if (!ok) problem(name, "must be a non-empty string or a list of 1 to 4 non-empty strings");
    } else if (name == "seed") {
      if (!seed_of(value))
        problem(name, fmt::format("must be a whole number that fits in 64 bits, not {}",
                                  quote_for_message(value.dump())));
      else if (api == LlmApi::Anthropic)
        problem(name, "the Anthropic Messages API takes no seed: this step's model cannot be seeded");
    } else if (std::find(known_inputs().begin(), known_inputs().end(), name) == known_inputs().end()) {
      problem(name, fmt::format("not an input of an llm step, and it would not be sent (inputs: {}){}",
                                join(known_inputs(), ", "), did_you_mean(name, known_inputs())));
    }
  }
}

std::int64_t llm_reply_tokens(const LlmModel& model, const ojson& inputs) {
  if (inputs.is_object())
    if (auto it = inputs.find("max_tokens"); it != inputs.end() && is_whole(*it) && it->get<double>() >= 1)
      return static_cast<std::int64_t>(it->get<double>());
  return model.max_tokens;
}

void add_sampling_inputs(nlohmann::json& body, LlmApi api, const ojson& inputs) {
  if (!inputs.is_object()) return;
  for (const char* name : {"temperature", "top_p"})
    if (auto it = inputs.find(name); it != inputs.end() && it->is_number()) body[name] = it->get<double>();
  if (auto it = inputs.find("stop"); it != inputs.end()) {
    nlohmann::json stops = nlohmann::json::array();
    if (it->is_string()) stops.push_back(it->get<std::string>());
    if (it->is_array())
      for (const auto& s : *it)
        if (s.is_string()) stops.push_back(s.get<std::string>());
    if (!stops.empty()) body[api == LlmApi::Anthropic ? "stop_sequences" : "stop"] = std::move(stops);
  }
  if (auto it = inputs.find("seed"); it != inputs.end() && api == LlmApi::OpenAi)
    if (auto seed = seed_of(*it)) body["seed"] = *seed;
}

}  // namespace orch
