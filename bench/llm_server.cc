// bench/llm_server.cc — the model provider for bench/run.sh, section 4.
//
//   bench_llm_server --port-file FILE [--delay-ms 20] [--threads 64]
//
// A minimal OpenAI-compatible Chat Completions server on 127.0.0.1 (an
// ephemeral port, written to FILE once it listens): every POST to a path ending
// in /chat/completions that carries a Bearer key and a JSON body is answered
// after --delay-ms with the completion "ok" and usage {prompt_tokens: 10,
// completion_tokens: 2}. HTTP/1.1 with keep-alive, a thread per connection
// (cpp-httplib's thread pool), so 16 calls in flight wait their 20 ms side by side.
//
// Why not Python: bench/llm_server.py (asyncio, one thread) spends 0.15-0.2 ms of
// CPU per request on this project's 2-core machine, about 3 ms per wave of 16
// calls, which the benchmark would charge to orch (docs/benchmarks.md, session 7).
// This server's share is a few microseconds per request. No orch code is used.
#include <httplib.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <thread>

namespace {

constexpr const char* kReply =
    R"({"id":"chatcmpl-bench","object":"chat.completion","model":"bench",)"
    R"("choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}})";

void error(httplib::Response& res, int status, const char* message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", {{"message", message}}}}.dump(), "application/json");
}

// Writes the port under a temporary name, then renames: a reader polling FILE
// never sees it half-written.
bool write_port_file(const std::string& path, int port) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp);
    out << port << "\n";
    if (!out.flush()) return false;
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  return !ec;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"An OpenAI-compatible Chat Completions server for bench/run.sh (section 4)."};
  std::string port_file;
  int delay_ms = 20;
  int threads = 64;
  app.add_option("--port-file", port_file, "Where to write the port once listening")->required();
  app.add_option("--delay-ms", delay_ms, "How long each call waits before its answer")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads, "Connections served at once (one thread each)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  httplib::Server server;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  // Keep a client's connections open for the whole benchmark (cpp-httplib closes
  // one after 5 requests by default).
  server.set_keep_alive_max_count(1'000'000);
  server.set_keep_alive_timeout(60);
  // Headers and body go out as separate writes: without TCP_NODELAY, Nagle's
  // algorithm holds the body until the client's delayed ACK (40 ms).
  server.set_tcp_nodelay(true);
  const auto delay = std::chrono::milliseconds(delay_ms);
  server.Post(R"(.*/chat/completions)", [delay](const httplib::Request& req, httplib::Response& res) {
    if (!req.get_header_value("Authorization").starts_with("Bearer ")) return error(res, 401, "no key");
    if (nlohmann::json::parse(req.body, nullptr, false).is_discarded())
      return error(res, 400, "the body is not JSON");
    std::this_thread::sleep_for(delay);
    // With a charset the type is not one cpp-httplib compresses: a client that
    // accepts br or gzip (libcurl in orch does) would otherwise get every reply
    // brotli-compressed, which costs this server milliseconds of CPU per call
    // (curl's 200 calls: 293 ms plain, 338 ms with --compressed).
    res.set_content(kReply, "application/json; charset=utf-8");
  });
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) error(res, res.status, "not found");
  });
  // cpp-httplib listens with a backlog of 5: 16 clients connecting at once would
  // see SYNs dropped and retried a second later. Linux lets a listening socket's
  // backlog be raised by calling listen() again, so keep the socket to do that.
  int listening = -1;
  server.set_socket_options([&listening](int sock) {
    httplib::default_socket_options(sock);
    listening = sock;
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  if (port <= 0 || listening < 0 || ::listen(listening, 512) != 0) {
    std::fprintf(stderr, "bench_llm_server: cannot listen on 127.0.0.1\n");
    return 1;
  }
  if (!write_port_file(port_file, port)) {
    std::fprintf(stderr, "bench_llm_server: cannot write %s\n", port_file.c_str());
    return 1;
  }
  return server.listen_after_bind() ? 0 : 1;
}
