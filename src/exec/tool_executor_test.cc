#include "exec/tool_executor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "exec/exec_testing.h"
#include "util/strings.h"

namespace orch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using orch::testing::read_file;
using orch::testing::Reports;
using orch::testing::run_until;
using orch::testing::shell_spec;
using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;


// A registry whose tools are scripts in `dir`: each sub-command of tool `t` runs
// `dir/NAME.sh` (its stdout and exit code are the test's), and `args` writes its
// argv to dir/argv.txt, one per line.
class ToolExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script("good", R"(printf '{"n": 3, "words": ["a"]}\n')");
    script("violates", R"(echo '{"n": "three"}')");
    script("not_json", R"(echo 'hello world')");
    script("silent", "exit 0");
    script("fails_with_json", R"(echo '{"n": 1}'; exit 4)");
    script("fails_silently", "echo oops >&2; exit 5");
    script("args", R"(for a do printf '%s\n' "$a"; done > argv.txt; echo '{"n": 0}')");
    script("slow", "sleep 30; echo '{\"n\": 1}'");
    std::string text = fmt::format(R"(tools:
  t:
    command: [/bin/sh]
    status: prod_ready
    safe_for_agents: true
    risk: low
    output_schema:
      type: object
      required: [n]
      properties: {{n: {{type: integer}}}}
    commands:
      good: {{argv: ["{0}/good.sh"]}}
      violates: {{argv: ["{0}/violates.sh"]}}
      not_json: {{argv: ["{0}/not_json.sh"]}}
      silent: {{argv: ["{0}/silent.sh"]}}
      fails_with_json: {{argv: ["{0}/fails_with_json.sh"]}}
      fails_silently: {{argv: ["{0}/fails_silently.sh"]}}
      slow: {{argv: ["{0}/slow.sh"]}}
      args:
        argv: ["{0}/args.sh"]
        args:
          - {{input: name, flag: --name}}
          - {{input: count, flag: -n, joined: true}}
          - {{input: files}}
        input_schema:
          type: object
          required: [files]
          properties:
            count: {{type: integer, minimum: 1}}
            files: {{type: array, items: {{type: string}}}}
  wip:
    command: [/bin/true]
    status: in_progress
    safe_for_agents: true
    risk: low
    commands: {{go: {{output_schema: {{}}}}}}
  later: {{command: [/bin/true], status: pending, safe_for_agents: true, risk: low, commands: {{go: {{output_schema: {{}}}}}}}}
  idea: {{command: [/bin/true], status: planned, safe_for_agents: true, risk: low, commands: {{go: {{output_schema: {{}}}}}}}}
  unsafe: {{command: [/bin/true], status: prod_ready, risk: low, commands: {{go: {{output_schema: {{}}}}}}}}
  mixed:
    command: [/bin/true]
    status: dry_run_validated
    safe_for_agents: true
    risk: medium
    output_schema: {{}}
    commands:
      read: {{}}
      write: {{risk: high}}
)",
                                   dir_.path().string());
    auto registry = parse_tool_registry(text, "registry.yml");
    ASSERT_TRUE(registry) << registry.error().message;
    executor_ = std::make_unique<ToolExecutor>(std::make_shared<ToolRegistry>(std::move(*registry)));
  }

  void script(const std::string& name, const std::string& body) {
    write_file(dir_ / (name + ".sh"), "#!/bin/sh\n" + body + "\n");
    fs::permissions(dir_ / (name + ".sh"), fs::perms::owner_all);
  }

  AttemptSpec spec(const std::string& tool, json inputs) {
    AttemptSpec s = shell_spec(dir_.path(), {});
    s.executor = "tool:" + tool;
    s.inputs = std::move(inputs);
    return s;
  }

  // Runs one attempt to its end.
  AttemptOutcome run(const AttemptSpec& s) {
    EventLoop loop;
    Reports reports;
    auto attempt = executor_->start(s, loop, reports.callback());
    EXPECT_TRUE(attempt.has_value());
    EXPECT_FALSE(reports.any()) << "done was called from inside start()";
    EXPECT_TRUE(run_until(loop, [&] { return reports.any(); }));
    loop.run_once(5ms);
    EXPECT_EQ(reports.outcomes.size(), 1u);
    return reports.any() ? reports.only() : AttemptOutcome{};
  }

  Step step(const std::string& tool, json inputs) {
    Step s;
    s.id = "s";
    s.executor = "tool:" + tool;
    s.inputs = nlohmann::ordered_json(inputs);
    s.loc = {"plan.yaml", 3};
    s.field_lines.set("inputs", 5);
    return s;
  }

  Diagnostics check(const Step& s) const {
    Diagnostics out;
    executor_->check_step(s, out);
    return out;
  }

  TempDir dir_;
  std::unique_ptr<ToolExecutor> executor_;
};

