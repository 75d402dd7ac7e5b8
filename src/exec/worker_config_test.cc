// The workers file: every problem at once, as FILE: FIELD: message.
#include "exec/worker_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "exec/worker_executor.h"
#include "testing/testing.h"

namespace orch {
namespace {

TEST(WorkerConfig, ReadsAWorkerAndFillsItsSlotsAsSingleArguments) {
  auto c = parse_worker_catalog(R"(workers:
  claude:
    argv: [claude, -p, "{prompt}", --model, "{model}", "--cwd={workspace}"]
    model: sonnet
    output: json
    result: result
    usage: {tokens_in: usage.input_tokens, cost_usd: total_cost_usd}
    timeout: 30m
    stall_after: 5m
    env: {NO_COLOR: 1}
)",
                                "w.yaml");
  ASSERT_TRUE(c) << c.error().message;
  const WorkerConfig* w = c->find("worker:claude");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->output, WorkerOutput::Json);
  EXPECT_EQ(w->stall_after, std::chrono::minutes(5));
  EXPECT_EQ(w->env.at("NO_COLOR"), "1");
  AttemptSpec spec;
  spec.goal = "fix it; rm -rf / {model}";
  spec.workspace = "/w s";
  spec.inputs = {{"model", "opus"}};
  auto argv = fill_worker_argv(*w, spec);
  EXPECT_EQ(argv, (std::vector<std::string>{"claude", "-p", "fix it; rm -rf / {model}", "--model", "opus",
                                            "--cwd=/w s"}))
      << "a slot's value is never re-scanned for slots nor split";
}

TEST(WorkerConfig, EveryProblemIsListedWithItsField) {
  auto c = parse_worker_catalog(R"(workers:
  a:
    argv: [agent, "{promt}"]
    output: xml
    stal_after: 5m
  b:
    argv: [agent, "{prompt}"]
    output: json
    timeout: 5x
  c:
    argv: agent
)",
                                "w.yaml");
  ASSERT_FALSE(c);
  const std::string& m = c.error().message;
  for (const char* want :
       {"w.yaml: workers.a.argv.1: unknown slot '{promt}'", "(did you mean 'prompt'?)",
        "w.yaml: workers.a.argv: has no {prompt} or {prompt_file} slot, and stdin is not prompt",
        "w.yaml: workers.a.output: 'xml' is not text, json or jsonl",
        "w.yaml: workers.a.stal_after: unknown key (did you mean 'stall_after'?)",
        "w.yaml: workers.b.result: missing",
        "w.yaml: workers.b.timeout:", "w.yaml: workers.c.argv: must be a non-empty list"})
    EXPECT_NE(m.find(want), std::string::npos) << "missing '" << want << "' in:\n" << m;
}

// A worker name is written `worker:NAME` in a plan: one with a space, a colon or
// a leading '-' is refused as tool names are, and a good one is not.
TEST(WorkerConfig, AWorkerNameIsCheckedLikeAToolName) {
  for (const char* bad : {"my worker", "w:x", "-w", "_w", "w/x"}) {
    auto c = parse_worker_catalog(
        fmt::format("workers:\n  \"{}\":\n    argv: [agent, \"{{prompt}}\"]\n", bad), "w.yaml");
    ASSERT_FALSE(c) << bad;
    EXPECT_NE(
        c.error().message.find(fmt::format("w.yaml: workers.{}: a worker name is letters, digits", bad)),
        std::string::npos)
        << c.error().message;
  }
  for (const char* good : {"claude", "codex-2", "a.b_c", "9lives"}) {
    auto c = parse_worker_catalog(fmt::format("workers:\n  {}:\n    argv: [agent, \"{{prompt}}\"]\n", good),
                                  "w.yaml");
    EXPECT_TRUE(c) << good << ": " << c.error().message;
  }
}

// The file is read by orch's YAML reader: merge keys work, and a cyclic alias
// is refused with its line (a reader that shares an anchor's node with its
// aliases would recurse until the stack ran out).
TEST(WorkerConfig, MergeKeysWorkAndACyclicAliasIsRefused) {
  auto c = parse_worker_catalog(
      "workers:\n  a: &a\n    argv: [agent, \"{prompt}\"]\n    timeout: 5m\n  b:\n    <<: *a\n    timeout: "
      "9m\n",
      "w.yaml");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->workers.size(), 2u);
  EXPECT_EQ(c->workers.at("b").argv, c->workers.at("a").argv);
  EXPECT_NE(c->workers.at("b").timeout, c->workers.at("a").timeout);
  auto cyclic =
      parse_worker_catalog("workers:\n  a: &a\n    argv: [agent, \"{prompt}\"]\n    <<: *a\n", "w.yaml");
  ASSERT_FALSE(cyclic);
  EXPECT_EQ(cyclic.error().message, "w.yaml:4: YAML syntax error: alias '*a' is inside the node it names");
}

