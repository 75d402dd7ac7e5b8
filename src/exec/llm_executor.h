// exec/llm_executor.h — `executor: llm` and `executor: llm:MODEL`: one chat call per attempt.
//
// A step's rendered inputs give the call: `prompt` (required, the user message)
// and `system` (optional). The model comes from the models file (llm_models.h):
// `llm:NAME`, or the file's default_model for plain `llm`. The call goes through
// HttpClient on the engine's EventLoop, so many calls are in flight on one thread.
//
//   OpenAI Chat Completions: POST {base_url}/chat/completions, Authorization: Bearer KEY,
//     {model, messages: [{role: system}?, {role: user}], max_tokens}
//   Anthropic Messages:      POST {base_url}/messages, x-api-key: KEY,
//     anthropic-version: 2023-06-01, {model, max_tokens, system?, messages: [{role: user}]}
//
// The outcome: result = the completion text; tokens_in/tokens_out from the
// response's usage (never estimated: a response without usage fails the
// attempt, since its spend could not be charged to the budgets); cost from the
// model's prices. An empty completion fails the attempt. HTTP 429 and 5xx and
// transport failures are transient (the engine retries them with back-off,
// honouring Retry-After); other statuses (401, 400, ...) are not. The key is
// read from the provider's api_key_env when the call is made and goes only into
// the request header: it is never stored, logged or put in a message.
// Each provider's `concurrency` caps its calls in flight; attempts beyond it wait
// in a queue (their timeout starts when their call does).
#pragma once

#include <deque>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/http_client.h"
#include "exec/llm_models.h"
#include "orch/executor.h"

namespace orch {

// A completion (or a provider's error body) up to this size is kept in the
// attempt's ledger row (attempts.stdout_text / stderr_text) instead of a file.
inline constexpr std::size_t kLedgerOutputBytes = 64 * 1024;

class LlmExecutor final : public Executor {
 public:
  explicit LlmExecutor(std::shared_ptr<const LlmCatalog> catalog);
  ~LlmExecutor() override;

  // The step's model must exist, and its inputs must have a `prompt`.
  void check_step(const Step& step, Diagnostics& out) const override;
  // result_nonempty: a completion is only a result when it has text.
  std::vector<Postcondition> default_post() const override;
  // With inputs.response_format (a JSON Schema): result_json against it, always.
  std::vector<Postcondition> required_post(const Step& step) const override;
  // The model's provider takes its key from a variable that is not set.
  std::optional<std::string> setup_problem(const Step& step) const override;
  // The model's max_tokens plus the prompt's length in bytes / 3 (an upper
  // estimate of its tokens), priced at the model's prices.
  SpendEstimate estimate(const Step& step) const override;
  // Every provider's api_key_env.
  std::vector<std::string> secret_env() const override {
    std::vector<std::string> names;
    for (const auto& [_, provider] : catalog_->providers)
      if (!provider.api_key_env.empty()) names.push_back(provider.api_key_env);
    return names;
  }
  // Loads libcurl (dlopen of ~30 libraries and curl_global_init: 15-20 ms) on a
  // second thread, so the first wave of calls does not wait for it.
  void warm_up() override;
  // Its connection, and while the host name is resolved, libcurl's resolver's
  // socket pair. (Idle pooled connections are within the engine's reserve.)
  int open_files_per_attempt() const override { return 3; }
  Expected<std::unique_ptr<RunningAttempt>> start(const AttemptSpec& spec, EventLoop& loop,
                                                  DoneCallback done) override;

 private:
  struct Call;
  class Attempt;
  struct ProviderState;
  void launch(const std::shared_ptr<Call>& call);
  void release_slot(const std::string& provider);

  std::shared_ptr<const LlmCatalog> catalog_;
  EventLoop* loop_ = nullptr;           // the loop of the first start(); all calls use it
  std::unique_ptr<HttpClient> client_;  // created with it
  std::map<std::string, std::unique_ptr<ProviderState>> providers_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::future<void> warming_;  // warm_up()'s thread; its destructor joins it
};

}  // namespace orch