TEST_F(ToolExecutorTest, OutputThatKeepsTheContractSucceeds) {
  auto outcome = run(spec("t", {{"command", "good"}}));
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited) << outcome.message;
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.result, R"({"n": 3, "words": ["a"]})");
  EXPECT_EQ(outcome.message, "");
  EXPECT_EQ(read_file(dir_ / ".out/step.1.stdout"),
            "{\"n\": 3, \"words\": [\"a\"]}\n");  // logged like a shell step
}

TEST_F(ToolExecutorTest, AContractViolationFailsTheAttemptNamingThePath) {
  auto outcome = run(spec("t", {{"command", "violates"}}));
  EXPECT_EQ(outcome.ending, AttemptEnding::Error);
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_HAS(outcome.message, "tool 't' violates: its output violates the contract: /n:");
  EXPECT_HAS(outcome.message, "(value: \"three\")");
  EXPECT_EQ(outcome.result, R"({"n": "three"})") << "the result is kept, for the retry's previous_failure";
}

TEST_F(ToolExecutorTest, OutputThatIsNotJsonFailsTheAttempt) {
  auto outcome = run(spec("t", {{"command", "not_json"}}));
  EXPECT_EQ(outcome.ending, AttemptEnding::Error);
  EXPECT_HAS(outcome.message, "tool 't' not_json: its output is not JSON (");
  EXPECT_HAS(outcome.message, "it starts 'hello world'");
  auto silent = run(spec("t", {{"command", "silent"}}));
  EXPECT_EQ(silent.ending, AttemptEnding::Error);
  EXPECT_HAS(silent.message, "tool 't' silent: it printed nothing; its contract wants JSON");
}

TEST_F(ToolExecutorTest, ANonZeroExitIsLeftToThePostconditionsWhenTheOutputKeepsTheContract) {
  auto outcome = run(spec("t", {{"command", "fails_with_json"}}));
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited);
  EXPECT_EQ(outcome.exit_code, 4);
  EXPECT_EQ(outcome.message, "exited with code 4");
  ASSERT_EQ(executor_->default_post().size(), 1u);
  EXPECT_EQ(executor_->default_post()[0].kind, PostKind::ExitZero);

  auto silent = run(spec("t", {{"command", "fails_silently"}}));
  EXPECT_EQ(silent.ending, AttemptEnding::Error);
  EXPECT_EQ(silent.exit_code, 5);
  EXPECT_HAS(silent.message, "exited with code 5, and tool 't' fails_silently: it printed nothing");
  EXPECT_EQ(silent.output_tail, "oops\n");
}

TEST_F(ToolExecutorTest, EachValueIsOneArgvElementNeverShellParsed) {
  json inputs = {{"command", "args"},
                 {"name", "it's \"quoted\" $(touch pwned) `x` ; |"},
                 {"count", "3"},  // a rendered placeholder: text where an integer is wanted
                 {"files", {"a b", "*", "-rf"}}};
  auto outcome = run(spec("t", inputs));
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited) << outcome.message;
  EXPECT_EQ(read_file(dir_ / "argv.txt"),
            "--name\nit's \"quoted\" $(touch pwned) `x` ; |\n-n3\na b\n*\n-rf\n");
  EXPECT_FALSE(fs::exists(dir_ / "pwned"));

  AttemptSpec s = spec("t", inputs);
  EXPECT_EQ(
      executor_->describe(s),
      fmt::format("/bin/sh {}/args.sh --name 'it'\\''s \"quoted\" $(touch pwned) `x` ; |' -n3 'a b' '*' -rf\n"
                  "inputs: {}",
                  shell_quote(dir_.path().string()), nlohmann::ordered_json(inputs).dump()));
}

