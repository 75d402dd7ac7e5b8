#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orch/plan_loader.h"
#include "testing/testing.h"

namespace orch {
namespace {

LoadResult parse_ok(const std::string& text, const std::string& file = "plan.yaml") {
  LoadResult r = parse_plan(text, file);
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.to_string();
  return r;
}

// The diagnostics of `text`, as strings.
std::vector<std::string> problems(const std::string& text, const std::string& file = "plan.yaml") {
  std::vector<std::string> out;
  for (const auto& d : parse_plan(text, file).diagnostics) out.push_back(d.to_string());
  return out;
}

::testing::AssertionResult has_problem(const std::vector<std::string>& all, const std::string& fragment) {
  for (const auto& p : all)
    if (p.find(fragment) != std::string::npos) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "no diagnostic contains \"" << fragment << "\"; got:";
  for (const auto& p : all) r << "\n  " << p;
  return r;
}

const char* kFullYaml = R"(name: full
concurrency: 4
on_failure: continue
budget:
  tokens: 1000
  cost_usd: 2.5
  wall: 1h
  attempts: 10
defaults:
  attempts: 2
  timeout: 30s
  retry_delay: 250ms
  max_output: 1MiB
  kill_grace: 5s
steps:
  - id: fetch
    goal: Fetch the data
    run: [curl, -sS, "${inputs.url}"]
    inputs:
      url: https://example.com
      count: 3
      ratio: 0.5
      flag: true
      nothing: null
      quoted: "42"
      nested: {b: 1, a: [x, 2]}
    env:
      LANG: C
      PORT: 8080
    timeout: 10s
    attempts: 3
    retry_delay: 1s
    max_output: 64KiB
    budget: {tokens: 50, cost_usd: 0.1, wall: 2m, attempts: 2}
    post:
      - exit_zero
      - result_contains: "<html"
      - {kind: result_matches, pattern: "^<"}
      - file_exists: out.txt
      - file_contains: {path: out.txt, text: done}
      - shell_zero: "test -s out.txt"
      - kind: shell_zero
        cmd: "true"
        timeout: 5s
      - result_json: {type: object}
      - result_json: schema.json
      - kind: result_json
        schema: {type: array}
    writes: [out.txt, logs/]
    output: out.txt
  - id: report
    deps: [fetch]
    executor: builtin:echo
    inputs:
      text: "${steps.fetch.result}"
)";

TEST(ParsePlan, ReadsEveryField) {
  LoadResult r = parse_ok(kFullYaml);
  const Plan& p = r.plan;
  EXPECT_EQ(p.name, "full");
  EXPECT_EQ(p.source_path, "plan.yaml");
  EXPECT_EQ(p.concurrency, 4);
  EXPECT_EQ(p.on_failure, OnFailure::Continue);
  EXPECT_EQ(p.budget.tokens, 1000);
  EXPECT_EQ(p.budget.cost_usd, 2.5);
  EXPECT_EQ(p.budget.wall, std::chrono::hours(1));
  EXPECT_EQ(p.budget.attempts, 10);
  EXPECT_EQ(p.defaults.attempts, 2);
  EXPECT_EQ(p.defaults.timeout, std::chrono::seconds(30));
  EXPECT_EQ(p.defaults.retry_delay, Millis(250));
  EXPECT_EQ(p.defaults.max_output, 1024 * 1024);
  EXPECT_EQ(p.defaults.kill_grace, std::chrono::seconds(5));
  EXPECT_FALSE(p.from_stepspec);
  ASSERT_EQ(p.steps.size(), 2u);

  const Step& s = p.steps[0];
  EXPECT_EQ(s.id, "fetch");
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.goal, "Fetch the data");
  EXPECT_EQ(s.executor, "shell");
  EXPECT_EQ(s.run, (std::vector<std::string>{"curl", "-sS", "${inputs.url}"}));
  EXPECT_FALSE(s.sh);
  EXPECT_EQ(s.inputs.dump(),
            R"({"url":"https://example.com","count":3,"ratio":0.5,"flag":true,"nothing":null,"quoted":"42",)"
            R"("nested":{"b":1,"a":["x",2]}})");
  EXPECT_EQ(s.env, (std::map<std::string, std::string>{{"LANG", "C"}, {"PORT", "8080"}}));
  EXPECT_EQ(s.timeout, std::chrono::seconds(10));
  EXPECT_EQ(s.attempts, 3);
  EXPECT_EQ(s.retry_delay, std::chrono::seconds(1));
  EXPECT_EQ(s.max_output, 64 * 1024);
  EXPECT_EQ(s.budget.tokens, 50);
  EXPECT_EQ(s.budget.cost_usd, 0.1);
  EXPECT_EQ(s.budget.wall, std::chrono::minutes(2));
  EXPECT_EQ(s.budget.attempts, 2);
  EXPECT_EQ(s.writes, (std::vector<std::string>{"out.txt", "logs/"}));
  EXPECT_EQ(s.output, "out.txt");

