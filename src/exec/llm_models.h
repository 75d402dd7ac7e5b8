// exec/llm_models.h — the model providers and models the `llm` executor may call.
//
// Read from a models file (docs/models.md; `orch run --models FILE`, default
// .orch/models.yaml when it exists):
//
//   providers:
//     local:
//       api: openai                 # openai (Chat Completions) | anthropic (Messages)
//       base_url: http://127.0.0.1:8080/v1
//       api_key_env: LOCAL_API_KEY  # the variable holding the key; read at call time
//       concurrency: 4              # calls in flight at once (default 4)
//       timeout: 120s               # a whole call (default 10m); connect_timeout: 10s
//   models:
//     fast:
//       provider: local
//       model: llama-3-8b           # the provider's name for it
//       max_tokens: 1024
//       price_in: 0.10              # US dollars per million input tokens (default 0)
//       price_out: 0.30             # per million output tokens
//       price_cache_read: 0.01      # per million input tokens read from the prompt cache
//                                   # (default: price_in, which errs high)
//       price_cache_write: 0.125    # per million written to it (default: 1.25 x price_in)
//   default_model: fast             # what `executor: llm` uses
//
// Keys are never in the file and never stored: only the variable's name is.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "orch/error.h"

namespace orch {

enum class LlmApi { OpenAi, Anthropic };

struct LlmProvider {
  std::string name;
  LlmApi api = LlmApi::OpenAi;
  std::string base_url;     // without a trailing '/': ".../v1"
  std::string api_key_env;  // empty: no key is sent (a local server)
  int concurrency = 4;
  std::chrono::milliseconds timeout{600'000};
  std::chrono::milliseconds connect_timeout{10'000};
  std::int64_t max_response = 64 * 1024 * 1024;  // bytes of one response body, as decoded
};

struct LlmModel {
  std::string name;      // what plans call it: `executor: llm:NAME`
  std::string provider;  // a key of LlmCatalog::providers
  std::string model;     // the provider's own name for it
  int max_tokens = 1024;
  double price_in = 0;   // USD per million input tokens
  double price_out = 0;  // USD per million output tokens
  double price_cache_read = 0;   // USD per million input tokens read from the prompt cache
  double price_cache_write = 0;  // USD per million input tokens written to it
};

struct LlmCatalog {
  std::map<std::string, LlmProvider> providers;
  std::map<std::string, LlmModel> models;
  std::string default_model;  // may be empty

  // The model `executor` names: "llm" (the default) or "llm:NAME"; nullptr if none.
  const LlmModel* model_for(const std::string& executor) const;
  const LlmProvider* provider_of(const LlmModel& model) const;
};

// Reads and checks a models file. Every problem is reported at once, each as
// "FILE: FIELD: message" (e.g. "models.yaml: models.fast.provider: no provider
// 'loca' (did you mean 'local'?)"), in an InvalidInput error.
Expected<LlmCatalog> load_llm_catalog(const std::filesystem::path& file);
// The same, from text (the file name only labels the messages).
Expected<LlmCatalog> parse_llm_catalog(const std::string& text, const std::string& file);

}  // namespace orch