TEST_F(ToolExecutorTest, InputsThatDoNotFitEndTheAttemptBeforeAnythingRuns) {
  auto outcome = run(spec("t", {{"command", "args"}, {"files", {"x"}}, {"count", 0}}));
  EXPECT_EQ(outcome.ending, AttemptEnding::Error);
  EXPECT_HAS(outcome.message, "inputs do not match the argument schema of tool 't' args: /count:");
  EXPECT_FALSE(fs::exists(dir_ / "argv.txt"));
  auto unknown = run(spec("nope", {{"command", "x"}}));
  EXPECT_EQ(unknown.ending, AttemptEnding::Error);
  EXPECT_HAS(unknown.message, "no tool 'nope' in the registry registry.yml");
  EXPECT_HAS(executor_->describe(spec("nope", {{"command", "x"}})), "tool:nope cannot run: no tool 'nope'");

  // Cancelled before its turn: Cancelled, once.
  EventLoop loop;
  Reports reports;
  auto attempt = executor_->start(spec("t", {{"command", "nope"}}), loop, reports.callback());
  ASSERT_TRUE(attempt);
  (*attempt)->cancel("stop");
  EXPECT_TRUE(run_until(loop, [&] { return reports.any(); }));
  loop.run_once(5ms);
  ASSERT_EQ(reports.outcomes.size(), 1u);
  EXPECT_EQ(reports.only().ending, AttemptEnding::Cancelled);
  EXPECT_EQ(reports.only().message, "stop");
}

TEST_F(ToolExecutorTest, TimeoutsAndCancelWorkAsForShellSteps) {
  AttemptSpec s = spec("t", {{"command", "slow"}});
  s.timeout = 200ms;
  s.kill_grace = 100ms;
  auto outcome = run(s);
  EXPECT_EQ(outcome.ending, AttemptEnding::TimedOut);
  EXPECT_EQ(outcome.message, "timed out after 200ms");
}

TEST_F(ToolExecutorTest, ValidationNamesUnknownToolsSubCommandsAndArguments) {
  auto only = [](const Diagnostics& d) {
    EXPECT_EQ(d.size(), 1u);
    return d.empty() ? Diagnostic{} : d[0];
  };
  EXPECT_TRUE(check(step("t", {{"command", "args"}, {"files", {"a"}}})).empty());
  Diagnostic tool = only(check(step("tt", {{"command", "good"}})));
  EXPECT_EQ(tool.message, "no tool 'tt' in the registry registry.yml (did you mean 't'?)");
  EXPECT_EQ(tool.line, 3);
  EXPECT_EQ(tool.step_id, "s");
  Diagnostic command = only(check(step("t", {{"command", "goood"}})));
  EXPECT_HAS(command.message, "tool 't' has no sub-command 'goood' (did you mean 'good'?)");
  EXPECT_EQ(command.line, 5);
  EXPECT_HAS(only(check(step("t", {{"command", "args"}, {"files", "a"}}))).message, "/files:");
  EXPECT_HAS(only(check(step("t", {{"command", "args"}}))).message, "required");

  // With a placeholder, values wait for the attempt; names are checked now.
  EXPECT_TRUE(check(step("t", {{"command", "args"}, {"count", "${steps.a.result}"}})).empty())
      << "files is missing, but the schema is checked when the values are known";
  EXPECT_HAS(only(check(step("t", {{"command", "args"}, {"cuont", "${steps.a.result}"}}))).message,
             "input 'cuont' is not an argument of tool 't' args (did you mean 'count'?)");
  EXPECT_HAS(only(check(step("t", {{"command", "agrs"}, {"count", "${steps.a.result}"}}))).message,
             "no sub-command 'agrs'");
  EXPECT_TRUE(check(step("t", {{"command", "${steps.a.result}"}, {"whatever", 1}})).empty());
  // "$${" is an escape, not a placeholder: the value is literal and checked now.
  EXPECT_HAS(only(check(step("t", {{"command", "args"}, {"files", "$${x}"}}))).message, "/files:");

  ToolExecutor without(std::make_shared<ToolRegistry>());
  Diagnostics none;
  without.check_step(step("t", {{"command", "good"}}), none);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_HAS(none[0].message,
             "no tool registry is loaded (pass --registry FILE, or put one at .orch/registry.yml");
}

