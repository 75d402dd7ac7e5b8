// The worker:NAME executor driven by the engine, against scripted agent CLIs
// (tests/agents/fake_agent.py): text, json and jsonl output, usage into the
// budgets, stalls (a distinct status), crashes, and a retry that is told why.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exec/worker_executor.h"
#include "testing/engine_fixture.h"

namespace orch {
namespace {

using orch::testing::read_file;
using orch::testing::source_dir;
namespace fs = std::filesystem;

class WorkerEngine : public orch::testing::EngineFixture {
 protected:
  void SetUp() override {
    EngineFixture::SetUp();
    std::string agent = (source_dir() / "tests" / "agents" / "fake_agent.py").string();
    std::string yaml = "workers:\n";
    for (const char* mode : {"text", "json", "badjson", "busy", "crash", "retry", "noresult", "spentfail",
                             "overloaded", "cached", "badkey", "toolong"}) {
      yaml += fmt::format("  {}:\n    argv: [python3, '{}', {}, '{{prompt}}', '{{workspace}}']\n", mode,
                          agent, mode);
      const std::string m = mode;
      const bool error_answer = m == "overloaded" || m == "badkey" || m == "toolong";
      if (m == "json" || m == "noresult" || m == "spentfail" || error_answer)
        yaml +=
            "    output: json\n    result: result\n    usage: {tokens_in: usage.input_tokens, tokens_out: "
            "usage.output_tokens, cost_usd: total_cost_usd}\n";
      if (std::string(mode) == "cached")
        yaml +=
            "    output: json\n    result: result\n    usage: {tokens_in: usage.input_tokens, tokens_out: "
            "usage.output_tokens, cost_usd: total_cost_usd, cache_read: usage.cache_read_input_tokens, "
            "cache_write: usage.cache_creation_input_tokens}\n";
      if (error_answer) yaml += "    error: is_error\n    error_message: result\n";
      if (std::string(mode) == "badjson") yaml += "    output: json\n    result: result\n";
      if (std::string(mode) == "busy") yaml += "    stall_after: 1500ms\n";
    }
    yaml += fmt::format(
        "  jsonl:\n    argv: [python3, '{}', jsonl, '{{prompt}}']\n    output: jsonl\n"
        "    result: message.text\n    usage: {{tokens_in: tokens.in, tokens_out: tokens.out}}\n",
        agent);
    yaml += fmt::format(
        "  reserving:\n    argv: [python3, '{}', json, '{{prompt}}']\n    output: json\n    result: result\n"
        "    usage: {{tokens_in: usage.input_tokens, tokens_out: usage.output_tokens}}\n    reserve_tokens: "
        "500\n",
        agent);
    yaml += fmt::format(
        "  bystdin:\n    argv: [python3, '{0}', text, '-', '{{workspace}}']\n    stdin: prompt\n"
        "  byfile:\n    argv: [python3, '{0}', text, '@{{prompt_file}}', '{{workspace}}']\n",
        agent);
    yaml += fmt::format(
        "  stall:\n    argv: [python3, '{}', stall, '{{prompt}}']\n    stall_after: 500ms\n"
        "    timeout: 60s\n",
        agent);
    auto catalog = parse_worker_catalog(yaml, "workers.yaml");
    ASSERT_TRUE(catalog) << catalog.error().message;
    registry_ = std::make_shared<ExecutorRegistry>(ExecutorRegistry::with_builtins());
    registry_->add("worker:", std::make_shared<WorkerExecutor>(std::make_shared<WorkerCatalog>(*catalog)));
  }

  RunOutcome run(const std::string& yaml) {
    EngineOptions options;
    options.executors = registry_;
    return EngineFixture::run(yaml, options);
  }