  ASSERT_EQ(s.post.size(), 10u);
  EXPECT_EQ(s.post[0].kind, PostKind::ExitZero);
  EXPECT_EQ(s.post[1].kind, PostKind::ResultContains);
  EXPECT_EQ(s.post[1].text, "<html");
  EXPECT_EQ(s.post[2].kind, PostKind::ResultMatches);
  EXPECT_EQ(s.post[2].pattern, "^<");
  EXPECT_EQ(s.post[3].kind, PostKind::FileExists);
  EXPECT_EQ(s.post[3].path, "out.txt");
  EXPECT_EQ(s.post[4].kind, PostKind::FileContains);
  EXPECT_EQ(s.post[4].path, "out.txt");
  EXPECT_EQ(s.post[4].text, "done");
  EXPECT_EQ(s.post[5].kind, PostKind::ShellZero);
  EXPECT_EQ(s.post[5].cmd, "test -s out.txt");
  EXPECT_EQ(s.post[6].cmd, "true");
  EXPECT_EQ(s.post[6].timeout, std::chrono::seconds(5));
  EXPECT_EQ(s.post[7].kind, PostKind::ResultJson);
  ASSERT_TRUE(s.post[7].schema);
  EXPECT_EQ(s.post[7].schema->dump(), R"({"type":"object"})");
  EXPECT_EQ(s.post[8].schema_path, "schema.json");
  EXPECT_FALSE(s.post[8].schema);
  EXPECT_EQ(s.post[9].schema->dump(), R"({"type":"array"})");
  EXPECT_EQ(s.post[1].loc.line, 37);
  EXPECT_EQ(s.post[1].loc.file, "plan.yaml");

  const Step& t = p.steps[1];
  EXPECT_EQ(t.index, 1);
  EXPECT_EQ(t.deps, std::vector<std::string>{"fetch"});
  EXPECT_EQ(t.executor, "builtin:echo");
  EXPECT_EQ(t.inputs["text"], "${steps.fetch.result}");
}

TEST(ParsePlan, RecordsLines) {
  LoadResult r = parse_ok(kFullYaml);
  const Plan& p = r.plan;
  EXPECT_EQ(p.field_lines.line("concurrency"), 2);
  EXPECT_EQ(p.field_lines.line("budget.tokens"), 5);
  EXPECT_EQ(p.field_lines.line("defaults.attempts"), 10);
  EXPECT_EQ(p.field_lines.line("steps"), 15);
  const Step& s = p.steps[0];
  EXPECT_EQ(s.loc.line, 16);
  EXPECT_EQ(s.loc.file, "plan.yaml");
  EXPECT_EQ(s.field_lines.line("id"), 16);
  EXPECT_EQ(s.field_lines.line("run"), 18);
  EXPECT_FALSE(s.field_lines.contains("run.2")) << "items on their key's line get no entry of their own";
  EXPECT_EQ(s.field_lines.line("inputs"), 19);
  EXPECT_EQ(s.field_lines.line("inputs.count"), 21);
  EXPECT_FALSE(s.field_lines.contains("budget.wall.0"));
  EXPECT_EQ(s.field_lines.line("env.PORT"), 29);
  EXPECT_EQ(s.field_lines.line("budget.wall"), 34);
  EXPECT_EQ(s.field_lines.line("writes"), 49);
  EXPECT_EQ(p.steps[1].loc.line, 51);
  EXPECT_FALSE(p.steps[1].field_lines.contains("deps.0"));
  LoadResult multi = parse_ok("steps:\n  - id: a\n    run:\n      - echo\n      - hi\n");
  EXPECT_EQ(multi.plan.steps[0].field_lines.line("run.1"), 5);
}

