#include "orch/validate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "orch/plan_loader.h"
#include "testing/testing.h"

namespace orch {
namespace {

namespace fs = std::filesystem;

class Validate : public ::testing::Test {
 protected:
  // Parses (must be clean) and validates `text`; returns the diagnostics as strings.
  std::vector<std::string> check(const std::string& text) {
    LoadResult r = parse_plan(text, "p.yaml");
    for (const auto& d : r.diagnostics) ADD_FAILURE() << "parse: " << d.to_string();
    return check_plan(r.plan);
  }
  std::vector<std::string> check_plan(const Plan& plan) {
    std::vector<std::string> out;
    for (const auto& d : validate_plan(plan, options_)) out.push_back(d.to_string());
    return out;
  }
  void SetUp() override {
    options_.workspace = ws_.path();
    options_.plan_dir = ws_.path();
  }

  testing::TempDir ws_;
  ValidateOptions options_;
};

::testing::AssertionResult has(const std::vector<std::string>& all, const std::string& fragment) {
  for (const auto& p : all)
    if (p.find(fragment) != std::string::npos) return ::testing::AssertionSuccess();
  auto r = ::testing::AssertionFailure() << "no diagnostic contains \"" << fragment << "\"; got:";
  for (const auto& p : all) r << "\n  " << p;
  return r;
}

TEST_F(Validate, CleanPlanHasNoDiagnostics) {
  auto d = check(R"(steps:
  - id: a
    run: [echo, hi]
  - id: b
    deps: [a]
    sh: echo "${steps.a.result}" ${inputs.n}
    inputs: {n: "${steps.a.result}"}
    env: {X: "${steps.a.json.k}"}
  - id: c
    deps: [b]
    executor: builtin:json
    inputs: {v: "${steps.a.result} #E0 ${attempt.number}"}
    post:
      - result_json: {type: object}
      - {kind: file_exists, path: "sub/a b.txt"}
      - shell_zero: 'test -n "${HOME}" && test -n "$ORCH_RESULT"'
)");
  EXPECT_TRUE(d.empty()) << ::testing::PrintToString(d);
}

// Postcondition fields are used as written: a placeholder in one would be looked
// for, or run, as its literal text, so validation refuses it. A field the loader
// could not read is reported once, not again as missing or empty.
TEST_F(Validate, PlaceholdersInPostconditionsAndUnreadFieldsAreSaidOnce) {
  auto d = check(R"(steps:
  - id: a
    run: [echo, out.txt]
  - id: b
    deps: [a]
    run: [true]
    post:
      - shell_zero: 'test "${steps.a.result}" = x'
      - result_matches: '^${inputs.want}$'
      - {kind: file_contains, path: "${steps.a.result}", text: "${attempt.number}"}
)");
  EXPECT_TRUE(has(d,
                  "p.yaml:8: step 'b': postcondition shell_zero: 'cmd' holds the placeholder "
                  "'${steps.a.result}', but postcondition fields are used as written"));
  EXPECT_TRUE(has(d,
                  "p.yaml:9: step 'b': postcondition result_matches: 'pattern' holds the placeholder "
                  "'${inputs.want}'"));
  EXPECT_TRUE(has(d, "p.yaml:10: step 'b': postcondition file_contains: 'path' holds the placeholder"));
  EXPECT_TRUE(has(d,
                  "p.yaml:10: step 'b': postcondition file_contains: 'text' holds the placeholder "
                  "'${attempt.number}'"));
  EXPECT_EQ(d.size(), 4u) << ::testing::PrintToString(d);

  for (const char* run : {"run: echo", "run: [echo, ~]", "run: {a: b}"}) {
    LoadResult r = parse_plan(fmt::format("steps:\n  - id: a\n    {}\n", run), "p.yaml");
    ASSERT_EQ(r.diagnostics.size(), 1u) << run;
    EXPECT_TRUE(check_plan(r.plan).empty()) << run << ": " << ::testing::PrintToString(check_plan(r.plan));
  }
}

// An `sh` script that reads $ORCH_IN_<NAME> for an input the step does not have
// would read an empty variable: input names keep their case.
TEST_F(Validate, AnShScriptReadsOnlyInputsTheStepHas) {
  auto d = check(R"(steps:
  - id: a
    inputs: {test_command: make test, base: main}
    sh: 'sh -c "$ORCH_IN_TEST_COMMAND"; git diff "$ORCH_IN_bse" "$${ORCH_IN_far_away}" "$ORCH_IN_base"'
)");
  EXPECT_TRUE(has(d,
                  "p.yaml:4: step 'a': 'sh' reads $ORCH_IN_TEST_COMMAND, but the step has no input "
                  "'TEST_COMMAND', so it would be empty (input names keep their case: input 'test_command' "
                  "is $ORCH_IN_test_command)"));
  EXPECT_TRUE(has(d,
                  "'sh' reads $ORCH_IN_bse, but the step has no input 'bse', so it would be empty (did you "
                  "mean 'base'?)"));
  EXPECT_TRUE(has(d,
                  "'sh' reads $ORCH_IN_far_away, but the step has no input 'far_away', so it would be empty; "
                  "declare it under 'inputs' or write ${inputs.far_away}"));
  EXPECT_EQ(d.size(), 3u) << ::testing::PrintToString(d);
  EXPECT_TRUE(
      check("steps:\n  - id: a\n    inputs: {n: 1}\n    sh: 'echo $ORCH_IN_n $${ORCH_IN_n} ORCH_IN_X'\n")
          .empty());
}

TEST_F(Validate, EmptyPlan) {
  EXPECT_TRUE(has(check("name: x\nsteps: []\n"), "p.yaml:2: plan has no steps"));
  EXPECT_TRUE(has(check("name: x\n"), "p.yaml:1: plan has no steps"));
  EXPECT_TRUE(has(check_plan(Plan{}), "plan has no steps"));
}

// Every problem at once, in file order, even when the loader could not read
// every field; only what the loader says when there is no plan to check.
TEST_F(Validate, PlanProblemsListsTheLoadersAndTheChecksTogether) {
  auto problems = [&](const std::string& text) {
    std::vector<std::string> out;
    for (const auto& d : plan_problems(parse_plan(text, "p.yaml"), options_)) out.push_back(d.to_string());
    return out;
  };
  // No steps and an unknown key: the checks run all the same.
  EXPECT_EQ(problems("concurrency: 0\nbogus: 1\nsteps: []\n"),
            (std::vector<std::string>{"p.yaml:1: 'concurrency' must be at least 1, got 0",
                                      "p.yaml:2: unknown key 'bogus'", "p.yaml:3: plan has no steps"}));
  EXPECT_EQ(problems("on_failure: stop\nconcurrency: 0\n"),
            (std::vector<std::string>{"p.yaml:1: 'on_failure' must be 'abort' or 'continue', got 'stop'",
                                      "p.yaml:1: plan has no steps",
                                      "p.yaml:2: 'concurrency' must be at least 1, got 0"}));
  // A step list with a bad step: the other steps are checked too.
  EXPECT_TRUE(
      has(problems("steps:\n  - {id: a, run: [x], colour: red}\n  - {id: b, deps: [nope], run: [y]}\n"),
          "p.yaml:3: step 'b': depends on unknown step 'nope'"));
  // Nothing to check: only what the loader said.
  EXPECT_EQ(problems("steps: 5\n"),
            (std::vector<std::string>{"p.yaml:1: 'steps' must be a list of steps, got '5'"}));
  EXPECT_EQ(problems("5\n").size(), 1u);
  EXPECT_EQ(problems("steps: [\n").size(), 1u);
  EXPECT_TRUE(has(problems("steps: [\n"), "YAML syntax error"));
  EXPECT_EQ(problems("{\"steps\": [}").size(), 1u);
  // A clean text: just the checks.
  EXPECT_EQ(problems("steps: []\n"), (std::vector<std::string>{"p.yaml:1: plan has no steps"}));
  EXPECT_TRUE(problems("steps:\n  - {id: a, run: [x]}\n").empty());
}

TEST_F(Validate, AStepCopiedWholeByAnAliasIsSaidToBeOneAndItsProblemsOnce) {
  std::vector<std::string> out;
  for (const auto& d : plan_problems(parse_plan(R"(steps:
  - &one
    id: a
    run: [echo, hi]
    timeout: forever
  - id: b
    run: [echo, b]
  - *one
)",
                                                "p.yaml"),
                                     options_))
    out.push_back(d.to_string());
  ASSERT_EQ(out.size(), 2u) << ::testing::PrintToString(out);
  EXPECT_EQ(out[0].rfind("p.yaml:5: step 'a': bad duration 'forever' for 'timeout'", 0), 0u) << out[0];
  EXPECT_EQ(out[1],
            "p.yaml:8: step 'a': duplicate step id 'a': this step is a YAML alias of the step at line 3, id "
            "and all; give each step its own id (a merge key, `<<: *anchor`, copies the rest and lets it "
            "write its own)");
  // A merge key copies the rest: the copy writes its own id, and the problem in
  // what it copied is the copy's own, at the anchor's line.
  auto merged = plan_problems(parse_plan(R"(steps:
  - &one
    id: a
    timeout: forever
    run: [echo, hi]
  - <<: *one
    id: b
)",
                                         "p.yaml"),
                              options_);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].step_id, "a");
  EXPECT_EQ(merged[1].step_id, "b");
  EXPECT_EQ(merged[1].line, 4);
}

