// testing/fake_llm.h — runs tests/fake_llm/server.py for a test.
//
// The hosted model APIs cannot be reached from tests, so tests of HTTP and of
// the llm executor talk to our own fake provider: a real HTTP server on
// 127.0.0.1 that speaks the OpenAI Chat Completions and Anthropic Messages
// protocols, steered by [[directives]] in the prompt (tests/fake_llm/README.md).
// Started on a free port in the constructor; stopped (SIGTERM, then SIGKILL) in
// the destructor.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>

#include "testing/testing.h"

namespace orch::testing {

class FakeLlmServer {
 public:
  explicit FakeLlmServer(std::string api_key = "test-key-123456");
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  bool started() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& api_key() const { return api_key_; }

  // The API requests received since start or the last reset_requests(), in order
  // (GET /_requests: each {method, path, headers, body}); through Python's
  // standard library, like a client that is not orch.
  nlohmann::json requests() const;
  void reset_requests() const;

 private:
  TempDir dir_;
  std::string api_key_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace orch::testing