  std::shared_ptr<ExecutorRegistry> registry_;
};

// The WorkerEngine tests about SQLite itself: on the "sqlite" backend only.
class WorkerEngineSqlite : public WorkerEngine {};

TEST_P(WorkerEngine, TextJsonAndJsonlWorkersGiveTheirResultAndUsage) {
  RunOutcome out = run(R"(name: w
steps:
  - {id: t, executor: "worker:text", goal: write the parser}
  - {id: j, executor: "worker:json", goal: write the lexer, budget: {tokens: 1000}}
  - {id: l, executor: "worker:jsonl", goal: write the docs}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "t").result, "done: write the parser");
  StepRecord j = step(out.run_id, "j");
  EXPECT_EQ(j.result, "done: write the lexer");
  EXPECT_EQ(j.tokens_in, 120);
  EXPECT_EQ(j.tokens_out, 30);
  EXPECT_DOUBLE_EQ(j.cost_usd, 0.0042);
  StepRecord l = step(out.run_id, "l");
  EXPECT_EQ(l.result, "done: write the docs");
  EXPECT_EQ(l.tokens_in, 50);
  EXPECT_EQ(l.tokens_out, 7);
  auto run_row = store_->find_run(out.run_id);
  EXPECT_EQ((*run_row)->spent_tokens, 120 + 30 + 50 + 7);
}

TEST_P(WorkerEngine, TheAttemptsPromptIsItsGoalInputsAndNothingElse) {
  RunOutcome out = run(R"(name: w
steps:
  - {id: spec, executor: "builtin:echo", inputs: {text: "parse ISO dates"}}
  - id: t
    deps: [spec]
    executor: "worker:text"
    goal: implement the spec
    inputs: {prompt: "Work in src/.", spec: "${steps.spec.result}"}
)");
  ASSERT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(read_file(ws() / "prompt-1.txt"),
            "implement the spec\n\nWork in src/.\n\n## Inputs\n\n### spec\nparse ISO dates");
}

TEST_P(WorkerEngine, ARetryIsToldWhyThePreviousAttemptFailed) {
  RunOutcome out = run(R"(name: w
steps:
  - {id: fix, executor: "worker:retry", goal: make the tests pass, attempts: 2}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "fix").result, "fixed");
  std::string second = read_file(ws() / "prompt-2.txt");
  EXPECT_NE(second.find("## The previous attempt failed"), std::string::npos) << second;
  EXPECT_NE(second.find("tests failed: test_parse"), std::string::npos) << second;
  EXPECT_EQ(read_file(ws() / "prompt-1.txt"), "make the tests pass")
      << "the first attempt's context is clean";
}

TEST_P(WorkerEngine, AWorkerThatMakesNoProgressIsStalledNotTimedOut) {
  auto began = std::chrono::steady_clock::now();
  RunOutcome out = run(R"(name: w
steps:
  - {id: s, executor: "worker:stall", goal: think forever}
)");
  auto took = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_LT(took, std::chrono::seconds(20)) << "killed at stall_after, long before its 60 s timeout";
  auto attempts = *store_->attempts(out.run_id, "s");
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].status, AttemptStatus::Stalled);
  EXPECT_EQ(attempts[0].ending, AttemptEnding::Stalled);
  EXPECT_NE(
      attempts[0].reason.find("stalled: worker 'stall' wrote no output and changed no file in the workspace "
                              "for 500ms"),
      std::string::npos)
      << attempts[0].reason;
}

TEST_P(WorkerEngine, ChangingFilesCountsAsProgress) {
  // Silent for 3 s but writing a file every 0.1 s: never stalled at 1.5 s.
  RunOutcome out = run(R"(name: w
steps:
  - {id: b, executor: "worker:busy", goal: refactor quietly}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  EXPECT_EQ(step(out.run_id, "b").result, "done after working quietly");
}

// With the store inside the workspace (.orch/, the default), orch's own writes
// there (another step's output, the ledger) are not the worker's progress: a
// silent worker stalls at its stall_after next to a step that prints all along.
// SQLite only: the test opens a SQLite ledger file of its own inside the workspace.
TEST_P(WorkerEngineSqlite, OrchsOwnWritesToAStoreInTheWorkspaceAreNoProgress) {
  auto inside = open_sqlite_store(ws() / ".orch" / "orch.db");
  ASSERT_TRUE(inside) << inside.error().message;
  store_ = std::move(*inside);
  RunOutcome out = run(R"(name: w
concurrency: 2
on_failure: continue
steps:
  - {id: s, executor: "worker:stall", goal: think forever, attempts: 1}
  - {id: ticker, sh: "for i in $(seq 50); do echo tick $i; sleep 0.1; done"}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  EXPECT_EQ(step(out.run_id, "ticker").status, StepStatus::Done);
  auto stalled = attempts(out.run_id, "s");
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].status, AttemptStatus::Stalled) << stalled[0].reason;
  // stall_after is 500ms; the ticker prints into .orch/runs/ for 5 s. Had its
  // output counted as the worker's progress, the worker could only stall after
  // the ticker ended. (An order, not a time: a starved machine slows both alike,
  // where a bound on the stall's wall time failed under load.)
  auto ticker = attempts(out.run_id, "ticker");
  ASSERT_EQ(ticker.size(), 1u);
  EXPECT_LT(stalled[0].finished_at, ticker[0].finished_at)
      << "the ticker's output under .orch/ kept the silent worker alive";
}

