// `orch serve`'s HTTP server. See http_server.h.
#include "serve/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <charconv>
#include <mutex>
#include <thread>

#include "postgres/pg_store.h"
#include "serve/api.h"
#include "serve/listen.h"
#include "serve/metrics.h"
#include "serve/page.h"
#include "serve/run_graph.h"
#include "serve/runtime_api.h"
#include "serve/token.h"
#include "util/json_text.h"

namespace orch::serve {

namespace {

constexpr std::size_t kMaxRequestBytes = 64 * 1024;
constexpr int kStreamThreads = 32;
// A comment on an idle event stream, so proxies and browsers keep it open.
constexpr auto kKeepAlive = std::chrono::seconds(15);

std::atomic<httplib::Server*> g_server{nullptr};
// Set by stop_serving(): the event streams end at their next look at the ledger.
std::atomic<bool> g_stopping{false};

// A query parameter as a number in [low, high]; `fallback` when absent; an
// error message when it is not one.
Expected<std::int64_t> number_param(const httplib::Request& req, const char* name, std::int64_t fallback,
                                    std::int64_t low, std::int64_t high) {
  if (!req.has_param(name)) return fallback;
  const std::string text = req.get_param_value(name);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < low || value > high)
    return fail(ErrorCode::InvalidInput,
                fmt::format("?{}={}: give a whole number from {} to {}", name, text, low, high));
  return value;
}

void send(httplib::Response& res, const Reply& reply) {
  res.status = reply.status;
  res.set_content(reply.body, reply.content_type.c_str());
}

void bad_request(httplib::Response& res, const Error& e) {
  send(res, json_reply({{"error", e.message}}, 400));
}

std::string cookie_token(const httplib::Request& req) {
  const std::string cookies = req.get_header_value("Cookie");
  for (std::size_t at = 0; at < cookies.size();) {
    std::size_t end = cookies.find(';', at);
    if (end == std::string::npos) end = cookies.size();
    std::string_view part(cookies.data() + at, end - at);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.starts_with("orch_token=")) return std::string(part.substr(11));
    at = end + 1;
  }
  return "";
}

class Server {
 public:
  Server(Ledger& ledger, const Clock& clock, const ServeOptions& options)
      : api_(ledger, clock), runtimes_(ledger), ledger_(ledger), clock_(clock), o_(options) {}

