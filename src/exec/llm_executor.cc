#include "exec/llm_executor.h"

#include <fmt/format.h>

#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

#include "exec/curl_api.h"
#include "exec/llm_inputs.h"
#include "exec/output_sink.h"
#include "exec/usage_figures.h"
#include "orch/validate.h"
#include "util/json_schema.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch {

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// The text of a rendered input: strings as they are, anything else as JSON.
std::optional<std::string> input_text(const nlohmann::ordered_json& inputs, const char* name) {
  if (!inputs.is_object()) return std::nullopt;
  auto it = inputs.find(name);
  if (it == inputs.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  return json_text(*it);
}

// The provider's own error message, if its body has one (both APIs put it at error.message).
std::string provider_message(const std::string& body) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_object() && doc.contains("error") && doc["error"].is_object() &&
      doc["error"].contains("message") && doc["error"]["message"].is_string())
    return doc["error"]["message"].get<std::string>();
  std::string text = body.substr(0, 300);
  return text;
}

// Why the figure `usage.key` cannot be charged to a budget ("" when it can): it
// must be a non-negative integer that fits an int64 (a negative one would lower
// the run's spend).
std::string bad_usage_figure(const json& usage, const char* key) {
  const json& v = usage.at(key);
  auto count = token_count(v);
  return count ? ""
               : fmt::format("usage.{} = {}, {}", key, quote_for_message(v.dump()), count.error().message);
}

}  // namespace

struct LlmExecutor::Call {
  std::string provider;
  std::string key_env;  // the provider's api_key_env ("" when it sends no key)
  const LlmModel* model = nullptr;
  LlmApi api = LlmApi::OpenAi;
  HttpRequest request;
  DoneCallback done;
  AttemptSpec spec;
  std::int64_t max_tokens = 0;  // what the call asked for: reply_cap, or less to fit the budget
  std::int64_t reply_cap = 0;   // the step's max_tokens input, else the model's
  bool held_by_budget = false;  // max_tokens is below the model's because of AttemptSpec::token_cap
  HttpClient::RequestId id = 0;
  bool launched = false;
  bool finished = false;
  SteadyClock::time_point queued = SteadyClock::now();
};

struct LlmExecutor::ProviderState {
  int in_flight = 0;
  std::deque<std::weak_ptr<Call>> waiting;
};

class LlmExecutor::Attempt final : public RunningAttempt {
 public:
  Attempt(LlmExecutor& executor, std::shared_ptr<Call> call)
      : executor_(executor), alive_(executor.alive_), call_(std::move(call)) {}
  ~Attempt() override { stop(); }

