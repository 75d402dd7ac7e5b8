#include "engine/otlp_config.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "util/strings.h"

namespace orch {

namespace otlp_config_detail {

std::optional<std::string> first_set(const EnvLookup& env, const char* specific, const char* general) {
  for (const char* name : {specific, general})
    if (auto value = env(name); value && !value->empty()) return value;
  return std::nullopt;
}

// Which of the two names was set, for messages.
const char* name_set(const EnvLookup& env, const char* specific, const char* general) {
  auto value = env(specific);
  return value && !value->empty() ? specific : general;
}

// A header line is NAME: VALUE: a name is a token (RFC 9110), a value has no line break or NUL.
Expected<void> check_header(const std::string& name, const std::string& value, const char* variable) {
  constexpr std::string_view kTokenPunctuation = "!#$%&'*+-.^_`|~";
  for (unsigned char c : name)
    if (!std::isalnum(c) && kTokenPunctuation.find(static_cast<char>(c)) == std::string_view::npos)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("{}: '{}' is not a header name", variable, quote_for_message(name)));
  for (char c : value)
    if (c == '\r' || c == '\n' || c == '\0')
      return fail(ErrorCode::InvalidInput,
                  fmt::format("{}: the value of {} holds a line break or a NUL", variable, name));
  return {};
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%XX" becomes its byte; a '%' not followed by two hex digits stays as it is.
std::string percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int high = hex_digit(s[i + 1]);
      const int low = hex_digit(s[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace otlp_config_detail

std::string OtlpEndpoint::shown_url() const {
  // scheme://user:password@host/... → scheme://***@host/...
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  const auto authority = scheme_end + 3;
  const auto authority_end = url.find_first_of("/?#", authority);
  const auto at = url.rfind('@', authority_end == std::string::npos ? url.size() : authority_end);
  if (at == std::string::npos || at < authority) return url;
  return url.substr(0, authority) + "***" + url.substr(at);
}

std::optional<std::string> process_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Expected<std::vector<std::pair<std::string, std::string>>> parse_otel_key_values(const std::string& text,
                                                                                 const char* variable) {
  using namespace otlp_config_detail;
  // Errors name a member by its place, never by its text: a header's may be a secret.
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t from = 0;
  for (int place = 1; from <= text.size(); ++place) {
    std::size_t comma = text.find(',', from);
    if (comma == std::string::npos) comma = text.size();
    const std::string_view member = std::string_view(text).substr(from, comma - from);
    from = comma + 1;
    if (trim(member).empty()) continue;
    const auto eq = member.find('=');
    if (eq == std::string_view::npos)
      return fail(
          ErrorCode::InvalidInput,
          fmt::format("{}: member {} is not KEY=VALUE (members are separated by commas)", variable, place));
    std::string key = percent_decoded(trim(member.substr(0, eq)));
    if (key.empty())
      return fail(ErrorCode::InvalidInput, fmt::format("{}: member {} has no key", variable, place));
    out.emplace_back(std::move(key), percent_decoded(trim(member.substr(eq + 1))));
  }
  return out;
}

Expected<std::optional<OtlpEndpoint>> otlp_endpoint_from_env(const EnvLookup& env) {
  using namespace otlp_config_detail;
  if (auto disabled = env("OTEL_SDK_DISABLED"); disabled && trim(*disabled) == "true") return std::nullopt;
  OtlpEndpoint endpoint;
  if (auto traces = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); traces && !traces->empty()) {
    endpoint.url = *traces;
  } else if (auto base = env("OTEL_EXPORTER_OTLP_ENDPOINT"); base && !base->empty()) {
    std::string url = *base;
    while (!url.empty() && url.back() == '/') url.pop_back();
    endpoint.url = url + "/v1/traces";
  } else {
    return std::nullopt;
  }

  if (auto protocol = first_set(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
      protocol && *protocol != "http/json" && *protocol != "http/protobuf") {
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("{}={}: orch exports OTLP over HTTP (JSON) only: set it to http/json, and the "
                    "endpoint to the collector's OTLP/HTTP port (4318 by default)",
                    name_set(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
                    *protocol));
  }

  if (auto headers = first_set(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")) {
    const char* variable = name_set(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS");
    endpoint.headers = ORCH_TRY(parse_otel_key_values(*headers, variable));
    for (const auto& [name, value] : endpoint.headers) ORCH_TRY(check_header(name, value, variable));
  }

  if (auto timeout = first_set(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")) {
    const std::string text(trim(*timeout));
    long long ms = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec != std::errc() || end != text.data() + text.size() || ms <= 0 || ms > 3'600'000)
      return fail(
          ErrorCode::InvalidInput,
          fmt::format("{}={}: not a whole number of milliseconds from 1 to 3600000",
                      name_set(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"),
                      *timeout));
    endpoint.timeout = std::chrono::milliseconds(ms);
  }

  std::string service = "orch";
  if (auto name = env("OTEL_SERVICE_NAME"); name && !name->empty()) service = *name;
  endpoint.resource.attributes = {{"service.name", service}, {"service.version", ORCH_VERSION}};
  if (auto more = env("OTEL_RESOURCE_ATTRIBUTES"); more && !more->empty()) {
    for (auto& [key, value] : ORCH_TRY(parse_otel_key_values(*more, "OTEL_RESOURCE_ATTRIBUTES"))) {
      if (key == "service.name") {
        // OTEL_SERVICE_NAME wins over a service.name given here.
        if (auto name = env("OTEL_SERVICE_NAME"); !name || name->empty())
          endpoint.resource.attributes[0].second = value;
        continue;
      }
      if (key == "service.version") continue;  // this orch's
      endpoint.resource.attributes.emplace_back(std::move(key), std::move(value));
    }
  }
  return endpoint;
}

}  // namespace orch
