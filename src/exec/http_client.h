// exec/http_client.h — HTTP requests driven by the engine's EventLoop.
//
// The transport of the executors that call services (the `llm` executor's chat
// calls to OpenAI-compatible and Anthropic-style APIs): libcurl's multi interface
// with its sockets watched by the same EventLoop that watches step processes, so
// many requests are in flight without a thread each and a slow provider never
// blocks the scheduler. libcurl tells the client which sockets to watch and when
// its next timeout is (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION); the
// client turns those into EventLoop watches and timers and hands readiness back
// with curl_multi_socket_action.
//
// Contract: start() never calls `done` itself; `done` is called exactly once,
// from inside the loop, unless the request is cancelled first (then never).
// `done` may start or cancel other requests and may destroy the client if it is
// the last thing it does. A transport failure (refused connection, timeout, TLS,
// a response over the size cap) is a response with status 0 and `error` set; an
// HTTP error status (429, 500, ...) is a normal response with that status.
// Not thread-safe: use from the loop's thread only. The loop must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "orch/event_loop.h"

namespace orch {

struct HttpRequest {
  std::string method = "POST";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // name, value
  std::string body;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds timeout{600'000};  // the whole exchange
  std::int64_t max_response_bytes = 64 * 1024 * 1024;
};

struct HttpResponse {
  long status = 0;  // 0: no HTTP response (see error)
  // Header names in lower case, in the order received (the last response's, after redirects).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string error;  // why there is no response: "Connection refused", "timed out after 5000 ms", ...
  bool timed_out = false;
  // The exchange cannot succeed by being tried again as it is: the response is
  // larger than max_response_bytes (by its Content-Length or as it came), or its
  // body could not be decoded (a broken gzip stream).
  bool permanent = false;
  std::chrono::milliseconds elapsed{0};

  // The first header of this name (case-insensitive), if any.
  std::optional<std::string> header(const std::string& name) const;
  // How long the response's Retry-After asks the client to wait: delay-seconds
  // ("30"), or an HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT") less the
  // response's own Date (the server's clock, so a skewed local clock does not
  // stretch or cancel the wait), or less `now` when it has no Date it can read.
  // A date in the past is no wait (0). No header, or one that is neither form:
  // nullopt, as if the server had said nothing.
  std::optional<std::chrono::milliseconds> retry_after(
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const;
};

class HttpClient {
 public:
  using Done = std::function<void(HttpResponse)>;
  using RequestId = std::uint64_t;

  explicit HttpClient(EventLoop& loop);
  ~HttpClient();  // cancels what is in flight (no `done` is called)
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  RequestId start(HttpRequest request, Done done);
  // Stops a request; its `done` is never called. Unknown or finished ids are ignored.
  void cancel(RequestId id);
  std::size_t in_flight() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace orch
