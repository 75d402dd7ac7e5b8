// An attempt's spec and outcome as CBOR. See attempt_wire.h.
#include "distrib/attempt_wire.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace orch::distrib {

namespace {

// Ordered: a step's inputs keep their keys' order, which is part of what it is given.
using Json = nlohmann::ordered_json;

// The wire format's version: a worker refuses a spec of another one, rather
// than running a command it read wrong.
constexpr int kWireVersion = 1;

Json optional_ms(const std::optional<std::chrono::milliseconds>& ms) {
  return ms ? Json(ms->count()) : Json(nullptr);
}

std::optional<std::chrono::milliseconds> read_ms(const Json& j) {
  if (j.is_null()) return std::nullopt;
  return std::chrono::milliseconds(j.get<std::int64_t>());
}

std::optional<std::string> read_text(const Json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<std::string>();
}

Json text_or_null(const std::optional<std::string>& s) {
  return s ? Json(*s) : Json(nullptr);
}

template <class T>
Expected<T> decoded(std::string_view what, std::string_view bytes, T (*read)(const Json&)) {
  try {
    const Json j = Json::from_cbor(bytes.begin(), bytes.end());
    if (!j.is_object() || j.value("v", 0) != kWireVersion)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("{} of another wire version (this orch reads version {})", what, kWireVersion));
    return read(j);
  } catch (const Json::exception& e) {
    return fail(ErrorCode::InvalidInput, fmt::format("{} cannot be read: {}", what, e.what()));
  }
}

AttemptSpec read_spec(const Json& j) {
  AttemptSpec s;
  s.run_id = j.at("run").get<std::string>();
  s.step_id = j.at("step").get<std::string>();
  s.attempt = j.at("attempt").get<int>();
  s.executor = j.at("executor").get<std::string>();
  s.goal = j.at("goal").get<std::string>();
  s.previous_failure = j.at("previous_failure").get<std::string>();
  s.argv = j.at("argv").get<std::vector<std::string>>();
  for (const auto& pair : j.at("env"))
    s.env.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  s.inputs = j.at("inputs");
  s.workspace = j.at("workspace").get<std::string>();
  s.runs_on = j.at("runs_on").get<std::vector<std::string>>();
  if (auto out = read_text(j.at("output_file"))) s.output_file = *out;
  s.timeout = read_ms(j.at("timeout"));
  if (!j.at("token_cap").is_null()) s.token_cap = j.at("token_cap").get<std::int64_t>();
  s.kill_grace = std::chrono::milliseconds(j.at("kill_grace").get<std::int64_t>());
  s.max_output = j.at("max_output").get<std::int64_t>();
  return s;
}

AttemptOutcome read_outcome(const Json& j) {
  AttemptOutcome o;
  o.ending = parse_attempt_ending(j.at("ending").get<std::string>()).value_or(AttemptEnding::Error);
  o.exit_code = j.at("exit_code").get<int>();
  o.signal = j.at("signal").get<int>();
  o.result = j.at("result").get<std::string>();
  o.message = j.at("message").get<std::string>();
  o.output_tail = j.at("output_tail").get<std::string>();
  o.stdout_truncated = j.at("stdout_truncated").get<bool>();
  o.stderr_truncated = j.at("stderr_truncated").get<bool>();
  o.stdout_bytes = j.at("stdout_bytes").get<std::int64_t>();
  o.stderr_bytes = j.at("stderr_bytes").get<std::int64_t>();
  o.tokens_in = j.at("tokens_in").get<std::int64_t>();
  o.tokens_out = j.at("tokens_out").get<std::int64_t>();
  o.cache_read_tokens = j.at("cache_read_tokens").get<std::int64_t>();
  o.cache_write_tokens = j.at("cache_write_tokens").get<std::int64_t>();
  o.cost_usd = j.at("cost_usd").get<double>();
  o.duration = std::chrono::milliseconds(j.at("duration_ms").get<std::int64_t>());
  o.spend_unknown = j.at("spend_unknown").get<bool>();
  o.transient = j.at("transient").get<bool>();
  o.retry_after = read_ms(j.at("retry_after"));
  o.stdout_text = read_text(j.at("stdout_text"));
  o.stderr_text = read_text(j.at("stderr_text"));
  o.host = j.at("host").get<std::string>();
  o.model = j.value("model", std::string());
  return o;
}

std::string cbor(const Json& j) {
  const std::vector<std::uint8_t> bytes = Json::to_cbor(j);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

std::string encode_spec(const AttemptSpec& s) {
  Json env = Json::array();
  for (const auto& [name, value] : s.env) env.push_back(Json::array({name, value}));
  Json j = {{"v", kWireVersion},
            {"run", s.run_id},
            {"step", s.step_id},
            {"attempt", s.attempt},
            {"executor", s.executor},
            {"goal", s.goal},
            {"previous_failure", s.previous_failure},
            {"argv", s.argv},
            {"env", std::move(env)},
            {"inputs", s.inputs},
            {"workspace", s.workspace.string()},
            {"runs_on", s.runs_on},
            {"output_file", s.output_file ? Json(s.output_file->string()) : Json(nullptr)},
            {"timeout", optional_ms(s.timeout)},
            {"token_cap", s.token_cap ? Json(*s.token_cap) : Json(nullptr)},
            {"kill_grace", s.kill_grace.count()},
            {"max_output", s.max_output}};
  return cbor(j);
}

Expected<AttemptSpec> decode_spec(std::string_view bytes) {
  return decoded<AttemptSpec>("a queued attempt's spec", bytes, &read_spec);
}

std::string encode_outcome(const AttemptOutcome& o) {
  Json j = {{"v", kWireVersion},
            {"ending", attempt_ending_name(o.ending)},
            {"exit_code", o.exit_code},
            {"signal", o.signal},
            {"result", o.result},
            {"message", o.message},
            {"output_tail", o.output_tail},
            {"stdout_truncated", o.stdout_truncated},
            {"stderr_truncated", o.stderr_truncated},
            {"stdout_bytes", o.stdout_bytes},
            {"stderr_bytes", o.stderr_bytes},
            {"tokens_in", o.tokens_in},
            {"tokens_out", o.tokens_out},
            {"cache_read_tokens", o.cache_read_tokens},
            {"cache_write_tokens", o.cache_write_tokens},
            {"cost_usd", o.cost_usd},
            {"duration_ms", o.duration.count()},
            {"spend_unknown", o.spend_unknown},
            {"transient", o.transient},
            {"retry_after", optional_ms(o.retry_after)},
            {"stdout_text", text_or_null(o.stdout_text)},
            {"stderr_text", text_or_null(o.stderr_text)},
            {"host", o.host},
            {"model", o.model}};
  return cbor(j);
}

Expected<AttemptOutcome> decode_outcome(std::string_view bytes) {
  return decoded<AttemptOutcome>("a worker's outcome", bytes, &read_outcome);
}

}  // namespace orch::distrib
