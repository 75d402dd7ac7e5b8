// HttpClient against a real HTTP server on loopback (tests/fake_llm/server.py).
#include "exec/http_client.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "exec/exec_testing.h"
#include "testing/fake_llm.h"

namespace orch {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using orch::testing::FakeLlmServer;
using orch::testing::run_until;

HttpRequest chat(const FakeLlmServer& server, const std::string& prompt, const std::string& key) {
  HttpRequest r;
  r.url = server.url() + "/v1/chat/completions";
  r.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + key}};
  r.body = json{{"model", "m1"}, {"messages", json::array({{{"role", "user"}, {"content", prompt}}})}}.dump();
  return r;
}

// One server for the suite: starting Python costs most of a second.
class HttpClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<FakeLlmServer>(); }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override { ASSERT_TRUE(server_->started()); }
  static std::unique_ptr<FakeLlmServer> server_;
};
std::unique_ptr<FakeLlmServer> HttpClientTest::server_;

// A port nothing listens on: bound, then closed.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST_F(HttpClientTest, PostsAndReadsTheResponseWithoutEverBlockingTheLoop) {
  const FakeLlmServer& server = *server_;
  EventLoop loop;
  HttpClient client(loop);
  std::optional<HttpResponse> got;
  client.start(chat(server, "[[reply: hello there]] [[usage: 7 2]]", server.api_key()),
               [&](HttpResponse r) { got = std::move(r); });
  EXPECT_FALSE(got) << "done ran inside start()";
  EXPECT_EQ(client.in_flight(), 1u);
  ASSERT_TRUE(run_until(loop, [&] { return got.has_value(); }));
  EXPECT_EQ(got->status, 200) << got->error;
  EXPECT_TRUE(got->error.empty());
  auto body = json::parse(got->body);
  EXPECT_EQ(body["choices"][0]["message"]["content"], "hello there");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(body["usage"]["completion_tokens"], 2);
  EXPECT_TRUE(got->header("Content-Type").has_value());
  EXPECT_EQ(client.in_flight(), 0u);
}

TEST_F(HttpClientTest, HttpErrorsAreResponsesWithTheirHeaders) {
  const FakeLlmServer& server = *server_;
  EventLoop loop;
  HttpClient client(loop);
  std::optional<HttpResponse> limited, unauthorized;
  client.start(chat(server, "[[status: 429 retry-after=2]]", server.api_key()),
               [&](HttpResponse r) { limited = std::move(r); });
  client.start(chat(server, "hi", "wrong-key"), [&](HttpResponse r) { unauthorized = std::move(r); });
  ASSERT_TRUE(run_until(loop, [&] { return limited && unauthorized; }));
  EXPECT_EQ(limited->status, 429);
  EXPECT_EQ(limited->header("retry-after"), "2");
  EXPECT_TRUE(limited->error.empty()) << "an HTTP status is not a transport failure";
  EXPECT_EQ(unauthorized->status, 401);
  EXPECT_NE(unauthorized->body.find("invalid_api_key"), std::string::npos) << unauthorized->body;
}