TEST_F(Validate, Ids) {
  auto d = check(R"(steps:
  - goal: no id here
    sh: x
  - id: "has space"
    sh: x
  - id: _under
    sh: x
  - id: ok.v1-2_3
    sh: x
  - id: dup
    sh: x
  - id: dup
    sh: y
  - id: "two\nlines"
    sh: x
  - id: "two\nlines"
    sh: x
  - id: "nul\0cut"
    sh: x
)");
  EXPECT_TRUE(has(d, "p.yaml:2: the step at index 0 has no 'id'"));
  EXPECT_TRUE(has(d, "p.yaml:4: step 'has space': invalid step id 'has space'"));
  EXPECT_TRUE(has(d, "p.yaml:6: step '_under': invalid step id '_under'"));
  EXPECT_TRUE(has(d, "p.yaml:12: step 'dup': duplicate step id 'dup' (first defined at line 10)"));
  // An id that is not valid is shown escaped, in the prefix too: a line break
  // would forge a line of the report and a NUL would cut it.
  EXPECT_TRUE(has(d, "p.yaml:14: step 'two\\nlines': invalid step id 'two\\nlines'"));
  EXPECT_TRUE(
      has(d, "p.yaml:16: step 'two\\nlines': duplicate step id 'two\\nlines' (first defined at line 14)"));
  EXPECT_TRUE(has(d, "p.yaml:18: step 'nul\\x00cut': invalid step id 'nul\\x00cut'"));
  for (const auto& line : d) EXPECT_EQ(line.find_first_of(std::string("\n\0", 2)), std::string::npos) << line;
  EXPECT_EQ(d.size(), 8u) << ::testing::PrintToString(d);
}

