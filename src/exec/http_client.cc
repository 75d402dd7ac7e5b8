// exec/http_client.cc — libcurl's multi interface on orch's EventLoop.
//
// libcurl owns the connections; this file only relays: the sockets libcurl wants
// watched become EventLoop watches, its one timeout becomes one EventLoop timer,
// and each readiness goes back to curl_multi_socket_action. Finished transfers
// are read with curl_multi_info_read after every action, and their `done` is
// deferred to the next loop turn (never run inside libcurl's callbacks, and never
// inside start()).
#include "exec/http_client.h"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <mutex>
#include <set>

#include "exec/curl_api.h"
#include "util/strings.h"

namespace orch {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Idle connections kept for reuse, across all hosts (CURLMOPT_MAXCONNECTS).
constexpr long kMaxIdleConnections = 64;

// A Retry-After beyond this (a year) is read as this: the wait must fit in
// milliseconds, and no run waits that long anyway.
constexpr double kMaxRetryAfterSeconds = 365.0 * 24 * 3600;

std::string to_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<std::string> HttpResponse::header(const std::string& name) const {
  const std::string wanted = to_lower(name);
  for (const auto& [key, value] : headers)
    if (key == wanted) return value;
  return std::nullopt;
}

std::optional<std::chrono::milliseconds> HttpResponse::retry_after(
    std::chrono::system_clock::time_point now) const {
  auto value = header("retry-after");
  if (!value || value->empty()) return std::nullopt;
  const std::string& text = *value;
  if (std::isdigit(static_cast<unsigned char>(text.front()))) {
    // delay-seconds: digits (a fraction is read too, though RFC 9110 has none).
    double seconds = 0;
    auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), seconds, std::chars_format::fixed);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return std::chrono::milliseconds(
        static_cast<std::int64_t>(std::min(seconds, kMaxRetryAfterSeconds) * 1000));
  }
  auto curl = load_curl();  // libcurl's HTTP-date parser; loaded already if this came over HTTP
  if (!curl) return std::nullopt;
  const time_t at = (*curl)->getdate(text.c_str(), nullptr);
  if (at == -1) return std::nullopt;
  time_t reference = std::chrono::system_clock::to_time_t(now);
  if (auto date = header("date"))
    if (time_t server_now = (*curl)->getdate(date->c_str(), nullptr); server_now != -1)
      reference = server_now;
  const double seconds = std::clamp(std::difftime(at, reference), 0.0, kMaxRetryAfterSeconds);
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

struct HttpClient::Impl {
  struct Transfer {
    RequestId id = 0;
    CURL* easy = nullptr;
    curl_slist* header_list = nullptr;
    HttpRequest request;
    HttpResponse response;
    Done done;
    SteadyClock::time_point started;
    bool too_large = false;
    bool finished = false;  // done is deferred, not yet delivered
    char error_buffer[CURL_ERROR_SIZE] = {};
  };