// Retry-After in both its forms (RFC 9110 10.2.3): delay-seconds, or an
// HTTP-date, counted from the response's own Date when it has one, else from now.
TEST(HttpResponseTest, RetryAfterIsReadAsSecondsOrAsAnHttpDate) {
  auto with_headers = [](std::vector<std::pair<std::string, std::string>> headers) {
    HttpResponse r;
    r.status = 429;
    r.headers = std::move(headers);
    return r;
  };
  auto retry_after = [&](const std::string& value) { return with_headers({{"retry-after", value}}); };
  // Four seconds before Wed, 21 Oct 2015 07:28:00 GMT.
  const auto now = std::chrono::system_clock::from_time_t(1445412480 - 4);
  EXPECT_EQ(retry_after("30").retry_after(now), 30s);
  EXPECT_EQ(retry_after("1.5").retry_after(now), 1500ms);
  EXPECT_EQ(retry_after("0").retry_after(now), 0ms);
  // IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must read too.
  EXPECT_EQ(retry_after("Wed, 21 Oct 2015 07:28:00 GMT").retry_after(now), 4s);
  EXPECT_EQ(retry_after("Wednesday, 21-Oct-15 07:28:00 GMT").retry_after(now), 4s);
  EXPECT_EQ(retry_after("Wed Oct 21 07:28:00 2015").retry_after(now), 4s);
  // The server's clock, when it says what it is, whatever the local clock says.
  EXPECT_EQ(with_headers(
                {{"date", "Wed, 21 Oct 2015 07:27:50 GMT"}, {"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}})
                .retry_after(now),
            10s);
  EXPECT_EQ(with_headers({{"date", "not a date"}, {"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}})
                .retry_after(now),
            4s);
  // A date in the past asks for no wait.
  EXPECT_EQ(retry_after("Wed, 21 Oct 2015 07:27:00 GMT").retry_after(now), 0ms);
  // What is neither form is ignored: as if the server had said nothing.
  for (const char* value : {"soon", "", "-5", "1e3", "nan", "inf", "30 s", "Wed, 99 Foo 2015 07:28:00 GMT"})
    EXPECT_EQ(retry_after(value).retry_after(now), std::nullopt) << value;
  EXPECT_EQ(with_headers({}).retry_after(now), std::nullopt);
}

// An HTTP-date as a real server sends it (fake_llm: from its own clock, with
// its Date), read through libcurl.
TEST_F(HttpClientTest, ARetryAfterDateIsTheWaitUntilThatDate) {
  const FakeLlmServer& server = *server_;
  EventLoop loop;
  HttpClient client(loop);
  std::optional<HttpResponse> got;
  client.start(chat(server, "[[status: 429 retry-after-date=30]]", server.api_key()),
               [&](HttpResponse r) { got = std::move(r); });
  ASSERT_TRUE(run_until(loop, [&] { return got.has_value(); }));
  ASSERT_EQ(got->status, 429) << got->error;
  ASSERT_TRUE(got->header("retry-after")) << "no Retry-After";
  auto wait = got->retry_after();
  ASSERT_TRUE(wait) << *got->header("retry-after");
  // Whole seconds on both sides: the second the server answered in may have ended.
  EXPECT_GE(*wait, 29s) << *got->header("retry-after");
  EXPECT_LE(*wait, 30s) << *got->header("retry-after");
}

TEST_F(HttpClientTest, ManyRequestsAreInFlightAtOnceOnOneThread) {
  const FakeLlmServer& server = *server_;
  EventLoop loop;
  HttpClient client(loop);
  constexpr int kRequests = 8;
  std::vector<std::optional<HttpResponse>> got(kRequests);
  const auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < kRequests; ++i)
    client.start(chat(server, "[[sleep: 0.5]] [[reply: r" + std::to_string(i) + "]]", server.api_key()),
                 [&got, i](HttpResponse r) { got[static_cast<std::size_t>(i)] = std::move(r); });
  EXPECT_EQ(client.in_flight(), static_cast<std::size_t>(kRequests));
  ASSERT_TRUE(run_until(loop, [&] {
    for (const auto& g : got)
      if (!g) return false;
    return true;
  }));
  // Eight half-second answers, concurrently: far less than their 4 s sum.
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
  for (int i = 0; i < kRequests; ++i) {
    const auto& r = *got[static_cast<std::size_t>(i)];
    ASSERT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(json::parse(r.body)["choices"][0]["message"]["content"], "r" + std::to_string(i));
  }
}

// Calls that drain one by one leave few transfers in flight; libcurl's default
// cache (4 per transfer in flight) would then close the idle connections, and
// the next wave would connect again. The client keeps them.
TEST_F(HttpClientTest, ANewWaveOfCallsReusesTheConnectionsOfTheLastOne) {
  const FakeLlmServer& server = *server_;
  server.reset_requests();
  EventLoop loop;
  HttpClient client(loop);
  constexpr int kWave = 16;
  auto wave = [&](bool staggered) {
    int done = 0;
    for (int i = 0; i < kWave; ++i) {
      const std::string sleep = staggered ? fmt::format("[[sleep: {:.2f}]] ", 0.05 * (i + 1)) : "";
      client.start(chat(server, sleep + "[[reply: ok]]", server.api_key()), [&done](HttpResponse r) {
        EXPECT_EQ(r.status, 200) << r.error;
        ++done;
      });
    }
    return run_until(loop, [&] { return done == kWave; });
  };
  ASSERT_TRUE(wave(true));  // they end 50 ms apart: the last ones run nearly alone
  ASSERT_TRUE(wave(false));
  std::set<int> connections;
  for (const auto& r : server.requests()) connections.insert(r.value("client_port", 0));
  EXPECT_EQ(server.requests().size(), 2u * kWave);
  EXPECT_LE(connections.size(), static_cast<std::size_t>(kWave))
      << connections.size()
      << " connections: the second wave opened new ones instead of reusing the idle ones";
}

TEST(HttpClient, ARefusedConnectionIsATransportError) {
  EventLoop loop;
  HttpClient client(loop);
  HttpRequest r;
  r.url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/chat/completions";
  r.body = "{}";
  std::optional<HttpResponse> got;
  client.start(r, [&](HttpResponse response) { got = std::move(response); });
  ASSERT_TRUE(run_until(loop, [&] { return got.has_value(); }));
  EXPECT_EQ(got->status, 0);
  EXPECT_FALSE(got->error.empty());
  EXPECT_FALSE(got->timed_out);
}

TEST_F(HttpClientTest, ASlowServerTimesOut) {
  const FakeLlmServer& server = *server_;
  EventLoop loop;
  HttpClient client(loop);
  HttpRequest r = chat(server, "[[sleep: 5]]", server.api_key());
  r.timeout = 300ms;
  std::optional<HttpResponse> got;
  const auto began = std::chrono::steady_clock::now();
  client.start(r, [&](HttpResponse response) { got = std::move(response); });
  ASSERT_TRUE(run_until(loop, [&] { return got.has_value(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
  EXPECT_EQ(got->status, 0);
  EXPECT_TRUE(got->timed_out);
  EXPECT_FALSE(got->permanent) << "a timeout may pass next time";
  EXPECT_NE(got->error.find("timed out"), std::string::npos) << got->error;
}

TEST_F(HttpClientTest, AResponseOverTheCapIsRefused) {
  const FakeLlmServer& server = *server_;
  EventLoop loop;
  HttpClient client(loop);
  HttpRequest r = chat(server, "[[reply: " + std::string(5000, 'x') + "]]", server.api_key());
  r.max_response_bytes = 1000;
  std::optional<HttpResponse> got;
  client.start(r, [&](HttpResponse response) { got = std::move(response); });
  ASSERT_TRUE(run_until(loop, [&] { return got.has_value(); }));
  EXPECT_EQ(got->status, 0);
  EXPECT_TRUE(got->permanent);
  EXPECT_NE(got->error.find("larger than 1000 bytes"), std::string::npos) << got->error;
}

TEST_F(HttpClientTest, ACancelledRequestNeverReports) {
  const FakeLlmServer& server = *server_;
  EventLoop loop;
  HttpClient client(loop);
  bool cancelled_reported = false;
  std::optional<HttpResponse> other;
  auto id = client.start(chat(server, "[[sleep: 0.3]]", server.api_key()),
                         [&](HttpResponse) { cancelled_reported = true; });
  client.start(chat(server, "[[sleep: 0.6]]", server.api_key()),
               [&](HttpResponse r) { other = std::move(r); });
  loop.run_once(50ms);
  client.cancel(id);
  EXPECT_EQ(client.in_flight(), 1u);
  ASSERT_TRUE(run_until(loop, [&] { return other.has_value(); }));
  EXPECT_EQ(other->status, 200);
  EXPECT_FALSE(cancelled_reported);
}

TEST_F(HttpClientTest, DestroyingTheClientStopsEverythingAndLeaksNoDescriptor) {
  const FakeLlmServer& server = *server_;
  EventLoop loop;
  { HttpClient warm_up(loop); }  // libcurl's one-time global set-up may open files of its own
  const int fds_before = orch::testing::open_fd_count();
  bool reported = false;
  {
    HttpClient client(loop);
    for (int i = 0; i < 4; ++i)
      client.start(chat(server, "[[sleep: 2]]", server.api_key()), [&](HttpResponse) { reported = true; });
    for (int i = 0; i < 5; ++i) loop.run_once(20ms);
  }
  for (int i = 0; i < 5; ++i) loop.run_once(20ms);
  EXPECT_FALSE(reported);
  EXPECT_TRUE(loop.idle()) << "a watch or timer of the destroyed client is left in the loop";
  EXPECT_LE(orch::testing::open_fd_count(), fds_before);
}

}  // namespace
}  // namespace orch
