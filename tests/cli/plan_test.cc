// Black-box tests of `orch plan` and `orch run --request` (docs/planner.md).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "testing/fake_llm.h"
#include "testing/ledger_view.h"
#include "testing/testing.h"

namespace orch {
namespace {

using nlohmann::json;
using orch::testing::FakeLlmServer;
using orch::testing::orch_binary;
using orch::testing::read_file;
using orch::testing::run_command;
using orch::testing::run_orch;
using orch::testing::spawn_orch;
using orch::testing::TempDir;
using orch::testing::wait_exit;
using orch::testing::wait_for;
using orch::testing::write_file;
namespace fs = std::filesystem;

constexpr const char* kKeyVar = "ORCH_TEST_PLAN_CLI_KEY";

// A models file whose provider is `url` (a closed port when no call is expected).
void write_models(const TempDir& d, const std::string& url) {
  write_file(d / "models.yaml",
             fmt::format("providers:\n  fake: {{api: openai, base_url: \"{}/v1\", api_key_env: {}, "
                         "timeout: 10s}}\nmodels:\n  planner: {{provider: fake, model: plan-test}}\n"
                         "default_model: planner\n",
                         url, kKeyVar));
}

// A step's result in the newest run of the ledger in `dir`, as `orch status
// --json --results` gives it; "(no step)" when it has none.
std::string step_result(const fs::path& dir, const std::string& step) {
  auto found = orch::testing::step_of(orch::testing::run_report(dir, "", {"--results"}), step);
  return found.is_object() ? found["result"].get<std::string>() : "(no step)";
}

TEST(PlanCli, ASingleStepRequestPrintsAValidPlanAndCallsNoModel) {
  TempDir d;
  write_models(d, "http://127.0.0.1:9");
  auto r = run_orch({"plan", "Fix the flaky test in parser_test.cc", "--models", "models.yaml"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("orch plan: single_step: no job signal"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("executor: llm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Fix the flaky test in parser_test.cc"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / ".orch" / "orch.db")) << "no planning call, so no store";
  write_file(d / "p.yaml", r.out);
  auto v = run_orch({"validate", "p.yaml", "--models", "models.yaml"}, d.path());
  EXPECT_EQ(v.exit_code, 0) << v.err << v.out;
}

// Refused before any planning call or run: nothing is recorded, so no ledger is
// made either (an empty .orch/orch.db had been left behind).
TEST(PlanCli, ARunRequestRefusedUpFrontLeavesNoStore) {
  TempDir d;
  auto r = run_orch({"run", "--request", "say hello"}, d.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no models are configured"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d / ".orch")) << "a refused request made a store";
  // A job with no models: the planning call cannot be made, so the store is not
  // opened (it used to be made, empty).
  auto plan = run_orch({"plan", "run the tests then build the docs and deploy"}, d.path());
  EXPECT_EQ(plan.exit_code, 2) << plan.err;
  EXPECT_NE(plan.err.find("no models are configured"), std::string::npos) << plan.err;
  EXPECT_FALSE(fs::exists(d / ".orch")) << "orch plan made a store without a planning call";
}

TEST(PlanCli, ATemplateMatchWritesTheFileAndSaysSoInJson) {
  TempDir d;
  write_models(d, "http://127.0.0.1:9");
  auto r = run_orch({"plan", "Fix the failing tests, then run the linter and commit", "--models",
                     "models.yaml", "--out", "plan.yaml", "--json"},
                    d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out);
  EXPECT_EQ(out["path"], "template");
  EXPECT_EQ(out["template"], "fix-failing-tests");
  EXPECT_EQ(out["trigger"]["signal"], "compound_verbs");
  EXPECT_EQ(out["steps"], 4);
  EXPECT_TRUE(out["planning_runs"].empty());
  EXPECT_EQ(read_file(d / "plan.yaml"), out["plan"].get<std::string>());
  EXPECT_FALSE(fs::exists(d / ".orch" / "orch.db")) << "a template match makes no planning call";
  auto v = run_orch({"validate", "plan.yaml", "--models", "models.yaml"}, d.path());
  EXPECT_EQ(v.exit_code, 0) << v.err << v.out;
  // A file that cannot be written: the system's reason.
  auto nowhere = run_orch({"plan", "Fix the failing tests, then run the linter and commit", "--models",
                           "models.yaml", "--out", "no/such/dir/plan.yaml"},
                          d.path());
  EXPECT_NE(nowhere.exit_code, 0);
  EXPECT_NE(nowhere.err.find("no/such/dir/plan.yaml: cannot write the plan: No such file or directory"),
            std::string::npos)
      << nowhere.err;
}

// Issue 31: template or model is visible before any models file exists, and
// --explain plans nothing: no model call, no store, no plan printed.
TEST(PlanCli, ExplainShowsTemplateOrModelWithoutAModelsFile) {
  TempDir d;
  auto r = run_orch({"plan", "research these five HTTP libraries and write me a comparison", "--explain"},
                    d.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_HAS(r.out, "job        yes: an action on counted items ('these five http libraries')");
  EXPECT_HAS(r.out, "templates  research-and-compare ");
  EXPECT_HAS(r.out, "way        template research-and-compare: its plan filled with the request, no model call");

  auto model = run_orch({"plan", "explain this step by step", "--explain", "--json"}, d.path());
  ASSERT_EQ(model.exit_code, 0) << model.out << model.err;
  json doc = json::parse(model.out);
  EXPECT_EQ(doc["way"], "model");
  EXPECT_EQ(doc["trigger"]["signal"], "job_phrase");
  EXPECT_EQ(doc["trigger"]["phrase"], "step by step");
  EXPECT_FALSE(doc["templates"].empty());
  for (const auto& t : doc["templates"]) EXPECT_EQ(t["matches"], false) << t.dump();
  EXPECT_HAS(doc["explanation"].get<std::string>(), "makes one planning call");

  auto one = run_orch({"plan", "fix the CI workflow file", "--explain"}, d.path());
  ASSERT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_HAS(one.out, "job        no: no job signal");
  EXPECT_HAS(one.out, "way        single_step");
  EXPECT_FALSE(fs::exists(d / ".orch" / "orch.db")) << "--explain opens no store";
}

TEST(PlanCli, BadTemplatesAndBadInputExitTwo) {
  TempDir d;
  write_models(d, "http://127.0.0.1:9");
  auto missing = run_orch({"plan", "x", "--templates", "nope"}, d.path());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope: no such templates folder"), std::string::npos) << missing.err;

  write_file(d / ".orch" / "templates" / "fix-failing-tests.yaml",
             "x-template:\n  match: {phrases: [failing tests], keywords: [fix]}\nsteps:\n"
             "  - {id: a, deps: [ghost], executor: builtin:echo, inputs: {text: \"{{request}}\"}}\n");
  auto invalid = run_orch(
      {"plan", "Fix the failing tests, then run the linter and commit", "--models", "models.yaml"}, d.path());
  EXPECT_EQ(invalid.exit_code, 2);
  EXPECT_NE(invalid.err.find(".orch/templates/fix-failing-tests.yaml:4: step 'a'"), std::string::npos)
      << invalid.err;

  write_file(d / ".orch" / "templates" / "fix-failing-tests.yaml",
             "x-template:\n  match: {keywords: [a], threshold: 1}\n"
             "steps: [{id: a, run: [echo, {{request}}]}]\n");
  auto unquoted = run_orch({"plan", "anything", "--models", "models.yaml"}, d.path());
  EXPECT_EQ(unquoted.exit_code, 2);
  EXPECT_NE(
      unquoted.err.find("fix-failing-tests.yaml:3: the slot '{{request}}' must be inside a double-quoted"),
      std::string::npos)
      << unquoted.err;
  fs::remove_all(d / ".orch" / "templates");

  auto executor = run_orch({"plan", "do it", "--executor", "shel", "--models", "models.yaml"}, d.path());
  EXPECT_EQ(executor.exit_code, 2);
  EXPECT_NE(executor.err.find("unknown executor 'shel'"), std::string::npos) << executor.err;
}

TEST(PlanCli, AModelPlanIsValidatedAndItsCallRecorded) {
  FakeLlmServer server("sk-plan-cli-123456");
  ASSERT_TRUE(server.started());
  TempDir d;
  write_models(d, server.url());
  const std::string plan =
      R"({"steps": [{"id": "one", "executor": "builtin:echo", "inputs": {"text": "1"}}, )"
      R"({"id": "two", "deps": ["one"], "executor": "builtin:echo", "inputs": {"text": "${steps.one.result}2"}}]})";
  auto r = run_orch(
      {"plan", "For each module, lint it [[json: " + plan + "]]", "--models", "models.yaml", "--json"},
      d.path(), {{kKeyVar, server.api_key()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out);
  EXPECT_EQ(out["path"], "model") << out["why"];
  EXPECT_EQ(out["steps"], 2);
  ASSERT_EQ(out["planning_runs"].size(), 1u);
  auto runs = run_orch({"runs", "--json"}, d.path());
  EXPECT_NE(runs.out.find(out["planning_runs"][0].get<std::string>()), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find("orch planner"), std::string::npos) << runs.out;

  // Without the key the planning call fails: the fallback plan, and the reason.
  auto fallback = run_orch({"plan", "For each module, lint it", "--models", "models.yaml"}, d.path());
  ASSERT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_NE(fallback.err.find("orch plan: fallback:"), std::string::npos) << fallback.err;
  EXPECT_NE(fallback.err.find("the planning call failed"), std::string::npos) << fallback.err;
}

// docs/planner.md: when the planning call fails, the stderr line says why (the
// failed step's own reason), not only that step 'plan' failed.
TEST(PlanCli, AFailedPlanningCallSaysWhyItFailed) {
  TempDir d;
  write_models(d, "http://127.0.0.1:9");
  auto r = run_orch({"plan", "1. list files\n2. count them", "--models", "models.yaml"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "orch plan: fallback:");
  EXPECT_HAS(r.err, "the planning call failed (run ");
  EXPECT_HAS(r.err, fmt::format("provider 'fake' takes its key from ${}, which is not set", kKeyVar));
  EXPECT_HAS(r.out, "id: request");
}

// Ctrl-C during a planning call stops it like a run: exit 130, the call's run
// recorded interrupted (not left "running"), and no fallback plan printed.
TEST(PlanCli, AnInterruptDuringAPlanningCallStopsIt) {
  // A provider that takes the connection and never answers.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  TempDir d;
  write_models(d, fmt::format("http://127.0.0.1:{}", ntohs(addr.sin_port)));
  ::setenv(kKeyVar, "sk-never-used-123456", 1);
  pid_t pid = spawn_orch({"plan", "1. list files\n2. count them", "--models", "models.yaml"}, d.path(),
                         d / "out.txt");
  ASSERT_TRUE(wait_for(
      [&] { return orch::testing::all_attempts(orch::testing::run_report(d.path())).size() == 1; }, 10000));
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_exit(pid), 130);
  ::unsetenv(kKeyVar);
  ::close(listener);
  const std::string out = read_file(d / "out.txt");
  EXPECT_HAS(out, "interrupted: the planning call (run ");
  EXPECT_EQ(out.find("fallback"), std::string::npos) << out;
  EXPECT_EQ(orch::testing::runs_where(d.path(), "status", "interrupted"), 1) << out;
}

// The shipped fix-failing-tests template runs the suite the request names, before
// and after the fix, and the run is done only when the suite passes afterwards
// (its scripts once read $ORCH_IN_TEST_COMMAND, always empty: the input is
// `test_command`, so the suite never ran and every fix "passed").
TEST(PlanCli, TheFixFailingTestsTemplateHoldsTheFixToTheSuite) {
  FakeLlmServer server("sk-template-cli-123456");
  ASSERT_TRUE(server.started());
  const auto request_creating = [](const std::string& file) {
    return "Fix the failing tests, then run the linter and commit.\n[[reply: diff --git a/" + file + " b/" +
           file + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + file + "\n@@ -0,0 +1 @@\n+fixed\n]]";
  };
  const auto run_in = [&](const TempDir& d, const std::string& file) {
    write_models(d, server.url());
    write_file(d / "Makefile", "test:\n\t@test -f fixed.txt || { echo 'fixed.txt is missing'; exit 1; }\n");
    return run_orch(
        {"run", "--request", request_creating(file), "--approve-medium", "--models", "models.yaml", "--json"},
        d.path(), {{kKeyVar, server.api_key()}});
  };

  TempDir wrong;
  auto r = run_in(wrong, "other.txt");
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("template fix-failing-tests"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(wrong / "other.txt")) << "the patch was applied";
  const std::string before = step_result(wrong.path(), "run_tests");
  EXPECT_NE(before.find("fixed.txt is missing"), std::string::npos) << before;
  EXPECT_NE(before.find("[exit status: 2]"), std::string::npos) << before;
  json report = json::parse(r.out);
  EXPECT_EQ(report["run"]["status"], "failed") << r.out;
  bool rerun_failed = false;
  for (const auto& s : report["steps"])
    if (s["id"] == "rerun_tests") rerun_failed = s["status"] == "failed";
  EXPECT_TRUE(rerun_failed) << r.out;

  TempDir right;
  auto ok = run_in(right, "fixed.txt");
  EXPECT_EQ(ok.exit_code, 0) << ok.err << ok.out;
  EXPECT_EQ(json::parse(ok.out)["run"]["status"], "succeeded") << ok.out;
}

TEST(PlanCli, RunRequestPlansThenRuns) {
  TempDir d;
  const std::string request = "Say \"hello\" to ${USER}";
  auto r = run_orch({"run", "--request", request, "--executor", "builtin:echo", "--json"}, d.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("orch plan: single_step:"), std::string::npos) << r.err;
  json report = json::parse(r.out);
  EXPECT_EQ(report["run"]["status"], "succeeded") << r.out;
  ASSERT_EQ(report["steps"].size(), 1u);
  // The result is the request as written: "${USER}" arrived as text (escaped in
  // the plan as "$${USER}"), not as a placeholder.
  EXPECT_EQ(step_result(d.path(), "request"), request);

  auto neither = run_orch({"run"}, d.path());
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.err.find("run needs a PLAN file or --request TEXT\nRun `orch run --help` for usage.\n"),
            std::string::npos)
      << neither.err;
  write_file(d / "p.yaml", "steps: [{id: a, run: [true]}]\n");
  auto both = run_orch({"run", "p.yaml", "--request", "x"}, d.path());
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

// An llm step's completion is kept in its attempt's ledger row, not in a file
// of its own; `orch logs` prints it all the same, and the run report says where
// each stream is.
// The open-files limit caps what is in flight by what each attempt holds: an
// llm call its connection (3 counted), not a spawned process's 6. Under a limit
// of 100 (36 left after orch's reserve), 10 calls run at once without a cap;
// with -j 10 for shell steps the run would be capped at 6.
TEST(LlmCli, LlmCallsAreCappedByTheirOwnDescriptorsNotAProcesss) {
  FakeLlmServer server("sk-llm-cli-123456");
  ASSERT_TRUE(server.started());
  TempDir d;
  write_file(d / "models.yaml",
             fmt::format("providers:\n  fake: {{api: openai, base_url: \"{}/v1\", api_key_env: {}, "
                         "concurrency: 10}}\nmodels:\n  m: {{provider: fake, model: m}}\ndefault_model: m\n",
                         server.url(), kKeyVar));
  std::string plan = "steps:\n";
  for (int i = 0; i < 10; ++i)
    plan += fmt::format("  - {{id: ask{}, executor: llm, inputs: {{prompt: \"[[sleep: 0.5]] hi\"}}}}\n", i);
  write_file(d / "p.yaml", plan);
  auto r = run_command(
      {"/bin/sh", "-c", "ulimit -n 100 && exec \"$0\" run p.yaml -j 10 --models models.yaml", orch_binary()},
      d.path(), {{kKeyVar, server.api_key()}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string calls = orch::testing::run_id_in(r.err);
  EXPECT_EQ(orch::testing::run_events(d.path(), calls, "concurrency_capped").size(), 0u);
  std::int64_t last_start = 0;
  std::int64_t first_end = std::numeric_limits<std::int64_t>::max();
  const auto attempts = orch::testing::all_attempts(orch::testing::run_report(d.path(), calls));
  ASSERT_GE(attempts.size(), 10u);
  for (const auto& a : attempts) {
    last_start = std::max(last_start, orch::testing::epoch_ms(a["started_at"].get<std::string>()));
    first_end = std::min(first_end, orch::testing::epoch_ms(a["finished_at"].get<std::string>()));
  }
  EXPECT_LT(last_start, first_end) << "all ten calls were in flight at once";

  // Shell steps under the same limit are capped at 6, and the run says so.
  std::string shell = "steps:\n";
  for (int i = 0; i < 10; ++i) shell += fmt::format("  - {{id: s{}, sh: 'sleep 0.3'}}\n", i);
  write_file(d / "s.yaml", shell);
  auto s = run_command({"/bin/sh", "-c", "ulimit -n 100 && exec \"$0\" run s.yaml -j 10", orch_binary()},
                       d.path());
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
  const auto capped =
      orch::testing::run_events(d.path(), orch::testing::run_id_in(s.err), "concurrency_capped");
  ASSERT_FALSE(capped.empty());
  EXPECT_EQ(capped[0]["data"]["used"], 6) << capped.dump();
}

TEST(LlmCli, ACompletionIsInTheLedgerAndLogsPrintsIt) {
  FakeLlmServer server("sk-llm-cli-123456");
  ASSERT_TRUE(server.started());
  TempDir d;
  write_models(d, server.url());
  write_file(d / "p.yaml",
             "on_failure: continue\nsteps:\n"
             "  - {id: ask, executor: llm, inputs: {prompt: \"[[reply: forty-two]]\"}}\n"
             "  - {id: bad, executor: llm, attempts: 1, inputs: {prompt: \"[[status: 400]]\"}}\n");
  auto r = run_orch({"run", "p.yaml", "--models", "models.yaml", "--json"}, d.path(),
                    {{kKeyVar, server.api_key()}});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  json report = json::parse(r.out);
  const std::string id = report["run"]["id"];
  std::map<std::string, json> attempts;
  for (const auto& step : report["steps"]) attempts[step["id"]] = step["attempts"].back();
  ASSERT_EQ(attempts.size(), 2u) << r.out;
  EXPECT_EQ(attempts["ask"]["stdout"]["in_ledger"], true) << r.out;
  EXPECT_EQ(attempts["ask"]["stdout"]["path"], "") << r.out;
  EXPECT_EQ(attempts["ask"]["stdout"]["bytes"], 9) << r.out;
  EXPECT_EQ(attempts["bad"]["stderr"]["in_ledger"], true) << r.out;
  // No output file was made for either call.
  for (const auto& entry : fs::recursive_directory_iterator(d / ".orch" / "runs"))
    EXPECT_FALSE(entry.is_regular_file()) << entry.path();

  auto logs = run_orch({"logs", id, "ask"}, d.path());
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, "forty-two");
  auto err = run_orch({"logs", id, "bad", "--stderr"}, d.path());
  EXPECT_EQ(err.exit_code, 0) << err.err;
  EXPECT_NE(err.out.find("error"), std::string::npos) << err.out;  // the provider's error body
  auto none = run_orch({"logs", id, "bad"}, d.path());
  EXPECT_EQ(none.out, "");
}

}  // namespace
}  // namespace orch