  Expected<void> run() {
    httplib::Server svr;
    svr.new_task_queue = [] { return new httplib::ThreadPool(kStreamThreads); };
    svr.set_payload_max_length(kMaxRequestBytes);
    reuse_address_only(svr);
    svr.set_keep_alive_timeout(5);
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return guard(req, res) ? httplib::Server::HandlerResponse::Unhandled
                             : httplib::Server::HandlerResponse::Handled;
    });
    svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty()) return;
      const char* why = res.status == 413   ? "the request is too large (64 KiB at most)"
                        : res.status == 404 ? "no such route"
                                            : "bad request";
      res.set_content(json_text(nlohmann::json{{"error", why}}), "application/json");
    });
    routes(svr);
    const int port = ORCH_TRY(bind_server(svr, o_.host, o_.port));
    origin_ = origin_of(o_.host, port);
    g_server = &svr;
    if (o_.on_listening) o_.on_listening(origin_ + "/");
    svr.listen_after_bind();
    g_server = nullptr;
    return {};
  }

 private:
  // The token and same-origin rules (http_server.h). False: refused (res set).
  bool guard(const httplib::Request& req, httplib::Response& res) const {
    const bool acts = req.method == "POST";
    const bool api = req.path.starts_with("/api/") || req.path == "/metrics";
    if (acts) {
      const std::string origin = req.get_header_value("Origin");
      const std::string site = req.get_header_value("Sec-Fetch-Site");
      if ((!origin.empty() && origin != origin_) || site == "cross-site" || site == "same-site") {
        send(res, json_reply({{"error", "refused: a request from another site"}}, 403));
        return false;
      }
      if (!same_token(o_.token, req.get_header_value("X-Orch-Token"))) {
        send(res, json_reply({{"error",
                               "refused: this needs the server's token in an X-Orch-Token header "
                               "(orch serve printed it at its first start; it is in its token file)"}},
                             403));
        return false;
      }
      return true;
    }
    if (api && !is_loopback(o_.host) && !same_token(o_.token, req.get_header_value("X-Orch-Token")) &&
        !same_token(o_.token, cookie_token(req))) {
      send(res,
           json_reply({{"error", "refused: this server listens beyond this machine; give its token"}}, 403));
      return false;
    }
    return true;
  }

  template <class F>
  auto locked(F f) {
    std::lock_guard<std::mutex> hold(mutex_);
    return f();
  }

  void routes(httplib::Server& svr) {
    svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Content-Security-Policy",
                     "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'");
      res.set_content(kPageHtml, "text/html; charset=utf-8");
    });
    svr.Get("/healthz",
            [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      auto text = locked([&]() -> Expected<std::string> {
        // A PostgreSQL ledger: its workers too, asked on the store's connection.
        if (auto* pg = dynamic_cast<PgStore*>(&ledger_.runs())) {
          distrib::WorkQueue queue(pg->connection());
          auto workers = ORCH_TRY(queue.workers());
          return render_metrics(ledger_.runs(), clock_, &workers);
        }
        return render_metrics(ledger_.runs(), clock_);
      });
      if (!text) return send(res, error_reply(text.error()));
      res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
    });
    svr.Get("/api/runs", [this](const httplib::Request& req, httplib::Response& res) {
      RunsQuery q;
      q.status = req.get_param_value("status");
      auto limit = number_param(req, "limit", 50, 1, 1000);
      auto offset = number_param(req, "offset", 0, 0, 1'000'000'000);
      if (!limit) return bad_request(res, limit.error());
      if (!offset) return bad_request(res, offset.error());
      q.limit = static_cast<int>(*limit);
      q.offset = static_cast<int>(*offset);
      send(res, locked([&] { return api_.runs(q); }));
    });
    svr.Get("/api/runs/stream",
            [this](const httplib::Request&, httplib::Response& res) { runs_stream(res); });
    svr.Get(R"(/api/runs/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      auto with = number_param(req, "steps", 1, 0, 1);
      if (!with) return bad_request(res, with.error());
      send(res, locked([&] { return api_.run(req.matches[1], *with == 1); }));
    });
    svr.Get(R"(/api/runs/([^/]+)/approvals)", [this](const httplib::Request& req, httplib::Response& res) {
      send(res, locked([&] { return api_.approvals(req.matches[1]); }));
    });
    svr.Get(R"(/api/runs/([^/]+)/plans)", [this](const httplib::Request& req, httplib::Response& res) {
      send(res, locked([&] { return api_.plans(req.matches[1]); }));
    });
    svr.Get(R"(/api/runs/([^/]+)/steps)", [this](const httplib::Request& req, httplib::Response& res) {
      StepsPage page;
      auto offset = number_param(req, "offset", 0, 0, 1'000'000'000);
      auto limit = number_param(req, "limit", 100, 1, 1000);
      if (!offset) return bad_request(res, offset.error());
      if (!limit) return bad_request(res, limit.error());
      page.offset = static_cast<int>(*offset);
      page.limit = static_cast<int>(*limit);
      if (req.has_param("status")) {
        page.status = parse_step_status(req.get_param_value("status"));
        if (!page.status)
          return bad_request(
              res, Error{ErrorCode::InvalidInput,
                         fmt::format("?status={}: not a step status (pending, running, done, failed, "
                                     "skipped, cancelled, awaiting_approval)",
                                     req.get_param_value("status"))});
      }
      send(res, locked([&] { return api_.steps(req.matches[1], page); }));
    });
    svr.Get(R"(/api/runs/([^/]+)/graph\.svg)", [this](const httplib::Request& req, httplib::Response& res) {
      auto svg = locked([&] { return run_graph_svg(ledger_.runs(), req.matches[1]); });
      if (!svg) return send(res, error_reply(svg.error()));
      res.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
      res.set_content(*svg, "image/svg+xml");
    });
    svr.Get(R"(/api/runs/([^/]+)/events)", [this](const httplib::Request& req, httplib::Response& res) {
      auto after = number_param(req, "after", 0, 0, INT64_MAX);
      auto limit = number_param(req, "limit", 1000, 1, 10000);
      if (!after) return bad_request(res, after.error());
      if (!limit) return bad_request(res, limit.error());
      send(res, locked([&] { return api_.events(req.matches[1], *after, static_cast<int>(*limit)); }));
    });
    svr.Get(R"(/api/runs/([^/]+)/stream)",
            [this](const httplib::Request& req, httplib::Response& res) { run_stream(req, res); });
    svr.Get(R"(/api/runs/([^/]+)/steps/([^/]+)/attempts/(\d{1,9})/output)",
            [this](const httplib::Request& req, httplib::Response& res) {
              auto tail = number_param(req, "tail", 64 * 1024, 0, 16 * 1024 * 1024);
              if (!tail) return bad_request(res, tail.error());
              const std::string stream = req.has_param("stream") ? req.get_param_value("stream") : "stdout";
              send(res, locked([&] {
                     return api_.output(req.matches[1], req.matches[2], std::stoi(req.matches[3]), stream,
                                        *tail);
                   }));
            });
    svr.Get("/api/traces", [this](const httplib::Request&, httplib::Response& res) {
      send(res, locked([&] { return runtimes_.traces(); }));
    });
    svr.Get(R"(/api/traces/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      send(res, locked([&] { return runtimes_.trace(req.matches[1]); }));
    });
    svr.Get("/api/reviews", [this](const httplib::Request&, httplib::Response& res) {
      send(res, locked([&] { return runtimes_.reviews(); }));
    });
    svr.Get(R"(/api/reviews/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      send(res, locked([&] { return runtimes_.review(req.matches[1]); }));
    });
    svr.Get("/api/cycles", [this](const httplib::Request&, httplib::Response& res) {
      send(res, locked([&] { return runtimes_.cycles(); }));
    });
    svr.Get(R"(/api/cycles/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      send(res, locked([&] { return runtimes_.cycle(req.matches[1]); }));
    });
    svr.Post(R"(/api/runs/([^/]+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
      send(res, locked([&] { return api_.cancel(req.matches[1]); }));
    });
    svr.Post(R"(/api/runs/([^/]+)/steps/([^/]+)/approve)",
             [this](const httplib::Request& req, httplib::Response& res) {
               send(res, locked([&] { return api_.approve(req.matches[1], req.matches[2]); }));
             });
    svr.Post(R"(/api/runs/([^/]+)/steps/([^/]+)/deny)",
             [this](const httplib::Request& req, httplib::Response& res) {
               send(res, locked([&] { return api_.deny(req.matches[1], req.matches[2]); }));
             });
  }

  // Each new event of the run, as `id: SEQ`, `event: ledger`, `data: JSON`; from
  // the seq after Last-Event-ID (a browser reconnecting) or ?after=.
  void run_stream(const httplib::Request& req, httplib::Response& res) {
    const std::string run_id = req.matches[1];
    std::int64_t after = 0;
    if (auto a = number_param(req, "after", 0, 0, INT64_MAX); a) after = *a;
    const std::string last = req.get_header_value("Last-Event-ID");
    if (!last.empty()) std::from_chars(last.data(), last.data() + last.size(), after);
    auto first = locked([&] { return api_.events_after(run_id, after, 1); });
    if (!first) return send(res, error_reply(first.error()));
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, run_id, after, row = std::string(), quiet = std::chrono::steady_clock::now()](
            std::size_t, httplib::DataSink& sink) mutable {
          auto events = locked([&] { return api_.events_after(run_id, after, 500); });
          if (!events) return false;
          // The run's row changes without an event too (its final status, its
          // spent figures): `event: run` when it did.
          auto run = locked([&] { return ledger_.runs().find_run(run_id); });
          if (!run || !*run) return false;
          std::string out;
          for (const EventRecord& e : *events) {
            auto data = nlohmann::ordered_json::parse(e.data_json, nullptr, false);
            nlohmann::ordered_json line = {
                {"seq", e.seq},
                {"ts", e.ts},
                {"kind", e.kind},
                {"step", e.step_id},
                {"attempt", e.attempt},
                {"data", data.is_discarded() ? nlohmann::ordered_json(e.data_json) : data}};
            out += fmt::format("id: {}\nevent: ledger\ndata: {}\n\n", e.seq, json_text(line));
            after = e.seq;
          }
          // After the events read with it: a final status comes after the last event.
          const std::string now_row = fmt::format("{}:{}:{}", run_status_name((*run)->status),
                                                  (*run)->updated_at, (*run)->spent_attempts);
          if (now_row != row) {
            row = now_row;
            out += fmt::format("event: run\ndata: {}\n\n",
                               json_text(nlohmann::json{{"status", run_status_name((*run)->status)}}));
          }
          const auto now = std::chrono::steady_clock::now();
          if (out.empty() && now - quiet >= kKeepAlive) out = ": keep-alive\n\n";
          if (!out.empty()) {
            quiet = now;
            if (!sink.write(out.data(), out.size())) return false;
          }
          if (events->empty()) std::this_thread::sleep_for(o_.stream_poll);
          return sink.is_writable() && !g_stopping.load();
        });
  }

  // `event: runs` whenever the runs list (ids, statuses, spent) changed.
  void runs_stream(httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_chunked_content_provider(
        "text/event-stream", [this, seen = std::string(), quiet = std::chrono::steady_clock::now()](
                                 std::size_t, httplib::DataSink& sink) mutable {
          auto runs = locked([&] { return ledger_.runs().list_runs(); });
          if (!runs) return false;
          std::string digest;
          for (const RunRecord& r : *runs)
            digest +=
                fmt::format("{}:{}:{}:{};", r.id, static_cast<int>(r.status), r.updated_at, r.spent_attempts);
          const auto now = std::chrono::steady_clock::now();
          std::string out;
          if (digest != seen) {
            seen = std::move(digest);
            out = fmt::format("event: runs\ndata: {{\"runs\": {}}}\n\n", runs->size());
          } else if (now - quiet >= kKeepAlive) {
            out = ": keep-alive\n\n";
          }
          if (!out.empty()) {
            quiet = now;
            if (!sink.write(out.data(), out.size())) return false;
          }
          std::this_thread::sleep_for(o_.stream_poll);
          return sink.is_writable() && !g_stopping.load();
        });
  }

  Api api_;
  RuntimeApi runtimes_;
  Ledger& ledger_;
  const Clock& clock_;
  const ServeOptions& o_;
  std::string origin_;
  std::mutex mutex_;  // the ledger's connection serves one request at a time
};

}  // namespace

Expected<std::pair<std::string, int>> parse_listen(const std::string& text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos)
    return fail(ErrorCode::InvalidInput,
                fmt::format("--listen {}: give HOST:PORT (e.g. 127.0.0.1:8470)", text));
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";
  const std::string port_text = text.substr(colon + 1);
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535)
    return fail(
        ErrorCode::InvalidInput,
        fmt::format("--listen {}: '{}' is not a port (0 to 65535; 0 picks a free one)", text, port_text));
  return std::make_pair(host, port);
}

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return false;
}

Expected<void> serve(Ledger& ledger, const Clock& clock, const ServeOptions& options) {
  Server server(ledger, clock, options);
  return server.run();
}

void stop_serving() {
  g_stopping = true;
  if (httplib::Server* s = g_server.load()) s->stop();
}

}  // namespace orch::serve
