#include "exec/llm_models.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "exec/config_check.h"
#include "orch/plan_loader.h"
#include "util/strings.h"
#include "util/yaml_json.h"

namespace orch {

namespace {

using nlohmann::json;

std::vector<std::string> keys_of(const json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

}  // namespace

const LlmModel* LlmCatalog::model_for(const std::string& executor) const {
  std::string name;
  if (executor == "llm") {
    name = default_model;
  } else if (executor.starts_with("llm:")) {
    name = executor.substr(4);
  } else {
    return nullptr;
  }
  auto it = models.find(name);
  return it == models.end() ? nullptr : &it->second;
}

const LlmProvider* LlmCatalog::provider_of(const LlmModel& model) const {
  auto it = providers.find(model.provider);
  return it == providers.end() ? nullptr : &it->second;
}

Expected<LlmCatalog> parse_llm_catalog(const std::string& text, const std::string& file) {
  json doc = ORCH_TRY(parse_config_yaml(text, file));
  ConfigChecker check(file);
  LlmCatalog catalog;
  if (!doc.is_object()) {
    check.problem("(top)", "must be a mapping with providers and models");
    return std::unexpected(check.error());
  }
  check.only_keys(doc, "", {"providers", "models", "default_model"});

  json providers = doc.value("providers", json::object());
  if (!providers.is_object() || providers.empty()) check.problem("providers", "must map provider names to providers");
  if (!providers.is_object()) providers = json::object();
  for (const auto& [name, p] : providers.items()) {
    const std::string field = "providers." + name;
    if (!p.is_object()) {
      check.problem(field, "must be a mapping");
      continue;
    }
    check.only_keys(
        p, field,
        {"api", "base_url", "api_key_env", "concurrency", "timeout", "connect_timeout", "max_response"});
    LlmProvider provider;
    provider.name = name;
    if (auto api = check.string(p, field, "api", true)) {
      if (*api == "openai") {
        provider.api = LlmApi::OpenAi;
      } else if (*api == "anthropic") {
        provider.api = LlmApi::Anthropic;
      } else {
        check.problem(field + ".api", fmt::format("'{}' is not an API orch speaks: openai or anthropic", *api));
      }
    }
    if (auto url = check.string(p, field, "base_url", true)) {
      if (!url->starts_with("http://") && !url->starts_with("https://")) {
        check.problem(field + ".base_url", "must start with http:// or https://");
      }
      while (url->ends_with('/')) url->pop_back();
      provider.base_url = *url;
    }
    if (auto env = check.string(p, field, "api_key_env", false)) {
      if (!is_identifier(*env))
        check.problem(field + ".api_key_env", "must be the NAME of an environment variable (the key is never written here)");
      provider.api_key_env = *env;
    }
    if (auto n = check.number(p, field, "concurrency", 1)) provider.concurrency = static_cast<int>(*n);
    if (auto d = check.duration(p, field, "timeout")) provider.timeout = *d;
    if (auto d = check.duration(p, field, "connect_timeout")) provider.connect_timeout = *d;
    if (auto n = check.size(p, field, "max_response")) provider.max_response = *n;
    catalog.providers[name] = provider;
  }

  json models = doc.value("models", json::object());
  if (!models.is_object() || models.empty()) check.problem("models", "must map model names to models");
  if (!models.is_object()) models = json::object();
  const std::vector<std::string> provider_names = keys_of(providers);
  for (const auto& [name, m] : models.items()) {
    const std::string field = "models." + name;
    if (!m.is_object()) {
      check.problem(field, "must be a mapping");
      continue;
    }
    check.only_keys(m, field,
                    {"provider", "model", "max_tokens", "price_in", "price_out", "price_cache_read",
                     "price_cache_write"});
    LlmModel model;
    model.name = name;
    if (auto p = check.string(m, field, "provider", true)) {
      if (!catalog.providers.contains(*p))
        check.problem(field + ".provider", fmt::format("no provider '{}'{}", *p, did_you_mean(*p, provider_names)));
      model.provider = *p;
    }
    if (auto id = check.string(m, field, "model", true)) model.model = *id;
    if (auto n = check.number(m, field, "max_tokens", 1)) model.max_tokens = static_cast<int>(*n);
    if (auto n = check.number(m, field, "price_in", 0)) model.price_in = *n;
    if (auto n = check.number(m, field, "price_out", 0)) model.price_out = *n;
    // Unset: a cache read costs what an input token does (errs high: providers
    // charge less), a cache write 1.25 times (Anthropic's five-minute cache).
    model.price_cache_read = model.price_in;
    model.price_cache_write = model.price_in * 1.25;
    if (auto n = check.number(m, field, "price_cache_read", 0)) model.price_cache_read = *n;
    if (auto n = check.number(m, field, "price_cache_write", 0)) model.price_cache_write = *n;
    catalog.models[name] = model;
  }
  if (auto d = check.string(doc, "", "default_model", false)) {
    if (!catalog.models.contains(*d))
      check.problem("default_model", fmt::format("no model '{}'{}", *d, did_you_mean(*d, keys_of(models))));
    catalog.default_model = *d;
  }
  if (!check.ok()) return std::unexpected(check.error());
  return catalog;
}

Expected<LlmCatalog> load_llm_catalog(const std::filesystem::path& file) {
  return parse_llm_catalog(ORCH_TRY(read_config_file(file, "models")), file.string());
}

}  // namespace orch