TEST_F(Validate, Deps) {
  auto d = check(R"(steps:
  - id: find
    sh: x
  - id: fix
    deps:
      - find
      - fnd
      - fix
      - zzzzzz
    sh: x
)");
  EXPECT_TRUE(has(d, "p.yaml:7: step 'fix': depends on unknown step 'fnd' (did you mean 'find'?)"));
  EXPECT_TRUE(has(d, "p.yaml:8: step 'fix': depends on itself"));
  EXPECT_TRUE(has(d, "p.yaml:9: step 'fix': depends on unknown step 'zzzzzz'"));
  EXPECT_EQ(d.size(), 3u) << ::testing::PrintToString(d);
}

TEST_F(Validate, CyclesArePrinted) {
  auto d = check(R"(steps:
  - id: a
    deps: [c]
    sh: x
  - id: b
    deps: [a]
    sh: x
  - id: c
    deps: [b]
    sh: x
  - id: d
    deps: [e]
    sh: x
  - id: e
    deps: [d, a]
    sh: x
  - id: f
    deps: [a]
    sh: x
)");
  ASSERT_EQ(d.size(), 2u) << ::testing::PrintToString(d);
  EXPECT_EQ(d[0], "p.yaml:3: step 'a': dependency cycle: a -> c -> b -> a (each step depends on the next)");
  EXPECT_EQ(d[1], "p.yaml:12: step 'd': dependency cycle: d -> e -> d (each step depends on the next)");
}