TEST_F(ToolExecutorTest, RiskIsRaisedByTheRegistryNeverLowered) {
  auto risk = [&](const std::string& tool, json inputs, std::optional<RiskLevel> declared = std::nullopt) {
    Step s = step(tool, std::move(inputs));
    s.risk = declared;
    return executor_->risk(s);
  };
  EXPECT_EQ(risk("t", {{"command", "good"}}), RiskLevel::Low);
  EXPECT_EQ(risk("t", {{"command", "good"}}, RiskLevel::High), RiskLevel::High);
  EXPECT_EQ(risk("missing", {{"command", "go"}}), RiskLevel::Critical);
  EXPECT_EQ(risk("later", {{"command", "go"}}), RiskLevel::Critical) << "pending";
  EXPECT_EQ(risk("idea", {{"command", "go"}}), RiskLevel::Critical) << "planned";
  EXPECT_EQ(risk("wip", {{"command", "go"}}), RiskLevel::Medium) << "in_progress";
  EXPECT_EQ(risk("unsafe", {{"command", "go"}}), RiskLevel::High) << "not safe_for_agents";
  EXPECT_EQ(risk("mixed", {{"command", "read"}}), RiskLevel::Medium) << "the tool's own level";
  EXPECT_EQ(risk("mixed", {{"command", "write"}}), RiskLevel::High) << "the sub-command raises it";
  EXPECT_EQ(risk("mixed", {{"command", "${steps.a.result}"}}), RiskLevel::High)
      << "unknown yet: the riskiest";
  EXPECT_EQ(risk("mixed", {{"command", "read"}}, RiskLevel::Critical), RiskLevel::Critical);
  ToolExecutor without(nullptr);
  EXPECT_EQ(without.risk(step("t", {{"command", "good"}})), RiskLevel::Critical);
}

// What the refusal or the approval question says when the registry raised the risk.
TEST_F(ToolExecutorTest, TheRiskReasonNamesWhatTheRegistrySays) {
  auto reason = [&](const std::string& tool) {
    return executor_->risk_reason(step(tool, {{"command", "go"}}));
  };
  EXPECT_EQ(reason("missing"), "tool 'missing' is not in the registry");
  EXPECT_EQ(reason("later"), "tool 'later' has status pending: it is not ready to run");
  EXPECT_EQ(reason("idea"), "tool 'idea' has status planned: it is not ready to run");
  EXPECT_EQ(reason("unsafe"), "") << "high, not critical";
  EXPECT_EQ(reason("wip"), "") << "medium, not critical";
  EXPECT_EQ(reason("t"), "");
}

TEST(ToolExecutorExample, TheExampleFilestatsToolRuns) {
  auto registry = load_tool_registry(source_dir() / "examples" / "registry.yml");
  ASSERT_TRUE(registry) << registry.error().message;
  ToolExecutor executor(std::make_shared<ToolRegistry>(std::move(*registry)));
  TempDir dir;
  write_file(dir / "a.txt", "one two\nthree\n");
  write_file(dir / "-b.txt", "four\n");  // after "--", a file, not an option
  AttemptSpec spec = shell_spec(dir.path(), {});
  spec.executor = "tool:filestats";
  spec.inputs = {{"command", "count"}, {"files", {"a.txt", "-b.txt"}}};
  EventLoop loop;
  Reports reports;
  auto attempt = executor.start(spec, loop, reports.callback());
  ASSERT_TRUE(attempt);
  ASSERT_TRUE(run_until(loop, [&] { return reports.any(); }));
  const AttemptOutcome& outcome = reports.only();
  EXPECT_EQ(outcome.ending, AttemptEnding::Exited) << outcome.message;
  EXPECT_EQ(json::parse(outcome.result), json::parse(R"({"files":2,"lines":3,"words":4,"bytes":19})"));
}

TEST(ToolOutputContract, AppliesOnlyToAttemptsThatRanToTheirEnd) {
  auto contract = JsonSchema::parse(json{{"type", "object"}});
  ASSERT_TRUE(contract);
  AttemptOutcome timed_out;
  timed_out.ending = AttemptEnding::TimedOut;
  timed_out.message = "timed out after 1s";
  apply_output_contract(timed_out, *contract, "tool 'x' y", true);
  EXPECT_EQ(timed_out.ending, AttemptEnding::TimedOut);
  EXPECT_EQ(timed_out.message, "timed out after 1s");

  AttemptOutcome cut;
  cut.ending = AttemptEnding::Exited;
  cut.exit_code = 0;
  cut.result = "{}";
  apply_output_contract(cut, *contract, "tool 'x' y", false);
  EXPECT_EQ(cut.ending, AttemptEnding::Error);
  EXPECT_HAS(cut.message, "tool 'x' y: its output was cut at max_output");

  AttemptOutcome many;
  many.ending = AttemptEnding::Exited;
  many.exit_code = 0;
  many.result = "[1,2,3,4,5,6,7]";
  auto strings = JsonSchema::parse(json{{"type", "array"}, {"items", {{"type", "string"}}}});
  ASSERT_TRUE(strings);
  apply_output_contract(many, *strings, "tool 'x' y", true);
  EXPECT_EQ(many.ending, AttemptEnding::Error);
  EXPECT_HAS(many.message, "/0: ");
  EXPECT_HAS(many.message, "; and 2 more");
}

}  // namespace
}  // namespace orch