TEST(ParsePlan, Defaults) {
  LoadResult r = parse_ok("steps:\n  - id: a\n    sh: echo hi\n");
  const Plan& p = r.plan;
  EXPECT_FALSE(p.concurrency);
  EXPECT_EQ(p.on_failure, OnFailure::Abort);
  EXPECT_TRUE(p.budget.empty());
  EXPECT_EQ(p.defaults.attempts, 1);
  EXPECT_FALSE(p.defaults.timeout);
  EXPECT_EQ(p.defaults.retry_delay, Millis(0));
  EXPECT_EQ(p.defaults.max_output, 16 * 1024 * 1024);
  EXPECT_EQ(p.defaults.kill_grace, Millis(2000));
  const Step& s = p.steps[0];
  EXPECT_EQ(s.executor, "shell");
  EXPECT_EQ(s.sh, "echo hi");
  EXPECT_TRUE(s.inputs.is_object());
  EXPECT_TRUE(s.inputs.empty());
  EXPECT_TRUE(s.post.empty());
  EXPECT_FALSE(s.attempts);
  EXPECT_FALSE(s.timeout);
}

TEST(ParsePlan, LenientShapes) {
  // deps and writes may be one string; post may be one item.
  LoadResult r = parse_ok(
      "steps:\n  - id: a\n    sh: x\n  - id: b\n    deps: a\n    writes: f.txt\n    sh: y\n"
      "    post: result_nonempty\n  - id: c\n    sh: z\n    post: {result_contains: ok}\n");
  EXPECT_EQ(r.plan.steps[1].deps, std::vector<std::string>{"a"});
  EXPECT_EQ(r.plan.steps[1].writes, std::vector<std::string>{"f.txt"});
  ASSERT_EQ(r.plan.steps[1].post.size(), 1u);
  EXPECT_EQ(r.plan.steps[1].post[0].kind, PostKind::ResultNonempty);
  ASSERT_EQ(r.plan.steps[2].post.size(), 1u);
  EXPECT_EQ(r.plan.steps[2].post[0].text, "ok");
}

TEST(ParsePlan, JsonAndYamlGiveTheSamePlan) {
  const char* yaml = R"(name: same
concurrency: 2
steps:
  - id: a
    run: [echo, "hi there"]
    inputs: {n: 1, s: "x", l: [1, "2"], o: {z: 1, y: 2}}
    timeout: 5s
    post:
      - result_contains: hi
  - id: b
    deps: [a]
    sh: "echo ${steps.a.result}"
    env: {K: v}
)";
  const char* json = R"({
  "name": "same",
  "concurrency": 2,
  "steps": [
    {
      "id": "a",
      "run": ["echo", "hi there"],
      "inputs": {"n": 1, "s": "x", "l": [1, "2"], "o": {"z": 1, "y": 2}},
      "timeout": "5s",
      "post": [{"result_contains": "hi"}]
    },
    {
      "id": "b",
      "deps": ["a"],
      "sh": "echo ${steps.a.result}",
      "env": {"K": "v"}
    }
  ]
})";
  LoadResult y = parse_ok(yaml, "p.yaml");
  LoadResult j = parse_ok(json, "p.json");
  ASSERT_EQ(y.plan.steps.size(), j.plan.steps.size());
  EXPECT_EQ(y.plan.name, j.plan.name);
  EXPECT_EQ(y.plan.concurrency, j.plan.concurrency);
  for (std::size_t i = 0; i < y.plan.steps.size(); ++i) {
    const Step& a = y.plan.steps[i];
    const Step& b = j.plan.steps[i];
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.deps, b.deps);
    EXPECT_EQ(a.run, b.run);
    EXPECT_EQ(a.sh, b.sh);
    EXPECT_EQ(a.inputs.dump(), b.inputs.dump());
    EXPECT_EQ(a.env, b.env);
    EXPECT_EQ(a.timeout, b.timeout);
    ASSERT_EQ(a.post.size(), b.post.size());
    for (std::size_t k = 0; k < a.post.size(); ++k) {
      EXPECT_EQ(a.post[k].kind, b.post[k].kind);
      EXPECT_EQ(a.post[k].text, b.post[k].text);
    }
  }
  // JSON lines are real lines too.
  EXPECT_EQ(j.plan.steps[0].loc.line, 5);
  EXPECT_EQ(j.plan.steps[0].field_lines.line("timeout"), 9);
  EXPECT_EQ(j.plan.steps[1].field_lines.line("sh"), 15);
  EXPECT_EQ(j.plan.steps[0].post[0].loc.line, 10);
}