  EventLoop& loop;
  CURLM* multi = nullptr;
  std::map<RequestId, std::unique_ptr<Transfer>> transfers;
  std::set<curl_socket_t> watched;
  EventLoop::TimerId timer = 0;
  RequestId next_id = 1;
  // Deferred deliveries check this: a destroyed client delivers nothing.
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);

  const CurlApi* api = nullptr;  // null when libcurl could not be loaded
  std::string load_error;

  explicit Impl(EventLoop& l) : loop(l) {
    auto loaded = load_curl();
    if (!loaded) {
      load_error = loaded.error().message;
      return;
    }
    api = *loaded;
    multi = api->multi_init();
    api->multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &Impl::on_socket);
    api->multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
    api->multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &Impl::on_timer);
    api->multi_setopt(multi, CURLMOPT_TIMERDATA, this);
    // libcurl's default connection cache holds 4 x the transfers in flight at the
    // moment: as a wave of calls drains, it closes the idle keep-alive
    // connections the next wave would reuse, and each then pays a new connect
    // (and TLS handshake). A fixed size keeps them.
    api->multi_setopt(multi, CURLMOPT_MAXCONNECTS, kMaxIdleConnections);
  }

  ~Impl() {
    *alive = false;
    for (auto& [id, t] : transfers) release(*t);
    transfers.clear();
    for (curl_socket_t s : watched) loop.unwatch(s);
    if (timer) loop.cancel_timer(timer);
    if (api != nullptr) api->multi_cleanup(multi);
  }

  void release(Transfer& t) {
    if (api == nullptr) return;  // nothing was ever made with libcurl
    if (t.easy != nullptr) {
      if (!t.finished) api->multi_remove_handle(multi, t.easy);
      api->easy_cleanup(t.easy);
      t.easy = nullptr;
    }
    api->slist_free_all(t.header_list);
    t.header_list = nullptr;
  }

  // ---- libcurl -> EventLoop ----

  static int on_socket(CURL*, curl_socket_t s, int what, void* userp, void*) {
    auto* self = static_cast<Impl*>(userp);
    if (what == CURL_POLL_REMOVE) {
      self->loop.unwatch(s);
      self->watched.erase(s);
      return 0;
    }
    short events = 0;
    if (what & CURL_POLL_IN) events |= POLLIN;
    if (what & CURL_POLL_OUT) events |= POLLOUT;
    self->watched.insert(s);
    self->loop.watch(s, events, [self, s](short revents) {
      int flags = 0;
      if (revents & (POLLIN | POLLHUP)) flags |= CURL_CSELECT_IN;
      if (revents & POLLOUT) flags |= CURL_CSELECT_OUT;
      if (revents & (POLLERR | POLLNVAL)) flags |= CURL_CSELECT_ERR;
      self->act(s, flags);
    });
    return 0;
  }

  static int on_timer(CURLM*, long timeout_ms, void* userp) {
    auto* self = static_cast<Impl*>(userp);
    if (self->timer) {
      self->loop.cancel_timer(self->timer);
      self->timer = 0;
    }
    // -1: no timeout wanted. 0: act as soon as possible — from the loop, since
    // libcurl must not be re-entered from inside this callback.
    if (timeout_ms >= 0) {
      self->timer = self->loop.add_timer(std::chrono::milliseconds(timeout_ms), [self] {
        self->timer = 0;
        self->act(CURL_SOCKET_TIMEOUT, 0);
      });
    }
    return 0;
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    const std::size_t n = size * count;
    if (static_cast<std::int64_t>(t->response.body.size() + n) > t->request.max_response_bytes) {
      t->too_large = true;
      return 0;  // anything but n aborts the transfer (CURLE_WRITE_ERROR)
    }
    t->response.body.append(data, n);
    return n;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* userp) {
    auto* t = static_cast<Transfer*>(userp);
    const std::size_t n = size * count;
    std::string line(data, n);
    if (line.starts_with("HTTP/")) {
      t->response.headers.clear();  // a new response (after a 100 Continue)
    } else if (auto colon = line.find(':'); colon != std::string::npos) {
      const std::string_view text(line);
      t->response.headers.emplace_back(to_lower(std::string(trim(text.substr(0, colon)))),
                                       std::string(trim(text.substr(colon + 1))));
    }
    return n;
  }

  // ---- EventLoop -> libcurl ----

  void act(curl_socket_t s, int flags) {
    int running = 0;
    api->multi_socket_action(multi, s, flags, &running);
    collect_finished();
  }

  void collect_finished() {
    int left = 0;
    while (CURLMsg* message = api->multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      api->easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &t);
      if (t != nullptr) finish(*t, message->data.result);
    }
  }

  void finish(Transfer& t, CURLcode result) {
    HttpResponse& r = t.response;
    r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t.started);
    if (result == CURLE_OK) {
      api->easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &r.status);
    } else {
      r.status = 0;
      r.body.clear();
      r.timed_out = result == CURLE_OPERATION_TIMEDOUT;
      if (t.too_large) {
        r.permanent = true;
        r.error = fmt::format("the response is larger than {} bytes", t.request.max_response_bytes);
      } else if (result == CURLE_FILESIZE_EXCEEDED) {  // refused on its Content-Length, before its body
        r.permanent = true;
        r.error = fmt::format("the response announces a body larger than {} bytes (its Content-Length)",
                              t.request.max_response_bytes);
      } else if (result == CURLE_BAD_CONTENT_ENCODING) {
        r.permanent = true;
        r.error = fmt::format("the response body could not be decoded ({})",
                              t.error_buffer[0] != '\0' ? t.error_buffer : api->easy_strerror(result));
      } else if (r.timed_out) {
        r.error = fmt::format("timed out after {} ms ({})", r.elapsed.count(),
                              t.error_buffer[0] != '\0' ? t.error_buffer : api->easy_strerror(result));
      } else {
        r.error =
            t.error_buffer[0] != '\0' ? std::string(t.error_buffer) : std::string(api->easy_strerror(result));
      }
    }
    api->multi_remove_handle(multi, t.easy);
    t.finished = true;
    release(t);
    deliver_later(t.id);
  }

  // Calls the transfer's `done` in the next loop turn, unless it is cancelled or
  // the client destroyed first.
  void deliver_later(RequestId id) {
    loop.defer([this, id, alive = std::weak_ptr<bool>(alive)] {
      auto held = alive.lock();
      if (!held || !*held) return;  // the client is gone
      auto it = transfers.find(id);
      if (it == transfers.end()) return;  // cancelled after it finished
      std::unique_ptr<Transfer> done_transfer = std::move(it->second);
      transfers.erase(it);
      Done done = std::move(done_transfer->done);
      done(std::move(done_transfer->response));  // last: may destroy the client
    });
  }

  RequestId start(HttpRequest request, Done done) {
    auto t = std::make_unique<Transfer>();
    t->id = next_id++;
    t->request = std::move(request);
    t->done = std::move(done);
    t->started = SteadyClock::now();
    if (api == nullptr) {  // reported like any transport failure, from the loop
      const RequestId id = t->id;
      t->finished = true;
      t->response.status = 0;
      t->response.error = load_error;
      transfers.emplace(id, std::move(t));
      deliver_later(id);
      return id;
    }
    t->easy = api->easy_init();
    CURL* e = t->easy;
    const HttpRequest& q = t->request;
    api->easy_setopt(e, CURLOPT_URL, q.url.c_str());
    // A body whose Content-Length is over the cap is refused before it is read;
    // one without (chunked, or as decoded) is held to it in on_body.
    api->easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(q.max_response_bytes));
    api->easy_setopt(e, CURLOPT_PRIVATE, t.get());
    api->easy_setopt(e, CURLOPT_ERRORBUFFER, t->error_buffer);
    api->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    api->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    api->easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    api->easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
    api->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(q.connect_timeout.count()));
    api->easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(q.timeout.count()));
    api->easy_setopt(e, CURLOPT_WRITEFUNCTION, &Impl::on_body);
    api->easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    api->easy_setopt(e, CURLOPT_HEADERFUNCTION, &Impl::on_header);
    api->easy_setopt(e, CURLOPT_HEADERDATA, t.get());
    if (q.method == "GET") {
      api->easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
      api->easy_setopt(e, CURLOPT_POSTFIELDS, q.body.data());
      api->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(q.body.size()));
      if (q.method != "POST") api->easy_setopt(e, CURLOPT_CUSTOMREQUEST, q.method.c_str());
    }
    for (const auto& [name, value] : q.headers)
      t->header_list = api->slist_append(t->header_list, fmt::format("{}: {}", name, value).c_str());
    // No "Expect: 100-continue" round trip before a large body.
    t->header_list = api->slist_append(t->header_list, "Expect:");
    api->easy_setopt(e, CURLOPT_HTTPHEADER, t->header_list);

    const RequestId id = t->id;
    Transfer& ref = *t;
    transfers.emplace(id, std::move(t));
    if (CURLMcode code = api->multi_add_handle(multi, e); code != CURLM_OK) {
      // Reported like any transport failure, from the loop.
      ref.finished = true;  // never added: nothing to remove
      fmt::format_to_n(ref.error_buffer, CURL_ERROR_SIZE - 1, "{}", api->multi_strerror(code));
      finish_unadded(ref);
    }
    return id;
  }

  void finish_unadded(Transfer& t) {
    t.response.status = 0;
    t.response.error = t.error_buffer;
    api->easy_cleanup(t.easy);
    t.easy = nullptr;
    api->slist_free_all(t.header_list);
    t.header_list = nullptr;
    deliver_later(t.id);
  }

  void cancel(RequestId id) {
    auto it = transfers.find(id);
    if (it == transfers.end()) return;
    release(*it->second);
    transfers.erase(it);
  }
};

HttpClient::HttpClient(EventLoop& loop) : impl_(std::make_unique<Impl>(loop)) {}
HttpClient::~HttpClient() = default;

HttpClient::RequestId HttpClient::start(HttpRequest request, Done done) {
  return impl_->start(std::move(request), std::move(done));
}

void HttpClient::cancel(RequestId id) {
  impl_->cancel(id);
}

std::size_t HttpClient::in_flight() const {
  return impl_->transfers.size();
}

}  // namespace orch
