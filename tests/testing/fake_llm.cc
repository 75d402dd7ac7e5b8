#include "testing/fake_llm.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

extern char** environ;

namespace orch::testing {

FakeLlmServer::FakeLlmServer(std::string api_key) : api_key_(std::move(api_key)) {
  const std::string script = (source_dir() / "tests" / "fake_llm" / "server.py").string();
  const std::string port_file = (dir_ / "port").string();
  std::vector<std::string> args = {"python3", script, "--port", "0", "--port-file", port_file, "--api-key", api_key_};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = (dir_ / "server.log").string();
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  if (posix_spawnp(&pid_, "python3", &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
  if (pid_ < 0) {
    ADD_FAILURE() << "cannot start " << script;
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::filesystem::exists(port_file)) {
      port_ = std::stoi(read_file(port_file));
      return;
    }
    if (int status = 0; waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      ADD_FAILURE() << "the fake LLM server exited: " << read_file(log);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "the fake LLM server did not start within 15 s: " << read_file(log);
}

FakeLlmServer::~FakeLlmServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

namespace {
std::string control(const std::string& url, const std::string& method) {
  auto r = run_command({"python3", "-c",
                        "import sys, urllib.request\n"
                        "req = urllib.request.Request(sys.argv[1], method=sys.argv[2], data=b'' if sys.argv[2] == "
                        "'POST' else None)\n"
                        "sys.stdout.write(urllib.request.urlopen(req).read().decode())\n",
                        url, method},
                       ".");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}
}  // namespace

nlohmann::json FakeLlmServer::requests() const {
  return nlohmann::json::parse(control(url() + "/_requests", "GET"), nullptr, false);
}

void FakeLlmServer::reset_requests() const { control(url() + "/_reset", "POST"); }

}  // namespace orch::testing