TEST(ParsePlan, JsonErrorsCarryLines) {
  std::vector<std::string> p = problems(R"({
  "steps": [
    {
      "id": "a",
      "sh": "x",
      "atempts": 3,
      "timeout": "5x"
    }
  ]
})",
                                        "p.json");
  EXPECT_TRUE(has_problem(p, "p.json:6: step 'a': unknown key 'atempts' (did you mean 'attempts'?)"));
  EXPECT_TRUE(has_problem(p, "p.json:7: step 'a': bad duration '5x' for 'timeout': unknown unit 'x'"));
  auto syntax = problems("{\n  \"steps\": [\n    {\"id\": \"a\",}\n  ]\n", "p.json");
  EXPECT_TRUE(has_problem(syntax, "p.json:3: JSON syntax error: expected a key in double quotes, found '}'"));
  // Not named .json: may be YAML flow style, which the YAML reader reads.
  LoadResult flow = parse_plan("{steps: [{id: a, sh: x}]}", "flow.yaml");
  EXPECT_TRUE(flow.diagnostics.empty());
  EXPECT_EQ(flow.plan.steps.at(0).sh, "x");
  auto broken = problems("{steps: [{id: a, sh: x}\n", "broken.yaml");
  EXPECT_TRUE(has_problem(broken, "broken.yaml:"));
  EXPECT_TRUE(has_problem(broken, "YAML syntax error"));
}

TEST(ParsePlan, UnknownKeysWithDidYouMean) {
  auto p = problems("nme: x\nsteps:\n  - id: a\n    dep: [b]\n    sh: x\n    bogus_key_here: 1\n");
  EXPECT_TRUE(has_problem(p, "plan.yaml:1: unknown key 'nme' (did you mean 'name'?)"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:4: step 'a': unknown key 'dep' (did you mean 'deps'?)"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:6: step 'a': unknown key 'bogus_key_here'"));
  auto budget = problems("budget: {token: 5}\nsteps: [{id: a, sh: x, budget: {cost: 1}}]\n");
  EXPECT_TRUE(has_problem(budget, "unknown key 'token' (did you mean 'tokens'?)"));
  EXPECT_TRUE(has_problem(budget, "step 'a': unknown key 'cost'"));
  auto defaults = problems("defaults: {timout: 5s}\nsteps: [{id: a, sh: x}]\n");
  EXPECT_TRUE(has_problem(defaults, "plan.yaml:1: unknown key 'timout' (did you mean 'timeout'?)"));
}

TEST(ParsePlan, KillGraceOnAStepSaysWhereItGoes) {
  EXPECT_TRUE(has_problem(problems("steps:\n  - {id: a, run: [x], kill_grace: 1s}\n"),
                          "plan.yaml:2: step 'a': unknown key 'kill_grace' (it is set for the whole plan, "
                          "under 'defaults:')"));
}