TEST_F(Validate, LongChainsNeedNoRecursion) {
  Plan plan;
  const int n = 100'000;
  for (int i = 0; i < n; ++i) {
    Step s;
    s.id = "s" + std::to_string(i);
    s.index = i;
    s.sh = i == 0 ? "echo 0" : "echo ${steps.s" + std::to_string(i - 1) + ".result}";
    if (i > 0) s.deps = {"s" + std::to_string(i - 1)};
    plan.steps.push_back(std::move(s));
  }
  EXPECT_TRUE(check_plan(plan).empty());
  EXPECT_EQ(topological_order(plan).size(), static_cast<std::size_t>(n));
  plan.steps[0].deps = {"s" + std::to_string(n - 1)};  // close the loop
  auto d = check_plan(plan);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("dependency cycle: s0 -> s99999 -> s99998"), std::string::npos);
}

TEST_F(Validate, TopologicalOrderKeepsPlanOrder) {
  LoadResult r = parse_plan(R"(steps:
  - {id: late, deps: [mid], sh: x}
  - {id: first, sh: x}
  - {id: mid, deps: [first], sh: x}
  - {id: other, sh: x}
)",
                            "p.yaml");
  EXPECT_EQ(topological_order(r.plan), (std::vector<int>{1, 2, 0, 3}));
  EXPECT_TRUE(is_ancestor(r.plan, 1, 0));  // first -> mid -> late
  EXPECT_TRUE(is_ancestor(r.plan, 2, 0));
  EXPECT_FALSE(is_ancestor(r.plan, 0, 1));
  EXPECT_FALSE(is_ancestor(r.plan, 3, 0));
  EXPECT_FALSE(is_ancestor(r.plan, 0, 0));
  EXPECT_FALSE(is_ancestor(r.plan, 7, 0));
}

// Many steps naming one distant ancestor: the answer for each comes from that
// ancestor's descendants, walked once (it was one upward search per step, which
// made a 100,000-step chain take half a minute). The answers must stay exact.
TEST_F(Validate, ManyReferencesToOneDistantStepAreCheckedExactly) {
  std::string yaml = "steps:\n  - {id: root, sh: x}\n  - {id: side, sh: x}\n";
  for (int i = 1; i <= 300; ++i)
    yaml += fmt::format(
        "  - {{id: c{}, deps: [{}], run: [echo, '${{steps.root.result}}', '${{steps.side.result}}']}}\n", i,
        i == 1 ? "root" : fmt::format("c{}", i - 1));
  // A second branch, under `side`: `root` is not its ancestor.
  for (int i = 1; i <= 50; ++i)
    yaml += fmt::format(
        "  - {{id: d{}, deps: [{}], run: [echo, '${{steps.root.result}}', '${{steps.side.result}}']}}\n", i,
        i == 1 ? "side" : fmt::format("d{}", i - 1));
  auto d = check(yaml);
  int not_root = 0;
  int not_side = 0;
  for (const auto& x : d) {
    if (x.find("refers to step 'root', which is not an ancestor") != std::string::npos) {
      ++not_root;
      EXPECT_NE(x.find("step 'd"), std::string::npos) << x;
    }
    if (x.find("refers to step 'side', which is not an ancestor") != std::string::npos) {
      ++not_side;
      EXPECT_NE(x.find("step 'c"), std::string::npos) << x;
    }
  }
  EXPECT_EQ(not_root, 50);
  EXPECT_EQ(not_side, 300);
  EXPECT_EQ(d.size(), 350u);
}

