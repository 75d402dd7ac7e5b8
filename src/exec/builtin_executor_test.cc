#include "exec/builtin_executor.h"

#include <gtest/gtest.h>

#include <string>

#include "exec/exec_testing.h"

namespace orch {
namespace {

using orch::testing::Reports;

AttemptSpec builtin_spec(const std::string& executor, nlohmann::ordered_json inputs) {
  AttemptSpec spec;
  spec.executor = executor;
  spec.inputs = std::move(inputs);
  return spec;
}

// Starts a builtin, checks it does not finish inside start(), then runs one turn.
AttemptOutcome run_builtin(BuiltinExecutor::Kind kind, nlohmann::ordered_json inputs) {
  EventLoop loop;
  BuiltinExecutor executor(kind);
  Reports reports;
  auto attempt = executor.start(builtin_spec("builtin", std::move(inputs)), loop, reports.callback());
  EXPECT_TRUE(attempt.has_value());
  EXPECT_FALSE(reports.any()) << "a builtin finished synchronously inside start()";
  EXPECT_FALSE(loop.idle());
  loop.run_once(std::chrono::milliseconds(1000));
  EXPECT_EQ(reports.outcomes.size(), 1u);
  EXPECT_TRUE(loop.idle());
  return reports.any() ? reports.only() : AttemptOutcome{};
}

TEST(BuiltinEcho, ResultIsTheTextInput) {
  auto outcome = run_builtin(BuiltinExecutor::Kind::Echo, {{"text", "hello\n"}, {"other", 1}});
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.result, "hello\n");  // as given: nothing trimmed
  EXPECT_EQ(outcome.message, "");
}

TEST(BuiltinEcho, NonStringTextIsCompactJson) {
  EXPECT_EQ(run_builtin(BuiltinExecutor::Kind::Echo, {{"text", 42}}).result, "42");
  nlohmann::ordered_json inputs;
  inputs["text"] = {{"b", 1}, {"a", {true, nullptr}}};
  EXPECT_EQ(run_builtin(BuiltinExecutor::Kind::Echo, inputs).result, R"({"b":1,"a":[true,null]})");
}

TEST(BuiltinEcho, MissingTextIsAnError) {
  auto outcome = run_builtin(BuiltinExecutor::Kind::Echo, nlohmann::ordered_json::object());
  EXPECT_EQ(outcome.ending, AttemptEnding::Error);
  EXPECT_NE(outcome.message.find("text"), std::string::npos);
}

TEST(BuiltinJson, ResultIsTheInputsAsCompactJsonInWrittenOrder) {
  nlohmann::ordered_json inputs;
  inputs["zeta"] = "z";
  inputs["alpha"] = {1, 2};
  inputs["nested"] = {{"k", "v"}};
  auto outcome = run_builtin(BuiltinExecutor::Kind::Json, inputs);
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.result, R"({"zeta":"z","alpha":[1,2],"nested":{"k":"v"}})");
  EXPECT_EQ(run_builtin(BuiltinExecutor::Kind::Json, nlohmann::ordered_json::object()).result, "{}");
}

TEST(BuiltinJson, InvalidUtf8BecomesReplacementCharactersNotAThrow) {
  auto outcome = run_builtin(BuiltinExecutor::Kind::Json, {{"raw", std::string("\xff\xfe")}});
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.result, "{\"raw\":\"\xef\xbf\xbd\xef\xbf\xbd\"}");
  // echo's text is passed through as bytes: it is not JSON.
  EXPECT_EQ(run_builtin(BuiltinExecutor::Kind::Echo, {{"text", std::string("\xff")}}).result, "\xff");
}