TEST(ParsePlan, DuplicateKeys) {
  auto p = problems("steps:\n  - id: a\n    sh: x\n    sh: y\nname: n\nname: m\n");
  EXPECT_TRUE(has_problem(p, "plan.yaml:4: step 'a': duplicate key 'sh' (first at line 3)"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:6: duplicate key 'name' (first at line 5)"));
  auto inputs = problems("steps:\n  - id: a\n    sh: x\n    inputs:\n      k: 1\n      k: 2\n");
  EXPECT_TRUE(has_problem(inputs, "plan.yaml:6: step 'a': duplicate input 'k' (first at line 5)"));
  LoadResult r = parse_plan("steps:\n  - id: a\n    sh: first\n    sh: second\n", "p");
  EXPECT_EQ(r.plan.steps[0].sh, "first");
}

TEST(ParsePlan, WrongTypes) {
  auto p = problems(R"(concurrency: lots
on_failure: stop
steps:
  - id: a
    attempts: three
    run: echo hi
    deps: {a: 1}
    inputs: [1, 2]
    env: {A: [1]}
    goal: [x]
    budget: {tokens: 1.5, cost_usd: cheap}
    max_output: 12XB
)");
  EXPECT_TRUE(has_problem(p, "plan.yaml:1: 'concurrency' must be an integer, got 'lots'"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:2: 'on_failure' must be 'abort' or 'continue', got 'stop'"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:5: step 'a': 'attempts' must be an integer, got 'three'"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:6: step 'a': 'run' must be a list of arguments"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:7: step 'a': 'deps' must be a list, got a mapping"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:8: step 'a': 'inputs' must be a mapping, got a list"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:9: step 'a': environment variable 'A' must be a string, got a list"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:10: step 'a': 'goal' must be a string, got a list"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:11: step 'a': 'budget.tokens' must be an integer, got '1.5'"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:11: step 'a': 'budget.cost_usd' must be a number, got 'cheap'"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:12: step 'a': bad size '12XB' for 'max_output'"));
  auto steps = problems("steps: {id: a}\n");
  EXPECT_TRUE(has_problem(steps, "plan.yaml:1: 'steps' must be a list of steps, got a mapping"));
  auto item = problems("steps:\n  - just a string\n");
  EXPECT_TRUE(has_problem(item, "plan.yaml:2: each step must be a mapping"));
  auto big = problems("steps:\n  - id: a\n    sh: x\n    attempts: 99999999999\n");
  EXPECT_TRUE(has_problem(big, "'attempts' is out of range"));
}

TEST(ParsePlan, BadDurations) {
  auto p = problems(
      "defaults: {timeout: soon}\nsteps:\n  - id: a\n    sh: x\n    timeout: -5s\n    retry_delay: 1y\n");
  EXPECT_TRUE(has_problem(p, "plan.yaml:1: bad duration 'soon' for 'defaults.timeout'"));
  EXPECT_TRUE(has_problem(
      p, "plan.yaml:5: step 'a': bad duration '-5s' for 'timeout': a duration cannot be negative"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:6: step 'a': bad duration '1y' for 'retry_delay': unknown unit 'y'"));
}

TEST(ParsePlan, Postconditions) {
  auto p = problems(R"(steps:
  - id: a
    sh: x
    post:
      - exit_zer
      - result_contain: x
      - {kind: file_exist, path: x}
      - {knd: file_exists, path: x}
      - {path: x, text: y}
      - file_contains: out.txt
      - exit_zero: yes
      - {kind: result_json, schema: "s.json"}
      - {kind: shell_zero, cmd: x, timeout: forever}
      - [a, b]
)");
  EXPECT_TRUE(has_problem(
      p, "plan.yaml:5: step 'a': unknown postcondition kind 'exit_zer' (did you mean 'exit_zero'?)"));
  EXPECT_TRUE(has_problem(p,
                          "plan.yaml:6: step 'a': unknown postcondition kind 'result_contain' (did you mean "
                          "'result_contains'?)"));
  EXPECT_TRUE(has_problem(
      p, "plan.yaml:7: step 'a': unknown postcondition kind 'file_exist' (did you mean 'file_exists'?)"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:8: step 'a': unknown key 'knd' (did you mean 'kind'?)"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:9: step 'a': postcondition needs 'kind:'"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:10: step 'a': file_contains needs 'path' and 'text'"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:11: step 'a': 'exit_zero' takes no value"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:12: step 'a': 'schema' must be an inline JSON Schema"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:13: step 'a': bad duration 'forever' for 'timeout'"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:14: step 'a': a postcondition must be a kind"));
}

TEST(ParsePlan, SyntaxErrorsHaveLines) {
  LoadResult r = parse_plan("steps:\n  - id: a\n    run: [echo, hi\n  - id: b\n", "bad.yaml");
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].file, "bad.yaml");
  EXPECT_GT(r.diagnostics[0].line, 0);
  EXPECT_NE(r.diagnostics[0].message.find("YAML syntax error"), std::string::npos);
  LoadResult tabs = parse_plan("steps:\n\t- id: a\n", "tabs.yaml");
  ASSERT_FALSE(tabs.diagnostics.empty());
  EXPECT_EQ(tabs.diagnostics[0].line, 2);
}

// A misused merge key is one mistake among the others, not a syntax error that
// hides them.
TEST(ParsePlan, AMisusedMergeKeyIsListedWithTheOtherProblems) {
  auto p =
      problems("steps:\n  - id: a\n    <<: date\n    sh: date\n  - id: b\n    atempts: 2\n    sh: date\n");
  EXPECT_TRUE(has_problem(p, "plan.yaml:3: a merge key '<<' takes a mapping or a list of mappings"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:6: step 'b': unknown key 'atempts'"));
  for (const auto& line : p) EXPECT_EQ(line.find("syntax error"), std::string::npos) << line;
  EXPECT_EQ(p.size(), 2u) << ::testing::PrintToString(p);
}

TEST(ParsePlan, WrongTopLevel) {
  auto p = problems("just text\n");
  EXPECT_TRUE(has_problem(p, "plan.yaml:1: a plan must be a mapping with 'steps:'"));
  LoadResult empty = parse_plan("", "e.yaml");
  EXPECT_TRUE(empty.diagnostics.empty());
  EXPECT_TRUE(empty.plan.steps.empty());
}

TEST(ParsePlan, InputsKeepYamlTypes) {
  LoadResult r = parse_ok(
      "steps:\n  - id: a\n    executor: builtin:json\n    inputs:\n      a: yes\n      b: 0x10\n"
      "      c: ~\n      d: '1'\n      e: 1e3\n      f: 'multi\n        line'\n      g: !!str 5\n");
  const auto& in = r.plan.steps[0].inputs;
  EXPECT_EQ(in["a"], "yes");  // YAML 1.2: yes is a string
  EXPECT_EQ(in["b"], 16);
  EXPECT_TRUE(in["c"].is_null());
  EXPECT_EQ(in["d"], "1");
  EXPECT_EQ(in["e"], 1000.0);
  EXPECT_EQ(in["f"], "multi line");
  EXPECT_EQ(in["g"], "5");
}

TEST(ParsePlan, InputNumbersThatJsonWouldChangeAreRefusedWhereTheyAre) {
  const std::string yaml =
      "steps:\n  - id: a\n    executor: builtin:json\n    inputs:\n"
      "      big: 123456789012345678901234567890\n"
      "      quoted: '123456789012345678901234567890'\n"
      "      fine: [0.1, 18446744073709551615, 1e22]\n"
      "      nested: {deep: [1e999, .nan], pi: 3.14159265358979323846}\n"
      "    post:\n      - result_json: {type: object, properties: {n: {maximum: -.inf}}}\n";
  auto p = problems(yaml);
  EXPECT_EQ(p.size(), 5u) << ::testing::PrintToString(p);
  EXPECT_TRUE(has_problem(
      p,
      "plan.yaml:5: step 'a': '123456789012345678901234567890' has more digits than a number keeps (it "
      "would be read as 1.2345678901234568e+29): quote it to keep it as written"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:8: step 'a': '1e999' is too large for a number"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:8: step 'a': '.nan' is YAML's not-a-number"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:8: step 'a': '3.14159265358979323846' has more digits"));
  EXPECT_TRUE(has_problem(p, "plan.yaml:10: step 'a': '-.inf' is YAML's infinity"));
  // JSON says the same of its numbers (its reader refuses 1e999 itself).
  auto j = problems(
      R"({"steps": [{"id": "a", "executor": "builtin:json",
  "inputs": {"big": 123456789012345678901234567890, "ok": 2.5}}]})",
      "plan.json");
  ASSERT_EQ(j.size(), 1u) << ::testing::PrintToString(j);
  EXPECT_TRUE(has_problem(j, "plan.json:2: step 'a': '123456789012345678901234567890' has more digits"));
}

TEST(ParsePlan, Anchors) {
  LoadResult r = parse_ok(
      "x-common: &common\n  timeout: 5s\nsteps:\n  - id: a\n    sh: x\n    env: &env {A: b}\n  - id: b\n    "
      "sh: y\n"
      "    env: *env\n");
  EXPECT_EQ(r.plan.steps[1].env.at("A"), "b");
}

// `result_json: {}` is the empty inline schema (any JSON), `true`/`false` the
// boolean schemas, as JSON Schema has them and the plan schema allows; a string
// is a schema_path, even "true" quoted.
TEST(ParsePlan, ResultJsonShorthandTakesTheEmptyAndBooleanSchemas) {
  auto r = parse_plan(R"(steps:
  - id: a
    sh: x
    post: [{result_json: {}}, {result_json: true}, {result_json: false}, {result_json: "true"}]
)",
                      "p.yaml");
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].to_string();
  const auto& post = r.plan.steps[0].post;
  ASSERT_EQ(post.size(), 4u);
  EXPECT_EQ(post[0].schema, nlohmann::json::object());
  EXPECT_EQ(post[1].schema, nlohmann::json(true));
  EXPECT_EQ(post[2].schema, nlohmann::json(false));
  EXPECT_FALSE(post[3].schema.has_value());
  EXPECT_EQ(post[3].schema_path, "true");
  // YAML 1.2 reads True, FALSE, ... as booleans too (an editor's plan schema does).
  auto spelled = parse_plan(R"(steps:
  - id: a
    sh: x
    post: [{result_json: True}, {kind: result_json, schema: FALSE}]
)",
                            "p.yaml");
  ASSERT_TRUE(spelled.diagnostics.empty()) << spelled.diagnostics[0].to_string();
  EXPECT_EQ(spelled.plan.steps[0].post[0].schema, nlohmann::json(true));
  EXPECT_EQ(spelled.plan.steps[0].post[1].schema, nlohmann::json(false));
}

// `2.0` is the integer 2 (JSON Schema, and so the plan schema, says so); `1.5` is not.
TEST(ParsePlan, AnIntegerMayBeWrittenWithAZeroFraction) {
  auto r = parse_plan(
      "concurrency: 2.0\ndefaults: {attempts: 3.00}\nsteps:\n  - {id: a, sh: x, attempts: 2.}\n", "p.yaml");
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].to_string();
  EXPECT_EQ(r.plan.concurrency, 2);
  EXPECT_EQ(r.plan.defaults.attempts, 3);
  EXPECT_EQ(r.plan.steps[0].attempts, 2);
  auto bad = parse_plan("steps:\n  - {id: a, sh: x, attempts: 1.5}\n", "p.yaml");
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(bad.diagnostics[0].message, "'attempts' must be an integer, got '1.5'");
}

