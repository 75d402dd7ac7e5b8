// The OTEL_* environment as orch reads it: where the trace goes, its headers,
// timeout and resource, and the settings it refuses with the variable named.
#include "engine/otlp_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace orch {
// Named after the file: a unity build compiles the tests of a binary together.
namespace otlp_config_test {

using Pairs = std::vector<std::pair<std::string, std::string>>;

// The endpoint `vars` make; fails the test on an error.
std::optional<OtlpEndpoint> endpoint_of(const std::map<std::string, std::string>& vars) {
  auto got = otlp_endpoint_from_env([&vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
  EXPECT_TRUE(got) << got.error().message;
  return got ? *got : std::nullopt;
}

Error error_of(const std::map<std::string, std::string>& vars) {
  auto got = otlp_endpoint_from_env([&vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
  EXPECT_FALSE(got) << "no error";
  return got ? Error{} : got.error();
}

TEST(OtlpConfig, NoEndpointNoExport) {
  EXPECT_FALSE(endpoint_of({}));
  EXPECT_FALSE(endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}})) << "an empty value is not set";
  EXPECT_FALSE(endpoint_of({{"OTEL_EXPORTER_OTLP_HEADERS", "a=b"}, {"OTEL_SERVICE_NAME", "x"}}));
  EXPECT_FALSE(
      endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"}, {"OTEL_SDK_DISABLED", "true"}}));
}

TEST(OtlpConfig, TheTracesPathIsAddedToTheBaseEndpoint) {
  auto e = endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->url, "http://collector:4318/v1/traces");
  EXPECT_EQ(e->timeout, std::chrono::milliseconds(10'000)) << "the specification's default";
  EXPECT_EQ(e->headers, Pairs{});
  e = endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example/base/"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->url, "https://otel.example/base/v1/traces") << "one slash, not two";
}

TEST(OtlpConfig, TheTracesEndpointIsUsedAsItIsAndWins) {
  auto e = endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9999/custom"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->url, "http://b:9999/custom");
}

TEST(OtlpConfig, HeadersAreKeyValuePairsPercentDecoded) {
  auto e =
      endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"},
                   {"OTEL_EXPORTER_OTLP_HEADERS", " Authorization = Basic%20YWJj%3D ,x-tenant=a%2Cb,,"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->headers, (Pairs{{"Authorization", "Basic YWJj="}, {"x-tenant", "a,b"}}));
  e = endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"},
                   {"OTEL_EXPORTER_OTLP_HEADERS", "a=1"},
                   {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->headers, (Pairs{{"b", "2"}})) << "the traces' own variable wins";
}

TEST(OtlpConfig, ABadHeaderIsRefusedWithoutShowingItsValue) {
  Error e = error_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"},
                      {"OTEL_EXPORTER_OTLP_HEADERS", "a=1,Authorization: Bearer s3cret"}});
  EXPECT_EQ(e.code, ErrorCode::InvalidInput);
  EXPECT_EQ(e.message,
            "OTEL_EXPORTER_OTLP_HEADERS: member 2 is not KEY=VALUE (members are separated by commas)");
  e = error_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"},
                {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-a=ok%0D%0AInjected: yes"}});
  EXPECT_EQ(e.message, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of x-a holds a line break or a NUL");
  e = error_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"}, {"OTEL_EXPORTER_OTLP_HEADERS", "a b=1"}});
  EXPECT_EQ(e.message, "OTEL_EXPORTER_OTLP_HEADERS: 'a b' is not a header name");
}

TEST(OtlpConfig, TimeoutInMilliseconds) {
  auto e =
      endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"}, {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->timeout, std::chrono::milliseconds(2500));
  for (const char* bad : {"abc", "0", "-5", "1.5", "99999999999"}) {
    Error err =
        error_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"}, {"OTEL_EXPORTER_OTLP_TIMEOUT", bad}});
    EXPECT_EQ(err.message, std::string("OTEL_EXPORTER_OTLP_TIMEOUT=") + bad +
                               ": not a whole number of milliseconds from 1 to 3600000");
  }
}

TEST(OtlpConfig, OnlyOtlpOverHttpIsSpoken) {
  EXPECT_TRUE(endpoint_of(
      {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"}, {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}}));
  EXPECT_TRUE(endpoint_of(
      {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"}, {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}}));
  Error e = error_of(
      {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4317"}, {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"}});
  EXPECT_EQ(e.code, ErrorCode::InvalidInput);
  EXPECT_NE(e.message.find("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc: orch exports OTLP over HTTP"),
            std::string::npos)
      << e.message;
}

TEST(OtlpConfig, TheResourceNamesTheService) {
  auto e = endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->resource.attributes, (Pairs{{"service.name", "orch"}, {"service.version", ORCH_VERSION}}));
  e = endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"},
                   {"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment=prod"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->resource.attributes, (Pairs{{"service.name", "from-attrs"},
                                           {"service.version", ORCH_VERSION},
                                           {"deployment.environment", "prod"}}));
  e = endpoint_of({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://h:4318"},
                   {"OTEL_SERVICE_NAME", "agents"},
                   {"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->resource.attributes.at(0), (std::pair<std::string, std::string>{"service.name", "agents"}))
      << "OTEL_SERVICE_NAME wins";
}

TEST(OtlpConfig, MessagesShowTheUrlWithoutItsCredentials) {
  OtlpEndpoint e;
  e.url = "https://user:pa%40ss@otel.example:4318/v1/traces";
  EXPECT_EQ(e.shown_url(), "https://***@otel.example:4318/v1/traces");
  e.url = "http://127.0.0.1:4318/v1/traces?a=b@c";
  EXPECT_EQ(e.shown_url(), e.url) << "an @ after the host is not a password";
}

}  // namespace otlp_config_test
}  // namespace orch