TEST_F(Validate, Placeholders) {
  auto d = check(R"(steps:
  - id: a
    sh: x
  - id: b
    sh: x
  - id: c
    deps: [a]
    run:
      - echo
      - "${steps.b.result}"
      - "${steps.aa.result}"
      - "${steps.c.result}"
      - "${inputs.nam}"
      - "${step.a.result}"
      - "${steps.a.result"
      - "#E1"
    inputs:
      name: x
      other: "${inputs.name}"
      deep: {list: ["${steps.b.json.k}"]}
    env:
      HOME_DIR: "${HOME}"
)");
  EXPECT_TRUE(
      has(d,
          "p.yaml:10: step 'c': placeholder '${steps.b.result}' in 'run' refers to step 'b', which is not an "
          "ancestor of 'c' (add it to deps)"));
  EXPECT_TRUE(
      has(d,
          "p.yaml:11: step 'c': placeholder '${steps.aa.result}' in 'run' refers to unknown step 'aa' (did "
          "you mean 'a'?)"));
  EXPECT_TRUE(
      has(d, "p.yaml:12: step 'c': placeholder '${steps.c.result}' in 'run' refers to this step itself"));
  EXPECT_TRUE(has(d,
                  "p.yaml:13: step 'c': placeholder '${inputs.nam}' in 'run' refers to undeclared input "
                  "'nam' (did you mean 'name'?)"));
  EXPECT_TRUE(has(d,
                  "p.yaml:14: step 'c': in 'run': unknown placeholder '${step.a.result}' (did you mean "
                  "'${steps.a.result}'?)"));
  EXPECT_TRUE(has(d, "p.yaml:15: step 'c': in 'run': unterminated '${'"));
  EXPECT_TRUE(has(
      d,
      "p.yaml:16: step 'c': placeholder '#E1' in 'run' refers to step #1 ('b'), which is not an ancestor"));
  EXPECT_TRUE(has(d,
                  "p.yaml:19: step 'c': placeholder '${inputs.name}' in 'inputs.other': inputs cannot refer "
                  "to other inputs"));
  EXPECT_TRUE(
      has(d, "p.yaml:20: step 'c': placeholder '${steps.b.json.k}' in 'inputs.deep' refers to step 'b'"));
  EXPECT_TRUE(has(d, "p.yaml:22: step 'c': in 'env.HOME_DIR': unknown placeholder '${HOME}'"));
  EXPECT_EQ(d.size(), 10u) << ::testing::PrintToString(d);
}

TEST_F(Validate, AncestorsMayBeIndirect) {
  EXPECT_TRUE(check(R"(steps:
  - {id: a, sh: x}
  - {id: b, deps: [a], sh: x}
  - {id: c, deps: [b], sh: "echo ${steps.a.result} #E0 #E1"}
)")
                  .empty());
}

TEST_F(Validate, Executors) {
  auto d = check(R"(steps:
  - {id: a, executor: shel, sh: x}
  - {id: b, executor: "builtin:echoo", inputs: {text: x}}
  - {id: c, executor: llm}
)");
  EXPECT_TRUE(has(d, "p.yaml:2: step 'a': unknown executor 'shel' (did you mean 'shell'?)"));
  EXPECT_TRUE(has(d, "p.yaml:3: step 'b': unknown executor 'builtin:echoo' (did you mean 'builtin:echo'?)"));
  EXPECT_TRUE(has(d, "p.yaml:4: step 'c': unknown executor 'llm'"));
  options_.executor_known = [](const std::string& name) { return name == "llm" || name == "shell"; };
  auto only_llm = check("steps:\n  - {id: c, executor: llm}\n");
  EXPECT_TRUE(only_llm.empty()) << ::testing::PrintToString(only_llm);
}