// Any notation YAML 1.2 or JSON has for a number is read as that number: 1e3,
// 0x10 and 0o17 in YAML, 10e-1 in JSON. An integer field takes it if its value is one.
TEST(ParsePlan, NumbersInOtherNotationsAreReadAsTheirValues) {
  auto r = parse_plan(
      "concurrency: 0x4\ndefaults: {attempts: 0o3, timeout: 1e1, max_output: 1e3}\nsteps:\n"
      "  - {id: a, sh: x, attempts: 1e0, retry_delay: +2, max_output: 0x10}\n",
      "p.yaml");
  ASSERT_TRUE(r.diagnostics.empty()) << r.diagnostics[0].to_string();
  EXPECT_EQ(r.plan.concurrency, 4);
  EXPECT_EQ(r.plan.defaults.attempts, 3);
  EXPECT_EQ(r.plan.defaults.timeout, Millis(10000));
  EXPECT_EQ(r.plan.steps[0].attempts, 1);
  EXPECT_EQ(r.plan.steps[0].retry_delay, Millis(2000));
  EXPECT_EQ(r.plan.steps[0].max_output, 16);
  auto json =
      parse_plan(R"({"concurrency": 2e0, "steps": [{"id": "a", "sh": "x", "attempts": 10e-1}]})", "p.json");
  ASSERT_TRUE(json.diagnostics.empty()) << json.diagnostics[0].to_string();
  EXPECT_EQ(json.plan.concurrency, 2);
  EXPECT_EQ(json.plan.steps[0].attempts, 1);
  auto bad =
      parse_plan("steps:\n  - {id: a, sh: x, attempts: 1e30, timeout: 1e12, max_output: 2.5e0}\n", "p.yaml");
  ASSERT_EQ(bad.diagnostics.size(), 2u);
  EXPECT_EQ(bad.diagnostics[0].message, "'attempts' is out of range: '1e30'");
  EXPECT_EQ(bad.diagnostics[1].message,
            "bad duration '1e12' for 'timeout': too large (at most 87600h, ten years)");
}

