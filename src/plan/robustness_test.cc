// Mangled plans and templates must produce diagnostics, never crashes or
// exceptions: the loader, validator and placeholder parser take untrusted text.
// (A deterministic stand-in for a fuzzer; run it under ASan/UBSan for value.)
#include <gtest/gtest.h>

#include <random>

#include "orch/placeholder.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/testing.h"

namespace orch {
namespace {

const char* kSeeds[] = {
    R"(name: seed
concurrency: 2
defaults: {attempts: 2, timeout: 5s, max_output: 1MiB}
steps:
  - id: a
    run: [echo, "${inputs.x}"]
    inputs: {x: 1, y: [a, {b: c}]}
    post: [exit_zero, {result_contains: ok}, {kind: result_json, schema: {type: object}}]
  - id: b
    deps: [a]
    sh: "echo ${steps.a.json.k.0} #E0 $${HOME}"
    env: {K: "${attempt.number}"}
    writes: [out.txt]
)",
    R"({"steps": [{"id": "a", "sh": "x", "post": [{"file_contains": {"path": "f", "text": "t"}}]},
 {"id": "b", "deps": ["a"], "run": ["echo", "${steps.a.result}"], "budget": {"tokens": 5}}]})",
    R"([{"goal": "g", "deps": [], "inputs": {"cmd": "echo #E0"}, "executor": "shell",
  "postcondition": {"kind": "shell_zero", "cmd": "true"}}, {"goal": "h", "deps": [0], "inputs": null}])",
};

std::string mutate(std::string text, std::mt19937& rng) {
  static const std::string kAlphabet = "{}[]:,-\"'\\$#E.\n \t0123456789abcxyz&*!|>%@`";
  std::uniform_int_distribution<int> edits(1, 6);
  for (int n = edits(rng); n > 0 && !text.empty(); --n) {
    std::uniform_int_distribution<std::size_t> pos(0, text.size() - 1);
    std::uniform_int_distribution<std::size_t> pick(0, kAlphabet.size() - 1);
    switch (rng() % 4) {
      case 0:
        text[pos(rng)] = kAlphabet[pick(rng)];
        break;
      case 1:
        text.insert(pos(rng), 1, kAlphabet[pick(rng)]);
        break;
      case 2:
        text.erase(pos(rng), 1);
        break;
      default: {
        std::size_t at = pos(rng);
        text.insert(at, text.substr(at, std::min<std::size_t>(20, text.size() - at)));
      }
    }
  }
  return text;
}

TEST(Robustness, MangledPlansNeverThrow) {
  testing::TempDir ws;
  ValidateOptions options;
  options.workspace = ws.path();
  std::mt19937 rng(20240601);
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = mutate(kSeeds[i % std::size(kSeeds)], rng);
    const char* name = i % 2 ? "fuzz.json" : "fuzz.yaml";
    LoadResult r;
    ASSERT_NO_THROW(r = parse_plan(text, name)) << text;
    Diagnostics d;
    ASSERT_NO_THROW(d = validate_plan(r.plan, options)) << text;
    if (!r.diagnostics.empty() || !d.empty()) ++rejected;
    for (const auto& diag : r.diagnostics) EXPECT_EQ(diag.file, name);
  }
  EXPECT_GT(rejected, 100) << "the mutations should break most plans";
}

TEST(Robustness, MangledTemplatesNeverThrow) {
  std::mt19937 rng(7);
  RenderContext ctx;
  ctx.step_result = [](const std::string& id) -> std::optional<std::string> {
    if (id == "a") return R"({"k": [1, {"x": "y"}]})";
    return std::nullopt;
  };
  for (int i = 0; i < 3000; ++i) {
    std::string text =
        mutate("pre ${steps.a.json.k.1.x} ${steps.a.result} #E1 $${lit} ${inputs.n} post", rng);
    Expected<Template> t = fail(ErrorCode::Internal, "");
    ASSERT_NO_THROW(t = parse_template(text)) << text;
    if (t) {
      ASSERT_NO_THROW((void)render(*t, ctx)) << text;
    }
  }
}

TEST(Robustness, ArbitraryBytes) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 500; ++i) {
    std::string text(static_cast<std::size_t>(rng() % 200), '\0');
    for (char& c : text) c = static_cast<char>(byte(rng));
    if (i % 3 == 0) text.insert(0, "{");
    ASSERT_NO_THROW((void)parse_plan(text, "bytes.json"));
    ASSERT_NO_THROW((void)parse_plan(text, "bytes.yaml"));
    ASSERT_NO_THROW((void)parse_template(text));
    ASSERT_NO_THROW((void)json_path_value(text, {"a", "0"}));
  }
}

}  // namespace
}  // namespace orch