TEST(WorkerConfig, JsonPathsWalkObjectsAndArrays) {
  auto doc = nlohmann::json::parse(R"({"a": {"b": [10, {"c": "x"}]}})");
  ASSERT_NE(json_at_path(doc, "a.b.1.c"), nullptr);
  EXPECT_EQ(*json_at_path(doc, "a.b.1.c"), "x");
  EXPECT_EQ(*json_at_path(doc, "a.b.0"), 10);
  EXPECT_EQ(json_at_path(doc, "a.b.2"), nullptr);
  EXPECT_EQ(json_at_path(doc, "a.x"), nullptr);
  EXPECT_EQ(json_at_path(doc, "a.b.c"), nullptr);
}

TEST(WorkerConfig, ShippedTemplatesParse) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(testing::source_dir() / "templates" / "workers")) {
    // The workers files; templates/workers/mcp/ holds the agents' MCP configuration (docs/mcp.md).
    if (!entry.is_regular_file()) continue;
    ++files;
    auto c = load_worker_catalog(entry.path());
    EXPECT_TRUE(c) << entry.path() << ": " << (c ? "" : c.error().message);
  }
  EXPECT_GE(files, 1);
}

// The shipped templates load, and carry what the CLIs need headless: the prompt
// by stdin or file where the CLI takes it so (one argument is at most 128 KiB),
// claude's error field and cache tokens, codex's sandbox for a workspace.
TEST(WorkerConfig, TheShippedTemplatesLoadWithWhatEachCliNeedsHeadless) {
  auto c = load_worker_catalog(orch::testing::source_dir() / "templates" / "workers" / "agents.yaml");
  ASSERT_TRUE(c) << c.error().message;
  const WorkerConfig* claude = c->find("worker:claude");
  ASSERT_NE(claude, nullptr);
  EXPECT_TRUE(claude->prompt_on_stdin);
  EXPECT_EQ(claude->error_path, "is_error");
  EXPECT_EQ(claude->error_message_path, "result");
  EXPECT_EQ(claude->cache_read_path, "usage.cache_read_input_tokens");
  EXPECT_EQ(claude->cache_write_path, "usage.cache_creation_input_tokens");
  const WorkerConfig* codex = c->find("worker:codex");
  ASSERT_NE(codex, nullptr);
  const std::string argv = fmt::format("{}", fmt::join(codex->argv, " "));
  EXPECT_NE(argv.find("--sandbox workspace-write"), std::string::npos) << argv;
  EXPECT_NE(argv.find("--skip-git-repo-check"), std::string::npos) << argv;
  EXPECT_TRUE(codex->prompt_on_stdin);
  EXPECT_EQ(codex->argv.back(), "-") << "codex exec reads its prompt from stdin when it is '-'";
  EXPECT_EQ(c->find("worker:gemini")->error_path, "error");
  EXPECT_TRUE(worker_needs_prompt_file(*c->find("worker:aider")));
}

// `stdin` is prompt or none; a worker told its task no way at all is refused.
TEST(WorkerConfig, StdinIsPromptOrNoneAndTheTaskMustReachTheWorker) {
  auto bad = parse_worker_catalog(R"(workers:
  a: {argv: [agent], stdin: promt}
  b: {argv: [agent, "@{prompt_file}"], output: text, error: is_error}
  c: {argv: [agent, "{prompt}"], output: json, result: r, error_message: result}
)",
                                  "w.yaml");
  ASSERT_FALSE(bad);
  for (const char* want :
       {"w.yaml: workers.a.stdin: 'promt' is not prompt or none (did you mean 'prompt'?)",
        "w.yaml: workers.a.argv: has no {prompt} or {prompt_file} slot, and stdin is not prompt",
        "w.yaml: workers.b.error: only for output json or jsonl",
        "w.yaml: workers.c.error_message: needs 'error'"})
    EXPECT_NE(bad.error().message.find(want), std::string::npos) << want << "\n" << bad.error().message;
  auto good = parse_worker_catalog("workers:\n  a: {argv: [agent, -], stdin: prompt}\n", "w.yaml");
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_TRUE(good->find("worker:a")->prompt_on_stdin);
}

}  // namespace
}  // namespace orch