TEST(Builtin, CancelBeforeItsTurnReportsCancelled) {
  EventLoop loop;
  BuiltinExecutor echo(BuiltinExecutor::Kind::Echo);
  Reports reports;
  auto attempt = echo.start(builtin_spec("builtin:echo", {{"text", "x"}}), loop, reports.callback());
  ASSERT_TRUE(attempt);
  (*attempt)->cancel("stop");
  EXPECT_FALSE(reports.any());
  loop.run_once(std::chrono::milliseconds(100));
  ASSERT_EQ(reports.outcomes.size(), 1u);
  EXPECT_EQ(reports.only().ending, AttemptEnding::Cancelled);
  EXPECT_EQ(reports.only().message, "stop");
  (*attempt)->cancel("late");  // after done: harmless
  loop.run_once(std::chrono::milliseconds(1));
  EXPECT_EQ(reports.outcomes.size(), 1u);
}

TEST(Builtin, DestroyedBeforeItsTurnReportsNothing) {
  EventLoop loop;
  BuiltinExecutor echo(BuiltinExecutor::Kind::Echo);
  Reports reports;
  auto attempt = echo.start(builtin_spec("builtin:echo", {{"text", "x"}}), loop, reports.callback());
  ASSERT_TRUE(attempt);
  attempt->reset();
  loop.run_once(std::chrono::milliseconds(1));
  EXPECT_FALSE(reports.any());
}

TEST(Builtin, DoneMayDestroyTheAttempt) {
  EventLoop loop;
  BuiltinExecutor json(BuiltinExecutor::Kind::Json);
  std::unique_ptr<RunningAttempt> attempt;
  int calls = 0;
  auto started = json.start(builtin_spec("builtin:json", {{"a", 1}}), loop, [&](AttemptOutcome) {
    ++calls;
    attempt.reset();
  });
  ASSERT_TRUE(started);
  attempt = std::move(*started);
  loop.run_once(std::chrono::milliseconds(1));
  EXPECT_EQ(calls, 1);
}

Step builtin_step(const std::string& executor) {
  Step step;
  step.id = "b";
  step.executor = executor;
  step.loc = {"plan.yaml", 7};
  step.field_lines.set("inputs", 9);
  return step;
}

TEST(Builtin, CheckStep) {
  BuiltinExecutor echo(BuiltinExecutor::Kind::Echo);
  BuiltinExecutor json(BuiltinExecutor::Kind::Json);
  Diagnostics out;
  auto good = builtin_step("builtin:echo");
  good.inputs = {{"text", "hi"}};
  echo.check_step(good, out);
  json.check_step(builtin_step("builtin:json"), out);
  EXPECT_TRUE(out.empty());

  echo.check_step(builtin_step("builtin:echo"), out);  // no text
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].message.find("'text'"), std::string::npos);
  EXPECT_EQ(out[0].line, 9);
  EXPECT_EQ(out[0].step_id, "b");

  out.clear();
  auto with_run = builtin_step("builtin:json");
  with_run.run = {"echo"};
  json.check_step(with_run, out);  // validate_plan reports 'run' on a builtin, once
  EXPECT_TRUE(out.empty()) << (out.empty() ? "" : out[0].message);
}

TEST(Builtin, NoDefaultPostcondition) {
  EXPECT_TRUE(BuiltinExecutor(BuiltinExecutor::Kind::Echo).default_post().empty());
  EXPECT_TRUE(BuiltinExecutor(BuiltinExecutor::Kind::Json).default_post().empty());
}

TEST(ExecutorRegistry, WithBuiltinsKnowsShellEchoAndJson) {
  auto registry = ExecutorRegistry::with_builtins();
  EXPECT_TRUE(registry.known("shell"));
  EXPECT_TRUE(registry.known("builtin:echo"));
  EXPECT_TRUE(registry.known("builtin:json"));
  EXPECT_FALSE(registry.known("builtin:nope"));
  EXPECT_FALSE(registry.known("llm"));
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"builtin:echo", "builtin:json", "shell"}));
  EXPECT_EQ(registry.find("shell")->default_post().size(), 1u);
  EXPECT_TRUE(registry.find("builtin:echo")->default_post().empty());
}

}  // namespace
}  // namespace orch