TEST(LoadPlanFile, ReadsAndReportsMissing) {
  testing::TempDir dir;
  testing::write_file(dir / "p.yaml", "steps:\n  - id: a\n    sh: echo\n");
  auto r = load_plan_file((dir / "p.yaml").string());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->plan.source_path, (dir / "p.yaml").string());
  EXPECT_EQ(r->plan.steps.size(), 1u);
  auto missing = load_plan_file((dir / "nope.yaml").string());
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::NotFound);
  auto folder = load_plan_file(dir.path().string());
  ASSERT_FALSE(folder);
  EXPECT_EQ(folder.error().code, ErrorCode::InvalidInput);
}

// A FIFO with no writer is refused at once, saying so (opening it must not
// block, and "plan has no steps" would not say why); a file over the limit is
// refused by its size (a sparse one here: nothing is read); a folder by what it
// is. (A stream that never ends stops at the same limit.)
TEST(LoadPlanFile, ReadsFifosAndStopsAtTheLimit) {
  testing::TempDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo.yaml").c_str(), 0600), 0);
  auto fifo = read_plan_file((dir / "fifo.yaml").string());
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code, ErrorCode::InvalidInput);
  EXPECT_NE(fifo.error().message.find("fifo.yaml: is a named pipe that gave nothing"), std::string::npos)
      << fifo.error().message;
  testing::write_file(dir / "huge.yaml", "");
  ASSERT_EQ(truncate((dir / "huge.yaml").c_str(), kMaxPlanFileBytes + 1), 0);
  auto huge = read_plan_file((dir / "huge.yaml").string());
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("is over 256 MiB; a plan file may be at most that"), std::string::npos);
  auto folder = read_plan_file(dir.path().string());
  ASSERT_FALSE(folder);
  EXPECT_NE(folder.error().message.find("is a folder, not a plan file"), std::string::npos);
  auto empty = read_plan_file("");  // `orch validate ""`: said as empty, not as a file named ""
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, ErrorCode::InvalidInput);
  EXPECT_EQ(empty.error().message, "the plan's path is empty: give the plan file (- for standard input)");
}

TEST(Diagnostic, ToString) {
  EXPECT_EQ((Diagnostic{"p.yaml", 3, "a", "msg"}).to_string(), "p.yaml:3: step 'a': msg");
  EXPECT_EQ((Diagnostic{"p.yaml", 3, "", "msg"}).to_string(), "p.yaml:3: msg");
  EXPECT_EQ((Diagnostic{"p.yaml", 0, "a", "msg"}).to_string(), "p.yaml: step 'a': msg");
  EXPECT_EQ((Diagnostic{"", 0, "", "msg"}).to_string(), "msg");
  EXPECT_EQ((Diagnostic{"", 0, "a", "msg"}).to_string(), "step 'a': msg");
  EXPECT_EQ((Diagnostic{"", 7, "", "msg"}).to_string(), "line 7: msg");
}

}  // namespace
}  // namespace orch
