// McpClient and McpSession against a real MCP server: tests/mcp/tool_fixture.mjs,
// written with the official SDK (node, and tests/mcp/node_modules from `npm ci`;
// without them these tests fail, never skip).
#include "exec/mcp_client.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <string>

#include "testing/testing.h"

namespace orch {
namespace {

using orch::testing::read_file;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::wait_for;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr milliseconds kListWait{60'000};

class McpClientTest : public ::testing::Test {
 protected:
  // A registry whose `fx` is the fixture, its marks in the test's folder.
  std::shared_ptr<const ToolRegistry> fixture_registry(int max_concurrency) {
    auto registry =
        parse_tool_registry("tools:\n  fx:\n    kind: mcp\n    command: [node, " +
                                (source_dir() / "tests" / "mcp" / "tool_fixture.mjs").string() +
                                "]\n    env: {FIXTURE_STATE_DIR: " + dir_.path().string() +
                                "}\n    status: prod_ready\n    risk: low\n    max_concurrency: " +
                                std::to_string(max_concurrency) + "\n",
                            "registry.yml");
    EXPECT_TRUE(registry) << registry.error().message;
    return std::make_shared<const ToolRegistry>(std::move(*registry));
  }
  std::string marks(const std::string& name) {
    std::error_code ec;
    return std::filesystem::exists(dir_ / name, ec) ? read_file(dir_ / name) : "";
  }
  // Waits for a call's answer (or fails the test after `wait`).
  static Expected<mcp::CallResult> answer(std::future<Expected<mcp::CallResult>>& future,
                                          milliseconds wait = milliseconds(30'000)) {
    if (future.wait_for(wait) != std::future_status::ready) {
      ADD_FAILURE() << "no answer within " << wait.count() << " ms";
      return fail(ErrorCode::Io, "no answer");
    }
    return future.get();
  }
  std::future<Expected<mcp::CallResult>> call(McpClient& client, const std::string& tool,
                                              nlohmann::json arguments = nlohmann::json::object()) {
    auto promise = std::make_shared<std::promise<Expected<mcp::CallResult>>>();
    auto future = promise->get_future();
    client.call("fx", tool, std::move(arguments),
                [promise](Expected<mcp::CallResult> result) { promise->set_value(std::move(result)); });
    return future;
  }

  TempDir dir_;
};

TEST_F(McpClientTest, EveryPageOfToolsIsListedOnceAndRemembered) {
  McpClient client(fixture_registry(4), dir_ / "logs");
  auto tools = client.tools("fx", kListWait);
  ASSERT_TRUE(tools) << tools.error().message;
  ASSERT_EQ(tools->size(), 7u) << "the fixture lists 3 a page";
  EXPECT_EQ((*tools)[0].name, "fail");
  EXPECT_EQ((*tools)[6].name, "nuke");
  EXPECT_TRUE((*tools)[4].output_schema.is_object()) << "whoami's outputSchema";
  auto again = client.tools("fx", kListWait);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->size(), 7u);
  const std::string starts = marks("starts");
  EXPECT_EQ(std::count(starts.begin(), starts.end(), '\n'), 1) << "one server";
  EXPECT_FALSE(client.tools("nope", kListWait));
}

TEST_F(McpClientTest, CallsBeyondTheServersConcurrencyWaitTheirTurn) {
  McpClient client(fixture_registry(1), dir_ / "logs");
  ASSERT_TRUE(client.tools("fx", kListWait));
  const auto started = SteadyClock::now();
  auto first = call(client, "slow", {{"seconds", 0.6}});
  auto second = call(client, "slow", {{"seconds", 0.6}});
  auto a = answer(first);
  auto b = answer(second);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->text, "slept");
  EXPECT_GE(SteadyClock::now() - started, milliseconds(1150)) << "one at a time";
}

TEST_F(McpClientTest, ACancelledCallIsNeverAnsweredAndTheServerIsToldWhy) {
  McpClient client(fixture_registry(1), dir_ / "logs");
  std::atomic<bool> answered = false;
  const std::uint64_t id = client.call("fx", "slow", {{"seconds", 30}},
                                       [&answered](Expected<mcp::CallResult>) { answered = true; });
  ASSERT_TRUE(wait_for([&] { return marks("calls").find("slow") != std::string::npos; }, 30'000));
  client.cancel(id, "the step was cancelled");
  ASSERT_TRUE(wait_for([&] { return marks("cancelled").find("the step was cancelled") != std::string::npos; },
                       10'000))
      << marks("cancelled");
  // The slot is free again: the next call (max_concurrency 1) goes through.
  auto next = call(client, "whoami");
  auto who = answer(next);
  ASSERT_TRUE(who) << who.error().message;
  EXPECT_TRUE(who->structured);
  EXPECT_FALSE(answered.load());
}

TEST_F(McpClientTest, AServerIsRestartedOnceThenDead) {
  McpClient client(fixture_registry(2), dir_ / "logs");
  auto first = call(client, "crash");
  auto crashed = answer(first);
  ASSERT_FALSE(crashed);
  EXPECT_TRUE(
      crashed.error().message.starts_with("MCP server 'fx' exited (status 3) during tools/call crash"))
      << crashed.error().message;
  EXPECT_NE(crashed.error().message.find("fixture: crashing on purpose"), std::string::npos)
      << "the server's stderr, from its log";
  auto again = call(client, "crash_once");  // a new server: crashes (status 4), then...
  auto once = answer(again);
  ASSERT_FALSE(once);
  EXPECT_TRUE(
      once.error().message.starts_with("MCP server 'fx' exited (status 4) during tools/call crash_once"))
      << once.error().message;
  auto later = call(client, "whoami");
  auto dead = answer(later);
  ASSERT_FALSE(dead);
  EXPECT_TRUE(dead.error().message.starts_with(
      "MCP server 'fx' is dead: it exited twice during the run (the last time: status 4)"))
      << dead.error().message;
  const std::string starts = marks("starts");
  EXPECT_EQ(std::count(starts.begin(), starts.end(), '\n'), 2) << starts;
}

TEST_F(McpClientTest, DestroyingTheClientShutsItsServersDown) {
  pid_t pid = 0;
  {
    McpClient client(fixture_registry(1), dir_ / "logs");
    auto who = call(client, "whoami");
    auto answered = answer(who);
    ASSERT_TRUE(answered && answered->structured) << (answered ? "" : answered.error().message);
    pid = (*answered->structured)["pid"].get<pid_t>();
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_NE(::kill(pid, 0), 0) << "the server was reaped";
  EXPECT_FALSE(std::filesystem::exists(dir_ / "logs")) << "no server died: its log is not kept";
}

TEST_F(McpClientTest, AServerThatCannotStartIsNamedWithTheReason) {
  auto registry = parse_tool_registry(
      "tools:\n  gone:\n    kind: mcp\n    command: [/nonexistent/mcp-server]\n    status: prod_ready\n    "
      "risk: low\n",
      "registry.yml");
  ASSERT_TRUE(registry);
  McpClient client(std::make_shared<const ToolRegistry>(std::move(*registry)), dir_ / "logs");
  auto tools = client.tools("gone", kListWait);
  ASSERT_FALSE(tools);
  EXPECT_EQ(tools.error().message,
            "MCP server 'gone': cannot run '/nonexistent/mcp-server': No such file or directory");
}

}  // namespace
}  // namespace orch