TEST_F(Validate, ExecutorCheckGetsTheStepsLocation) {
  options_.executor_check = [](const Step& step, Diagnostics& out) {
    if (step.executor == "builtin:echo" && !step.inputs.contains("text"))
      out.push_back(Diagnostic{"", 0, "", "builtin:echo needs input 'text'"});
  };
  auto d = check("steps:\n  - id: a\n    executor: builtin:echo\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "p.yaml:2: step 'a': builtin:echo needs input 'text'");
}

TEST_F(Validate, RunAndSh) {
  auto d = check(R"(steps:
  - {id: neither}
  - {id: both, run: [x], sh: y}
  - {id: empty, run: []}
  - {id: noprog, run: ["", a]}
  - {id: blank, sh: "  "}
  - {id: echo, executor: "builtin:echo", run: [x], inputs: {text: t}}
  - {id: tojson, executor: "builtin:json", sh: x}
)");
  EXPECT_TRUE(has(d, "p.yaml:2: step 'neither': a shell step needs 'run' (an argv list) or 'sh'"));
  EXPECT_TRUE(has(d, "p.yaml:3: step 'both': has both 'run' and 'sh': give one"));
  EXPECT_TRUE(has(d, "p.yaml:4: step 'empty': 'run' is empty"));
  EXPECT_TRUE(has(d, "p.yaml:5: step 'noprog': 'run' starts with an empty program name"));
  EXPECT_TRUE(has(d, "p.yaml:6: step 'blank': 'sh' is empty"));
  EXPECT_TRUE(has(
      d, "p.yaml:7: step 'echo': 'run' is only for shell steps (this step's executor is 'builtin:echo')"));
  EXPECT_TRUE(has(d, "p.yaml:8: step 'tojson': 'sh' is only for shell steps"));
  EXPECT_EQ(d.size(), 7u) << ::testing::PrintToString(d);
}

TEST_F(Validate, Limits) {
  auto d = check(R"(concurrency: 0
budget:
  tokens: -1
  cost_usd: -0.5
  attempts: 0
defaults:
  attempts: 0
  timeout: 0s
  max_output: 0
steps:
  - id: a
    sh: x
    attempts: 0
    timeout: 0
    max_output: 0
    budget: {tokens: -5, attempts: -1}
)");
  EXPECT_TRUE(has(d, "p.yaml:1: 'concurrency' must be at least 1, got 0"));
  EXPECT_TRUE(has(d, "p.yaml:3: 'budget.tokens' cannot be negative (-1)"));
  EXPECT_TRUE(has(d, "p.yaml:4: 'budget.cost_usd' must be a number of dollars, 0 or more"));
  EXPECT_TRUE(has(d, "p.yaml:5: 'budget.attempts' must be at least 1, got 0"));
  EXPECT_TRUE(has(d, "p.yaml:7: 'defaults.attempts' must be at least 1, got 0"));
  EXPECT_TRUE(has(d, "p.yaml:8: 'defaults.timeout' must be more than 0"));
  EXPECT_TRUE(has(d, "p.yaml:9: 'defaults.max_output' must be at least 1 byte, got 0"));
  EXPECT_TRUE(has(d, "p.yaml:13: step 'a': 'attempts' must be at least 1, got 0"));
  EXPECT_TRUE(has(d, "p.yaml:14: step 'a': 'timeout' must be more than 0"));
  EXPECT_TRUE(has(d, "p.yaml:15: step 'a': 'max_output' must be at least 1 byte"));
  EXPECT_TRUE(has(d, "p.yaml:16: step 'a': 'budget.tokens' cannot be negative (-5)"));
  EXPECT_TRUE(has(d, "p.yaml:16: step 'a': 'budget.attempts' must be at least 1, got -1"));
  EXPECT_EQ(d.size(), 12u) << ::testing::PrintToString(d);
}

TEST_F(Validate, Names) {
  auto d = check(R"(steps:
  - id: a
    sh: x
    inputs:
      bad-name: 1
    env:
      "1X": y
)");
  EXPECT_TRUE(has(d, "p.yaml:5: step 'a': input name 'bad-name' is not valid"));
  EXPECT_TRUE(has(d, "p.yaml:7: step 'a': environment variable name '1X' is not valid"));
}

TEST_F(Validate, PostconditionFields) {
  auto d = check(R"(steps:
  - id: a
    sh: x
    post:
      - {kind: result_contains}
      - {kind: result_matches}
      - {kind: file_exists}
      - {kind: file_contains, path: out.txt}
      - {kind: shell_zero}
      - {kind: result_json}
      - {kind: result_contains, text: x, path: y}
      - {kind: exit_zero, cmd: "true"}
      - {kind: result_json, schema: {type: object}, schema_path: s.json}
      - {kind: file_exists, path: x, timeout: 1s}
)");
  EXPECT_TRUE(has(d, "p.yaml:5: step 'a': postcondition result_contains needs 'text'"));
  EXPECT_TRUE(has(d, "p.yaml:6: step 'a': postcondition result_matches needs 'pattern'"));
  EXPECT_TRUE(has(d, "p.yaml:7: step 'a': postcondition file_exists needs 'path'"));
  EXPECT_TRUE(has(d, "p.yaml:8: step 'a': postcondition file_contains needs 'text'"));
  EXPECT_TRUE(has(d, "p.yaml:9: step 'a': postcondition shell_zero needs 'cmd'"));
  EXPECT_TRUE(
      has(d, "p.yaml:10: step 'a': postcondition result_json needs 'schema' (inline) or 'schema_path'"));
  EXPECT_TRUE(
      has(d, "p.yaml:11: step 'a': postcondition result_contains does not use 'path' (it uses text)"));
  EXPECT_TRUE(has(d, "p.yaml:12: step 'a': postcondition exit_zero does not use 'cmd' (it takes no fields)"));
  EXPECT_TRUE(has(d, "p.yaml:13: step 'a': postcondition result_json has both 'schema' and 'schema_path'"));
  EXPECT_TRUE(has(d, "p.yaml:14: step 'a': postcondition file_exists does not use 'timeout'"));
  EXPECT_EQ(d.size(), 10u) << ::testing::PrintToString(d);
}

TEST_F(Validate, RegexesMustCompile) {
  auto d = check(
      "steps:\n  - id: a\n    sh: x\n    post:\n      - result_matches: \"(unclosed\"\n"
      "      - result_matches: \"^ok\\\\d+$\"\n");
  ASSERT_EQ(d.size(), 1u) << ::testing::PrintToString(d);
  EXPECT_TRUE(has(d, "p.yaml:5: step 'a': postcondition result_matches: bad regex '(unclosed'"));
}

TEST_F(Validate, Schemas) {
  testing::write_file(ws_ / "good.json", R"({"type": "object", "required": ["a"]})");
  testing::write_file(ws_ / "good.yaml", "type: array\n");
  testing::write_file(ws_ / "broken.json", "{not json");
  testing::write_file(ws_ / "notschema.json", R"({"type": 12})");
  auto d = check(R"(steps:
  - id: a
    sh: x
    post:
      - result_json: good.json
      - result_json: good.yaml
      - result_json: missing.json
      - result_json: broken.json
      - result_json: notschema.json
      - result_json: {type: 12}
      - result_json: {type: object, properties: {a: {type: string}}}
)");
  EXPECT_TRUE(has(d, "p.yaml:7: step 'a': postcondition result_json: cannot use schema_path 'missing.json'"));
  EXPECT_TRUE(has(d, "p.yaml:8: step 'a': postcondition result_json: cannot use schema_path 'broken.json'"));
  EXPECT_TRUE(
      has(d, "p.yaml:9: step 'a': postcondition result_json: cannot use schema_path 'notschema.json'"));
  EXPECT_TRUE(
      has(d, "p.yaml:10: step 'a': postcondition result_json: inline 'schema': not a usable JSON Schema"));
  EXPECT_EQ(d.size(), 4u) << ::testing::PrintToString(d);
}

TEST_F(Validate, SchemaPathDefaultsToThePlanFilesFolder) {
  testing::TempDir plans;
  fs::create_directories(plans / "sub");
  testing::write_file(plans / "sub" / "s.json", R"({"type": "object"})");
  testing::write_file(plans / "sub" / "plan.yaml",
                      "steps:\n  - {id: a, sh: x, post: [result_json: s.json]}\n");
  auto r = load_plan_file((plans / "sub" / "plan.yaml").string());
  ASSERT_TRUE(r);
  ValidateOptions options;
  options.workspace = ws_.path();
  EXPECT_TRUE(validate_plan(r->plan, options).empty());
}

TEST_F(Validate, PathsStayInTheWorkspace) {
  fs::create_directories(ws_ / "inside");
  fs::create_symlink("/etc", ws_ / "link_out");
  fs::create_symlink(ws_ / "inside", ws_ / "link_in");
  auto d = check(R"(steps:
  - id: a
    sh: x
    writes:
      - ok.txt
      - inside/new/deeper.txt
      - ../escape.txt
      - /etc/passwd
      - link_out/passwd
      - link_in/fine.txt
    output: ../../out.txt
    post:
      - file_exists: "../up.txt"
      - {kind: file_contains, path: link_out/hosts, text: x}
      - file_exists: "${steps.nope.result}/x"
      - file_exists: inside
  - id: b
    deps: [a]
    sh: x
    writes: ["${steps.a.result}"]
    output: out-${attempt.number}.txt
)");
  EXPECT_TRUE(has(d, "p.yaml:7: step 'a': 'writes': path '../escape.txt' escapes the workspace"));
  EXPECT_TRUE(has(d, "p.yaml:8: step 'a': 'writes': path '/etc/passwd' escapes the workspace"));
  EXPECT_TRUE(
      has(d, "p.yaml:9: step 'a': 'writes': path 'link_out/passwd' resolves to '/etc/passwd', outside"));
  EXPECT_TRUE(has(d, "p.yaml:11: step 'a': 'output': path '../../out.txt' escapes the workspace"));
  EXPECT_TRUE(
      has(d, "p.yaml:13: step 'a': postcondition file_exists: path '../up.txt' escapes the workspace"));
  EXPECT_TRUE(has(d, "p.yaml:14: step 'a': postcondition file_contains: path 'link_out/hosts' resolves to"));
  // Post fields are taken as written: a placeholder in one would be looked for as its
  // literal text, so it is refused (and the path is not resolved as well).
  EXPECT_TRUE(has(d, "p.yaml:15: step 'a': postcondition file_exists: 'path' holds the placeholder "
                     "'${steps.nope.result}'"));
  // So are writes and output: a placeholder would name a file called "${...}".
  EXPECT_TRUE(has(d,
                  "p.yaml:20: step 'b': 'writes': '${steps.a.result}' holds the placeholder "
                  "'${steps.a.result}', but writes paths are used as written"));
  EXPECT_TRUE(has(d,
                  "p.yaml:21: step 'b': 'output': 'out-${attempt.number}.txt' holds the placeholder "
                  "'${attempt.number}'"));
  EXPECT_EQ(d.size(), 9u) << ::testing::PrintToString(d);
}

TEST_F(Validate, DiagnosticsComeInFileOrder) {
  auto d = check(R"(concurrency: 0
steps:
  - id: b
    deps: [zz]
    sh: x
  - id: a
    executor: nope
)");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(d[0].starts_with("p.yaml:1:"));
  EXPECT_TRUE(d[1].starts_with("p.yaml:4:"));
  EXPECT_TRUE(d[2].starts_with("p.yaml:7:"));
}

TEST_F(Validate, PlansBuiltInCodeUsePositions) {
  // Step::index left at 0 everywhere: positions in Plan::steps are what count.
  Plan plan;
  Step a;
  a.id = "a";
  a.run = {"echo", "a"};
  Step b;
  b.id = "b";
  b.deps = {"a"};
  b.run = {"echo", "#E0", "${steps.a.result}"};
  Step dup = a;
  plan.steps = {a, b, dup};
  auto d = check_plan(plan);
  ASSERT_EQ(d.size(), 1u) << ::testing::PrintToString(d);
  EXPECT_EQ(d[0], "step 'a': duplicate step id 'a' (also step #0)");
}

TEST_F(Validate, PartialPlansDoNotCrash) {
  Plan plan;
  Step s;  // no id, no command, deps on nothing
  s.deps = {"", "x"};
  s.run = {"${steps..result}"};
  s.post = {Postcondition{}};
  plan.steps = {s, s};
  plan.steps[1].index = 1;
  auto d = check_plan(plan);
  EXPECT_FALSE(d.empty());
}

}  // namespace
}  // namespace orch
