// RUN.yaml: reading (every problem with its line), the schema as a net, the
// pre-flight's resolution, the stored form, the estimate.
#include "flows/review_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/testing.h"
#include "util/json_schema.h"
#include "util/read_file.h"
#include "util/yaml_json.h"
#include "util/yaml_reader.h"

namespace orch::flows {
namespace {

using orch::testing::source_dir;
using orch::testing::TempDir;
using orch::testing::write_file;

TEST(ReviewConfigTest, DefaultsRolesAndFields) {
  auto c = parse_review_config(
      "artifacts: a.md\n"
      "lenses:\n"
      "  - {name: style, prompt: p.md, model: fast}\n"
      "judge: off\n"
      "fixer: {worker: coder}\n"
      "verify: make check\n"
      "fields: {journal: JASA, year: 2026}\n",
      "dir/RUN.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->name, "RUN");
  EXPECT_EQ(c->artifacts, std::vector<std::string>{"a.md"});
  ASSERT_EQ(c->lenses.size(), 1u);
  EXPECT_EQ(c->lenses[0].role.executor, "llm:fast");
  EXPECT_FALSE(c->judge);
  ASSERT_TRUE(c->fixer);
  EXPECT_EQ(c->fixer->executor, "worker:coder");
  EXPECT_EQ(c->reviewers, 1);
  EXPECT_EQ(c->max_rounds, 5);
  EXPECT_EQ(c->dry_rounds, 2);
  EXPECT_EQ(c->spend_cap_tokens, 500000);
  EXPECT_EQ(c->max_parallel, 4);
  EXPECT_TRUE(c->fresh_context);
  EXPECT_EQ(c->fields["year"], "2026");
  EXPECT_EQ(c->line_of("verify"), 6);
}

TEST(ReviewConfigTest, EveryProblemIsReportedWithItsLine) {
  auto c = parse_review_config(
      "artifacts: []\n"
      "lenses:\n"
      "  - {name: a, prompt: p.md, worker: w, model: m}\n"
      "  - {name: a, prompt: q.md, worker: w}\n"
      "judge: {worker: j, model: m}\n"
      "reviewers: 0\n"
      "max_rounds: 2\n"
      "dry_rounds: 3\n"
      "colour: red\n",
      "RUN.yaml");
  ASSERT_FALSE(c);
  const std::string& m = c.error().message;
  EXPECT_NE(m.find("RUN.yaml:1: artifacts: list at least one file"), std::string::npos) << m;
  EXPECT_NE(m.find("RUN.yaml:3: lenses[0]: give 'worker' or 'model', not both"), std::string::npos) << m;
  EXPECT_NE(m.find("RUN.yaml:4: lenses[1].name: lens 'a' is named twice"), std::string::npos) << m;
  EXPECT_NE(m.find("RUN.yaml:5: judge: give 'worker' or 'model', not both"), std::string::npos) << m;
  EXPECT_NE(m.find("RUN.yaml:6: reviewers"), std::string::npos) << m;
  EXPECT_NE(m.find("RUN.yaml:9:"), std::string::npos) << m;
}

TEST(ReviewConfigTest, TheShippedExampleReadsAndMatchesThePublishedSchema) {
  const auto path = source_dir() / "examples" / "review" / "RUN.yaml";
  auto c = load_review_config(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->lenses.size(), 2u);
  EXPECT_EQ(c->verify, "cc -fsyntax-only examples/review/parser.c");
  auto schema = JsonSchema::load_file((source_dir() / "schemas" / "review-config.schema.json").string());
  ASSERT_TRUE(schema) << schema.error().message;
  auto text = read_file_text(path);
  ASSERT_TRUE(text);
  auto doc = detail::read_yaml_doc(*text);
  ASSERT_TRUE(doc);
  auto problems = schema->validate(yaml_to_json(*doc));
  EXPECT_TRUE(problems.empty()) << problems[0];
  // The schema refuses what the reader refuses.
  EXPECT_FALSE(
      schema->validate(nlohmann::json{{"artifacts", "a"}, {"lenses", nlohmann::json::array()}}).empty());
  EXPECT_FALSE(
      schema->validate(nlohmann::json{{"artifacts", "a"}, {"lenses", {{{"name", "x"}, {"prompt", "p"}}}}})
          .empty())
      << "a lens needs a worker or a model";
}

TEST(ReviewConfigTest, ResolveFillsFieldsFindsWorkersAndKeepsTheResultForResume) {
  TempDir d;
  write_file(d / "a.md", "hello\n");
  write_file(d / "p.md", "Check {{lens}} for {{journal}}.\n");
  write_file(d / "w.yaml", "workers:\n  coder:\n    argv: [echo, \"{prompt}\"]\n    reserve_tokens: 2000\n");
  write_file(d / "RUN.yaml",
             "artifacts: [./sub/../a.md]\nlenses:\n  - {name: style, prompt: p.md, worker: coder}\n"
             "workers: w.yaml\nfields: {journal: JASA}\nmax_rounds: 3\n");
  auto c = load_review_config(d / "RUN.yaml");
  ASSERT_TRUE(c) << c.error().message;
  auto r = resolve_review_config(*c, d.path(), "", "");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->artifacts, std::vector<std::string>{"a.md"});
  EXPECT_EQ(r->lenses[0].prompt, "Check style for JASA.\n");
  EXPECT_EQ(r->rubric.deductions[0], 25) << "the shipped rubric";

  auto back = review_config_from_json(review_config_json(*r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(review_config_json(*back), review_config_json(*r));

  // One reviewer call: (prompt + 2000 + 6 bytes of artifact) / 4, at least the
  // worker's reserve_tokens (2000); no price for a worker.
  const CostEstimate est = estimate_review_cost(*r, d.path());
  EXPECT_EQ(est.tokens_per_round, 2000);
  EXPECT_EQ(est.tokens_total, 6000);
  EXPECT_FALSE(est.usd_total);
  EXPECT_NE(preflight_report(*r, est, d.path()).find("style          worker:coder"), std::string::npos);
}

// `{{{{` is a literal `{{` (as the plan's `$${` is a literal `${`): a prompt can
// show a template's `{{name}}` without orch taking it for a field to fill.
TEST(ReviewConfigTest, FourBracesInALensPromptAreALiteralTwo) {
  TempDir d;
  write_file(d / "a.md", "hello\n");
  write_file(d / "p.md",
             "Jinja writes {{{{ user }} and {{{{lens}}; this is {{lens}} for {{journal}}.\n"
             "{{{{{{lens}} {{{{{{{{ {{ no close\n");
  write_file(d / "RUN.yaml",
             "artifacts: [a.md]\nlenses:\n  - {name: style, prompt: p.md, worker: coder}\n"
             "workers: w.yaml\nfields: {journal: JASA}\n");
  write_file(d / "w.yaml", "workers:\n  coder:\n    argv: [echo, \"{prompt}\"]\n");
  auto c = load_review_config(d / "RUN.yaml");
  ASSERT_TRUE(c) << c.error().message;
  auto r = resolve_review_config(*c, d.path(), "", "");
  ASSERT_TRUE(r) << "' user' is no field to resolve: " << r.error().message;
  EXPECT_EQ(r->lenses[0].prompt,
            "Jinja writes {{ user }} and {{lens}}; this is style for JASA.\n"
            "{{style {{{{ {{ no close\n");
}

TEST(ReviewConfigTest, ResolveNamesEveryUnresolvedField) {
  TempDir d;
  write_file(d / "p.md", "For {{journal}} and {{year}}.\n");
  write_file(d / "RUN.yaml",
             "artifacts: [../outside.md]\nlenses:\n  - {name: s, prompt: p.md, model: fast}\n"
             "judge: {model: fast}\nfixer: {worker: coder}\n");
  auto c = load_review_config(d / "RUN.yaml");
  ASSERT_TRUE(c) << c.error().message;
  auto r = resolve_review_config(*c, d.path(), "", "");
  ASSERT_FALSE(r);
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("artifacts: "), std::string::npos) << m;
  EXPECT_NE(m.find("fields.journal: unresolved"), std::string::npos) << m;
  EXPECT_NE(m.find("fields.year: unresolved"), std::string::npos) << m;
  EXPECT_NE(m.find("verifier: unresolved"), std::string::npos) << m;
  EXPECT_NE(m.find("verify: unresolved"), std::string::npos) << m;
  EXPECT_NE(m.find("model 'fast': no models file"), std::string::npos) << m;
}

}  // namespace
}  // namespace orch::flows