TEST_P(WorkerEngine, CrashesAndOutputThatBreaksTheContractFailTheAttempt) {
  RunOutcome out = run(R"(name: w
on_failure: continue
steps:
  - {id: c, executor: "worker:crash", goal: crash}
  - {id: b, executor: "worker:badjson", goal: answer in prose}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto crash = *store_->attempts(out.run_id, "c");
  ASSERT_EQ(crash.size(), 1u);
  EXPECT_EQ(crash[0].ending, AttemptEnding::Signaled);
  EXPECT_NE(crash[0].reason.find("SIGKILL"), std::string::npos) << crash[0].reason;
  auto bad = *store_->attempts(out.run_id, "b");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].ending, AttemptEnding::Error);
  EXPECT_NE(bad[0].reason.find("worker 'badjson': its output is not JSON"), std::string::npos)
      << bad[0].reason;
}

// Every attempt's spend counts: an answer with usage but no result, and a CLI
// that prints its usage and then exits 1, fail — and are charged what they spent.
TEST_P(WorkerEngine, AFailedAttemptIsChargedWhatItsOutputSaysItSpent) {
  RunOutcome out = run(R"(name: w
on_failure: continue
steps:
  - {id: n, executor: "worker:noresult", goal: answer, attempts: 1}
  - {id: f, executor: "worker:spentfail", goal: answer, attempts: 2}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto n = attempts(out.run_id, "n");
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].status, AttemptStatus::Failed);
  EXPECT_NE(n[0].reason.find("has no 'result'"), std::string::npos) << n[0].reason;
  EXPECT_EQ(n[0].tokens_in, 200);
  EXPECT_EQ(n[0].tokens_out, 40);
  EXPECT_DOUBLE_EQ(n[0].cost_usd, 0.01);
  auto f = attempts(out.run_id, "f");
  ASSERT_EQ(f.size(), 2u);
  for (const auto& a : f) {
    EXPECT_EQ(a.exit_code, 1);
    EXPECT_EQ(a.tokens_in, 300);
    EXPECT_EQ(a.tokens_out, 60);
    EXPECT_DOUBLE_EQ(a.cost_usd, 0.02);
  }
  auto run_row = store_->find_run(out.run_id);
  EXPECT_EQ((*run_row)->spent_tokens, 240 + 2 * 360);
  EXPECT_NEAR((*run_row)->spent_cost_usd, 0.01 + 2 * 0.02, 1e-9);
}

// claude -p --output-format json exits 0 on a provider error with "is_error":
// true: with `error: is_error` in the workers file, that answer is a failed
// attempt whose reason is the error's text, retried as a provider error (the
// same failure twice does not stop it; the attempts cap does), and charged.
TEST_P(WorkerEngine, AnAnswerThatSaysItIsAnErrorFailsTheAttemptWithItsText) {
  RunOutcome out = run(R"(name: w
steps:
  - {id: o, executor: "worker:overloaded", goal: answer, attempts: 2}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto o = attempts(out.run_id, "o");
  ASSERT_EQ(o.size(), 2u) << "a provider error is retried (the same failure twice does not stop it)";
  for (const auto& a : o) {
    EXPECT_EQ(a.status, AttemptStatus::Failed);
    EXPECT_EQ(a.ending, AttemptEnding::Error);
    EXPECT_NE(a.reason.find("API Error: 529 overloaded"), std::string::npos) << a.reason;
    EXPECT_EQ(a.tokens_in, 10);
  }
  const std::string reason = step(out.run_id, "o").reason;
  EXPECT_NE(reason.find("failed after 2 attempts: worker 'overloaded' answered with an error ('is_error'): "
                        "API Error: 529 overloaded"),
            std::string::npos)
      << reason;
}

// An error answer is classed as the llm executor classes a provider's answer:
// refused credentials are the set-up (not retried, however many attempts), any
// other error an ordinary failure (the same one twice stops the step).
TEST_P(WorkerEngine, AnErrorAnswerForCredentialsIsASetUpFailureAndOthersAreOrdinary) {
  RunOutcome out = run(R"(name: w
on_failure: continue
steps:
  - {id: k, executor: "worker:badkey", goal: answer, attempts: 3}
  - {id: l, executor: "worker:toolong", goal: answer, attempts: 3}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto k = attempts(out.run_id, "k");
  ASSERT_EQ(k.size(), 1u) << "refused credentials are not retried";
  EXPECT_EQ(k[0].ending, AttemptEnding::SetupFailed);
  EXPECT_NE(k[0].reason.find("Invalid API key"), std::string::npos) << k[0].reason;
  auto l = attempts(out.run_id, "l");
  ASSERT_EQ(l.size(), 2u) << "an ordinary failure: the same one twice stops the step";
  EXPECT_EQ(l[1].ending, AttemptEnding::Error);
  EXPECT_NE(step(out.run_id, "l").reason.find("same failure twice"), std::string::npos)
      << step(out.run_id, "l").reason;
}

// Output cut at max_output loses the usage a json worker prints last: the
// attempt is charged what was reserved for it, and says so — never nothing.
TEST_P(WorkerEngine, AnAttemptWhoseUsageWasCutOffIsChargedItsReservation) {
  RunOutcome out = run(R"(name: w
steps:
  - {id: c, executor: "worker:reserving", goal: answer, attempts: 1, max_output: 40}
)");
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto c = attempts(out.run_id, "c");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].tokens_in, 500);
  EXPECT_NE(c[0].reason.find("was cut at max_output"), std::string::npos) << c[0].reason;
  EXPECT_NE(
      c[0].reason.find("its spend could not be read from its output: charged the 500 tokens reserved for it"),
      std::string::npos)
      << c[0].reason;
  EXPECT_EQ((*store_->find_run(out.run_id))->spent_tokens, 500);
}