  void cancel(const std::string& reason) override {
    auto held = alive_.lock();
    if (!held || call_->finished || !call_->done) return;
    stop();
    AttemptOutcome outcome;
    outcome.ending = AttemptEnding::Cancelled;
    outcome.message = reason;
    DoneCallback done = std::move(call_->done);
    call_->done = nullptr;
    executor_.loop_->defer(
        [done = std::move(done), outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
  }

 private:
  // Takes the call out of the provider's hands: the request is cancelled, its slot freed.
  void stop() {
    auto held = alive_.lock();
    if (!held || call_->finished) return;
    call_->finished = true;
    if (call_->launched) {
      executor_.client_->cancel(call_->id);
      executor_.release_slot(call_->provider);
    }
  }

  LlmExecutor& executor_;
  std::weak_ptr<bool> alive_;
  std::shared_ptr<Call> call_;
};

LlmExecutor::LlmExecutor(std::shared_ptr<const LlmCatalog> catalog) : catalog_(std::move(catalog)) {}

LlmExecutor::~LlmExecutor() {
  *alive_ = false;
}

void LlmExecutor::check_step(const Step& step, Diagnostics& out) const {
  auto problem = [&](std::string_view field, std::string message) {
    out.push_back(step_diagnostic(step, {field}, std::move(message)));
  };
  if (catalog_->models.empty()) {
    problem("executor",
            "no models are configured: pass --models FILE, or put one at .orch/models.yaml "
            "(docs/models.md)");
  } else if (catalog_->model_for(step.executor) == nullptr) {
    if (step.executor == "llm") {
      problem("executor", "executor 'llm' needs a default_model in the models file (or name one: llm:MODEL)");
    } else {
      std::vector<std::string> names;
      for (const auto& [name, m] : catalog_->models) names.push_back(name);
      std::string name = step.executor.substr(4);
      problem("executor", fmt::format("no model '{}' in the models file (models: {})", name,
                                      names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    }
  }
  if (!step.inputs.is_object() || !step.inputs.contains("prompt"))
    problem("inputs", "an llm step needs an input named 'prompt' (inputs: {prompt: ...})");
  const LlmModel* model = catalog_->model_for(step.executor);
  const LlmProvider* provider = model ? catalog_->provider_of(*model) : nullptr;
  check_llm_inputs(step, provider ? std::optional<LlmApi>(provider->api) : std::nullopt, out);
  if (step.inputs.is_object())
    if (auto it = step.inputs.find("response_format"); it != step.inputs.end()) {
      if (!it->is_object()) {
        problem(
            "inputs",
            "inputs.response_format must be a JSON Schema (a mapping), e.g. {type: object, required: [x]}");
      } else if (auto schema = JsonSchema::parse(nlohmann::json::parse(it->dump())); !schema) {
        problem("inputs", "inputs.response_format is not a usable JSON Schema: " + schema.error().message);
      }
    }
}

std::optional<std::string> LlmExecutor::setup_problem(const Step& step) const {
  const LlmModel* model = catalog_->model_for(step.executor);
  const LlmProvider* provider = model ? catalog_->provider_of(*model) : nullptr;
  if (provider == nullptr || provider->api_key_env.empty()) return std::nullopt;
  const char* value = std::getenv(provider->api_key_env.c_str());
  if (value != nullptr && *value != '\0') return std::nullopt;
  return fmt::format("provider '{}' takes its key from ${}, which is not set", provider->name,
                     provider->api_key_env);
}

std::vector<Postcondition> LlmExecutor::required_post(const Step& step) const {
  if (!step.inputs.is_object()) return {};
  auto it = step.inputs.find("response_format");
  if (it == step.inputs.end() || !it->is_object()) return {};
  Postcondition p;
  p.kind = PostKind::ResultJson;
  p.schema = nlohmann::json::parse(it->dump());
  return {p};
}

std::vector<Postcondition> LlmExecutor::default_post() const {
  Postcondition p;
  p.kind = PostKind::ResultNonempty;
  return {p};
}

namespace {
// The tokens a prompt is reckoned at before a call: its bytes / 3 (more than
// real tokenisers give for prose and code, so the reckoning errs high).
template <typename Inputs>
std::int64_t prompt_tokens_estimate(const Inputs& inputs) {
  std::int64_t prompt_bytes = 0;
  if (inputs.is_object())
    for (const char* name : {"prompt", "system"})
      if (auto it = inputs.find(name); it != inputs.end() && it->is_string())
        prompt_bytes += static_cast<std::int64_t>(it->template get_ref<const std::string&>().size());
  return prompt_bytes / 3 + 1;
}

// The smallest reply a call is worth making for when the token budget cannot
// pay for the model's whole max_tokens (a model's smaller max_tokens stands).
constexpr std::int64_t kMinReplyTokens = 256;
}  // namespace

SpendEstimate LlmExecutor::estimate(const Step& step) const {
  const LlmModel* model = catalog_->model_for(step.executor);
  if (model == nullptr) return {};
  SpendEstimate e;
  const std::int64_t in = prompt_tokens_estimate(step.inputs);
  const std::int64_t reply = llm_reply_tokens(*model, step.inputs);
  e.tokens = reply + in;
  e.cost_usd =
      (static_cast<double>(in) * model->price_in + static_cast<double>(reply) * model->price_out) / 1e6;
  e.min_tokens = in + std::min<std::int64_t>(reply, kMinReplyTokens);
  return e;
}

void LlmExecutor::warm_up() {
  if (warming_.valid() || client_) return;
  try {
    warming_ = std::async(std::launch::async, [] { (void)load_curl(); });
  } catch (const std::system_error&) {
    // No thread to spare: the first call loads libcurl itself.
  }
}

Expected<std::unique_ptr<RunningAttempt>> LlmExecutor::start(const AttemptSpec& spec, EventLoop& loop,
                                                             DoneCallback done) {
  if (loop_ != &loop) {
    bool busy = false;
    for (const auto& [name, p] : providers_) busy = busy || p->in_flight > 0 || !p->waiting.empty();
    if (busy) return fail(ErrorCode::Internal, "the llm executor is busy on another event loop");
    client_.reset();
    loop_ = &loop;
    client_ = std::make_unique<HttpClient>(loop);
  }
  auto call = std::make_shared<Call>();
  call->done = std::move(done);
  call->spec = spec;
  auto fail_later = [&](std::string message, AttemptEnding ending = AttemptEnding::Error) {
    call->finished = true;
    AttemptOutcome outcome;
    outcome.ending = ending;
    outcome.message = std::move(message);
    loop.defer(
        [done = std::move(call->done), outcome = std::move(outcome)]() mutable { done(std::move(outcome)); });
    call->done = nullptr;
    return std::unique_ptr<RunningAttempt>(std::make_unique<Attempt>(*this, call));
  };

  const LlmModel* model = catalog_->model_for(spec.executor);
  const LlmProvider* provider = model ? catalog_->provider_of(*model) : nullptr;
  if (model == nullptr || provider == nullptr)
    // The set-up, not the work (validation says so before a local run; a
    // worker's models file may lack what the driver's has): never retried.
    return fail_later(fmt::format("no model for executor '{}' in the models file", spec.executor),
                      AttemptEnding::SetupFailed);
  auto prompt = input_text(spec.inputs, "prompt");
  if (!prompt) return fail_later("the step has no 'prompt' input");
  auto system = input_text(spec.inputs, "system");
  std::optional<json> response_format;
  if (auto it = spec.inputs.find("response_format");
      spec.inputs.is_object() && it != spec.inputs.end() && it->is_object())
    response_format = json::parse(it->dump());
  std::string key;
  if (!provider->api_key_env.empty()) {
    const char* value = std::getenv(provider->api_key_env.c_str());
    if (value == nullptr || *value == '\0')
      return fail_later(fmt::format("provider '{}' takes its key from ${}, which is not set", provider->name,
                                    provider->api_key_env),
                        AttemptEnding::SetupFailed);
    key = value;
  }

  // Held to what the engine reserved: the reply may have what the rendered
  // prompt leaves of it, up to the model's max_tokens.
  call->max_tokens = llm_reply_tokens(*model, spec.inputs);
  call->reply_cap = call->max_tokens;
  if (spec.token_cap) {
    const std::int64_t in = prompt_tokens_estimate(spec.inputs);
    const std::int64_t room = *spec.token_cap - in;
    const std::int64_t floor = std::min<std::int64_t>(call->max_tokens, kMinReplyTokens);
    if (room < floor)
      return fail_later(fmt::format(
          "the token budget left for this call ({} tokens) does not cover its prompt (about {} tokens) and a "
          "reply of {} tokens (to go on, raise the budget)",
          *spec.token_cap, in, floor));
    if (room < call->max_tokens) {
      call->max_tokens = room;
      call->held_by_budget = true;
    }
  }
  call->provider = provider->name;
  call->key_env = provider->api_key_env;
  call->model = model;
  call->api = provider->api;
  HttpRequest& r = call->request;
  r.connect_timeout = provider->connect_timeout;
  r.max_response_bytes = provider->max_response;
  r.timeout = provider->timeout;
  if (spec.timeout) r.timeout = std::min(r.timeout, *spec.timeout);
  r.headers.emplace_back("Content-Type", "application/json");
  json body;
  if (provider->api == LlmApi::OpenAi) {
    r.url = provider->base_url + "/chat/completions";
    if (!key.empty()) r.headers.emplace_back("Authorization", "Bearer " + key);
    json messages = json::array();
    if (system) messages.push_back({{"role", "system"}, {"content", *system}});
    messages.push_back({{"role", "user"}, {"content", *prompt}});
    body = {{"model", model->model}, {"messages", messages}, {"max_tokens", call->max_tokens}};
    add_sampling_inputs(body, LlmApi::OpenAi, spec.inputs);
    if (response_format)
      body["response_format"] = {{"type", "json_schema"},
                                 {"json_schema", {{"name", "result"}, {"schema", *response_format}}}};
  } else {
    r.url = provider->base_url + "/messages";
    if (!key.empty()) r.headers.emplace_back("x-api-key", key);
    r.headers.emplace_back("anthropic-version", "2023-06-01");
    body = {{"model", model->model},
            {"max_tokens", call->max_tokens},
            {"messages", json::array({{{"role", "user"}, {"content", *prompt}}})}};
    // The Messages API has no response_format: the schema goes into the system
    // prompt, and the required result_json check holds the reply to it.
    if (response_format)
      system = (system ? *system + "\n\n" : std::string()) +
               "Reply with only a JSON value (no prose, no code fence) that validates against this JSON "
               "Schema:\n" +
               json_text(*response_format);
    if (system) body["system"] = *system;
    add_sampling_inputs(body, LlmApi::Anthropic, spec.inputs);
  }
  r.body = json_text(body);

  auto& state = providers_[provider->name];
  if (!state) state = std::make_unique<ProviderState>();
  if (state->in_flight < provider->concurrency) {
    launch(call);
  } else {
    state->waiting.push_back(call);
  }
  return std::unique_ptr<RunningAttempt>(std::make_unique<Attempt>(*this, call));
}

void LlmExecutor::launch(const std::shared_ptr<Call>& call) {
  ++providers_[call->provider]->in_flight;
  call->launched = true;
  const auto started = SteadyClock::now();
  call->id = client_->start(call->request, [this, call, started,
                                            alive = std::weak_ptr<bool>(alive_)](HttpResponse r) {
    auto held = alive.lock();
    if (!held || call->finished) return;
    call->finished = true;
    release_slot(call->provider);
    AttemptOutcome o;
    o.duration = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started);
    // The model the call went to, whatever came back: what it spent is its.
    if (call->model != nullptr) o.model = call->provider + "/" + call->model->model;
    const AttemptSpec& spec = call->spec;
    // A completion (or an error body) comes whole: one that fits is kept in the
    // attempt's ledger row instead of a file of its own.
    OutputSink out(spec.stdout_path, spec.max_output, false, spec.secrets.get(), kLedgerOutputBytes);
    OutputSink err(spec.stderr_path, spec.max_output, false, spec.secrets.get(), kLedgerOutputBytes);
    auto failed = [&](std::string message, bool transient) {
      o.ending = AttemptEnding::Error;
      o.message = std::move(message);
      o.transient = transient;
      if (!r.body.empty()) err.append(r.body);
    };
    if (r.status == 0) {
      // A dropped connection or a timeout may go through next time; a response
      // too large for the cap, or one that cannot be decoded, would come again.
      failed(fmt::format("call to provider '{}' failed: {}", call->provider, r.error), !r.permanent);
      if (r.timed_out) o.ending = AttemptEnding::TimedOut;
    } else if (r.status == 429 || r.status >= 500) {
      failed(fmt::format("provider '{}' answered HTTP {}: {}", call->provider, r.status,
                         provider_message(r.body)),
             true);
      o.retry_after = r.retry_after();
    } else if (r.status == 408) {  // Request Timeout: the provider gave up waiting; try again
      failed(fmt::format("provider '{}' answered HTTP 408: {}", call->provider, provider_message(r.body)),
             true);
    } else if (r.status >= 300 && r.status < 400) {
      const auto location = r.header("location");
      failed(
          fmt::format("provider '{}' answered HTTP {}, a redirect{}: orch does not follow redirects (check "
                      "the provider's base_url)",
                      call->provider, r.status,
                      location && !location->empty() ? fmt::format(" to {}", quote_for_message(*location))
                                                     : std::string()),
          false);
    } else if (r.status == 401 || r.status == 403) {
      // The credentials, not the call: no attempt passes until a person fixes
      // the key (or what it may do), so the engine does not retry it.
      const std::string& key_env = call->key_env;
      failed(fmt::format("provider '{}' answered HTTP {} from {}: {} ({})", call->provider, r.status,
                         call->request.url, provider_message(r.body),
                         key_env.empty() ? std::string("the provider has no api_key_env: does it need a key?")
                         : r.status == 401
                             ? fmt::format("the key in ${} was refused: check it", key_env)
                             : fmt::format("the key in ${} may not make this call: check its permissions "
                                           "and the model's name",
                                           key_env)),
             false);
      o.ending = AttemptEnding::SetupFailed;
    } else if (r.status != 200) {
      failed(fmt::format("provider '{}' answered HTTP {}: {}", call->provider, r.status,
                         provider_message(r.body)),
             false);
    } else {
      json doc = json::parse(r.body, nullptr, false);
      std::optional<std::string> text;
      const json* usage = nullptr;
      std::string stop;     // why the model stopped: finish_reason / stop_reason
      std::string refusal;  // an OpenAI model's refusal, in place of content
      if (doc.is_object() && call->api == LlmApi::OpenAi) {
        if (doc.contains("choices") && doc["choices"].is_array() && !doc["choices"].empty()) {
          const json& choice = doc["choices"][0];
          const json& message = choice.is_object() ? choice.value("message", json::object()) : json::object();
          if (message.contains("content") && message["content"].is_string())
            text = message["content"].get<std::string>();
          else if (message.contains("content") && message["content"].is_null())
            text = "";
          if (message.contains("refusal") && message["refusal"].is_string())
            refusal = message["refusal"].get<std::string>();
          if (choice.is_object() && choice.contains("finish_reason") && choice["finish_reason"].is_string())
            stop = choice["finish_reason"].get<std::string>();
        }
        if (doc.contains("usage") && doc["usage"].is_object()) usage = &doc["usage"];
      } else if (doc.is_object()) {
        if (doc.contains("content") && doc["content"].is_array()) {
          text = "";
          for (const auto& block : doc["content"])
            if (block.is_object() && block.value("type", "") == "text" && block.contains("text") &&
                block["text"].is_string())
              *text += block["text"].get<std::string>();
        }
        if (doc.contains("stop_reason") && doc["stop_reason"].is_string())
          stop = doc["stop_reason"].get<std::string>();
        if (doc.contains("usage") && doc["usage"].is_object()) usage = &doc["usage"];
      }
      const char* in_key = call->api == LlmApi::OpenAi ? "prompt_tokens" : "input_tokens";
      const char* out_key = call->api == LlmApi::OpenAi ? "completion_tokens" : "output_tokens";
      const bool has_usage = usage != nullptr && usage->contains(in_key) && usage->contains(out_key);
      std::string bad_usage;
      if (has_usage) bad_usage = bad_usage_figure(*usage, in_key);
      if (has_usage && bad_usage.empty()) bad_usage = bad_usage_figure(*usage, out_key);
      // Anthropic counts prompt-cache tokens apart from input_tokens; they are
      // input tokens all the same. OpenAI's prompt_tokens include the cached ones
      // (prompt_tokens_details.cached_tokens says how many).
      const json* cached_openai = nullptr;
      if (has_usage && call->api == LlmApi::OpenAi && usage->contains("prompt_tokens_details") &&
          (*usage)["prompt_tokens_details"].is_object() &&
          (*usage)["prompt_tokens_details"].contains("cached_tokens"))
        cached_openai = &(*usage)["prompt_tokens_details"]["cached_tokens"];
      if (has_usage && call->api == LlmApi::Anthropic)
        for (const char* key : {"cache_creation_input_tokens", "cache_read_input_tokens"})
          if (bad_usage.empty() && usage->contains(key) && !(*usage)[key].is_null())
            bad_usage = bad_usage_figure(*usage, key);
      // OpenAI's is a breakdown only: one that is null or not a count (some
      // compatible servers send null) leaves the spend as prompt_tokens says.
      // Anthropic's are billed tokens: a bad one fails the call, as any usage figure does.
      if (cached_openai && !token_count(*cached_openai)) cached_openai = nullptr;
      if (has_usage && bad_usage.empty()) {
        o.tokens_in = *token_count((*usage)[in_key]);
        o.tokens_out = *token_count((*usage)[out_key]);
        if (cached_openai) o.cache_read_tokens = *token_count(*cached_openai);
        if (call->api == LlmApi::Anthropic) {
          auto figure = [&](const char* key) -> std::int64_t {
            return usage->contains(key) && !(*usage)[key].is_null() ? *token_count((*usage)[key]) : 0;
          };
          o.cache_write_tokens = figure("cache_creation_input_tokens");
          o.cache_read_tokens = figure("cache_read_input_tokens");
          constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
          for (std::int64_t part : {o.cache_write_tokens, o.cache_read_tokens})
            o.tokens_in = o.tokens_in > kMax - part ? kMax : o.tokens_in + part;
        }
        // Cache reads and writes at their own prices, the rest of the input at price_in.
        const LlmModel& m = *call->model;
        const std::int64_t cached = o.cache_read_tokens + o.cache_write_tokens;
        const std::int64_t plain = o.tokens_in > cached ? o.tokens_in - cached : 0;
        o.cost_usd = (static_cast<double>(plain) * m.price_in +
                      static_cast<double>(o.cache_read_tokens) * m.price_cache_read +
                      static_cast<double>(o.cache_write_tokens) * m.price_cache_write +
                      static_cast<double>(o.tokens_out) * m.price_out) /
                     1e6;
      }
      if (!text) {
        // Say what came instead: a provider's error in a 200, or not JSON at all.
        const auto type = r.header("content-type");
        std::string what;
        if (doc.is_object() && doc.contains("error"))
          what = "an error: " + provider_message(r.body);
        else if (doc.is_discarded())
          what = fmt::format("a body that is not JSON{}: {}",
                             type && !type->empty() ? fmt::format(" ({})", *type) : std::string(),
                             quote_for_message(r.body.substr(0, 200), 200));
        else
          what = "JSON without a completion";
        failed(fmt::format("provider '{}' sent a response orch cannot read (no completion text): {}",
                           call->provider, what),
               false);
      } else if (!has_usage) {
        failed(fmt::format(
                   "provider '{}' sent no usage figures: the call's spend cannot be charged to the budget",
                   call->provider),
               false);
      } else if (!bad_usage.empty()) {
        failed(fmt::format("provider '{}' sent {}: the call's spend cannot be charged to the budget",
                           call->provider, bad_usage),
               false);
      } else if (!refusal.empty()) {
        failed(fmt::format("model '{}' refused: {}", call->model->name, refusal), false);
      } else if (stop == "length" || stop == "max_tokens") {
        // A completion cut off at max_tokens is not an answer: it does not pass
        // for one (raising max_tokens in the models file is the way on).
        failed(
            fmt::format("model '{}' stopped at its max_tokens ({}{}): the completion is cut off ({} '{}')",
                        call->model->name, call->max_tokens,
                        call->held_by_budget
                            ? fmt::format(", held below the {} {} by the token budget left",
                                          call->reply_cap == call->model->max_tokens ? "model's" : "step's",
                                          call->reply_cap)
                            : std::string(),
                        call->api == LlmApi::OpenAi ? "finish_reason" : "stop_reason", stop),
            false);
        out.append(*text);
      } else if (stop == "content_filter" || stop == "refusal") {
        failed(fmt::format("the provider withheld model '{}''s completion ({} '{}')", call->model->name,
                           call->api == LlmApi::OpenAi ? "finish_reason" : "stop_reason", stop),
               false);
        out.append(*text);
      } else if (text->empty()) {
        failed(fmt::format("model '{}' returned an empty completion", call->model->name), false);
      } else {
        o.ending = AttemptEnding::Exited;
        o.exit_code = 0;
        // As for a shell step: the result is the first max_output bytes (the
        // ledger row and the log say the rest was cut).
        o.result = spec.max_output > 0 && static_cast<std::int64_t>(text->size()) > spec.max_output
                       ? text->substr(0, static_cast<std::size_t>(spec.max_output))
                       : *text;
        out.append(*text);
      }
    }
    out.finish();
    err.finish();
    o.stdout_bytes = out.total_bytes();
    o.stderr_bytes = err.total_bytes();
    o.stdout_truncated = out.truncated();
    o.stderr_truncated = err.truncated();
    if (out.held()) o.stdout_text = out.held_text();
    if (err.held()) o.stderr_text = err.held_text();
    if (o.ending != AttemptEnding::Exited && spec.secrets) o.message = spec.secrets->mask(o.message);
    DoneCallback done = std::move(call->done);
    call->done = nullptr;
    done(std::move(o));  // last: the engine may destroy the attempt
  });
}

void LlmExecutor::release_slot(const std::string& provider) {
  auto& state = providers_[provider];
  if (!state) return;
  --state->in_flight;
  while (!state->waiting.empty()) {
    auto next = state->waiting.front().lock();
    state->waiting.pop_front();
    if (next && !next->finished) {
      launch(next);
      break;
    }
  }
}

}  // namespace orch