// claude counts prompt-cache tokens apart from usage.input_tokens: they are
// input tokens too, charged to the budgets, and kept apart in the attempt's row.
TEST_P(WorkerEngine, CacheTokensAreCountedAndKeptApart) {
  RunOutcome out = run(R"(name: w
steps:
  - {id: c, executor: "worker:cached", goal: answer}
)");
  EXPECT_EQ(out.status, RunStatus::Succeeded) << out.reason;
  auto c = attempts(out.run_id, "c");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].tokens_in, 12 + 2000 + 5000);
  EXPECT_EQ(c[0].cache_read_tokens, 5000);
  EXPECT_EQ(c[0].cache_write_tokens, 2000);
  EXPECT_EQ(c[0].tokens_out, 30);
  EXPECT_EQ((*store_->find_run(out.run_id))->spent_tokens, 7012 + 30);
}

// A prompt larger than one argument (Linux: 128 KiB) goes by {prompt_file} or
// on stdin whole; through {prompt} it is a set-up failure that says so.
TEST_P(WorkerEngine, ALargePromptGoesByFileOrStdinAndNotByArgv) {
  const std::string big(200 * 1024, 'x');
  for (const char* worker : {"bystdin", "byfile"}) {
    SCOPED_TRACE(worker);
    for (const auto& e : fs::directory_iterator(ws()))
      if (e.path().filename().string().starts_with("prompt-")) fs::remove(e.path());
    RunOutcome out = run(fmt::format(R"(name: w
steps:
  - {{id: s, executor: "worker:{}", goal: summarise, inputs: {{text: "{}"}}}}
)",
                                     worker, big));
    EXPECT_EQ(out.status, RunStatus::Succeeded) << step(out.run_id, "s").reason;
    EXPECT_EQ(step(out.run_id, "s").result, "done: summarise");
    const std::string got = read_file(ws() / "prompt-1.txt");
    EXPECT_NE(got.find(big), std::string::npos) << "the whole prompt reached the worker";
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "store"))
      EXPECT_NE(e.path().extension(), ".prompt") << e.path() << ": the prompt file outlived its attempt";
  }
  RunOutcome out = run(fmt::format(R"(name: w
steps:
  - {{id: s, executor: "worker:text", goal: summarise, inputs: {{text: "{}"}}, attempts: 3}}
)",
                                   big));
  EXPECT_EQ(out.status, RunStatus::Failed);
  auto a = attempts(out.run_id, "s");
  ASSERT_EQ(a.size(), 1u) << "a set-up failure is not retried";
  EXPECT_EQ(a[0].ending, AttemptEnding::SetupFailed);
  EXPECT_NE(a[0].reason.find("more than the 131071 Linux passes in one; give the worker the prompt as a file "
                             "({prompt_file} in argv) or on its standard input (stdin: prompt)"),
            std::string::npos)
      << a[0].reason;
}

INSTANTIATE_TEST_SUITE_P(Backends, WorkerEngine, ::testing::ValuesIn(orch::testing::kEngineBackends),
                         orch::testing::engine_backend_name);
INSTANTIATE_TEST_SUITE_P(SqliteOnly, WorkerEngineSqlite, ::testing::Values("sqlite"),
                         orch::testing::engine_backend_name);

}  // namespace
}  // namespace orch
