// Plan templates: the x-template header, slots, whole-word matching, and the
// shipped library (every shipped template renders to a valid plan).
#include "flows/plan_template.h"

#include <gtest/gtest.h>

#include "exec/llm_executor.h"
#include "flows/embedded_files.h"
#include "orch/engine.h"
#include "orch/placeholder.h"
#include "orch/plan_loader.h"
#include "orch/validate.h"
#include "testing/testing.h"

namespace orch::flows {
namespace {

using orch::testing::TempDir;
using orch::testing::write_file;

constexpr const char* kTemplate = R"(x-template:
  description: say it
  match:
    phrases: [say hello]
    keywords: [greet, hello]
    threshold: 3
steps:
  - id: say
    executor: builtin:echo
    inputs: {text: "Asked: {{request}} / {{items}}"}
)";

std::string error_of(std::string_view text, const std::string& file = "t.yaml") {
  auto t = parse_plan_template(text, file);
  return t ? "" : t.error().message;
}

TEST(PlanTemplateTest, ReadsTheHeader) {
  auto t = parse_plan_template(kTemplate, "dir/greet.yaml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->name, "greet");
  EXPECT_EQ(t->description, "say it");
  EXPECT_EQ(t->match.phrases, (std::vector<std::string>{"say hello"}));
  EXPECT_EQ(t->match.keywords, (std::vector<std::string>{"greet", "hello"}));
  EXPECT_EQ(t->match.threshold, 3);
}

TEST(PlanTemplateTest, MatchesWholeWordsOnly) {
  auto t = parse_plan_template(kTemplate, "greet.yaml");
  ASSERT_TRUE(t);
  TemplateMatch m = score_template(*t, "Please say hello and greet the team");
  EXPECT_EQ(m.score, 4);  // phrase 2 + greet 1 + hello 1
  EXPECT_EQ(score_template(*t, "sayhello, greeting, hellos, Othello").score, 0);
  EXPECT_EQ(score_template(*t, "say, hello").score, 1);  // a phrase is consecutive words: "hello" only
  TemplateLibrary lib;
  lib.add(*t);
  EXPECT_TRUE(lib.best_match("say hello to Bob"));
  EXPECT_FALSE(lib.best_match("hello"));  // 1 < 3
}

TEST(PlanTemplateTest, SlotsAreFilledAsTextNeverAsYamlOrPlaceholders) {
  auto t = parse_plan_template(kTemplate, "greet.yaml");
  ASSERT_TRUE(t);
  const std::string request = "say \"hi\": ${HOME} #x\n- [a] 'b' \\ end";
  std::string text = render_template(*t, SlotValues{request, {"one", "two"}});
  LoadResult loaded = parse_plan(text, "greet.yaml");
  ASSERT_TRUE(loaded.diagnostics.empty()) << loaded.diagnostics.front().to_string();
  ASSERT_EQ(loaded.plan.steps.size(), 1u);
  EXPECT_EQ(loaded.plan.steps[0].inputs["text"],
            "Asked: say \"hi\": $${HOME} #x\n- [a] 'b' \\ end / - one\n- two");
  EXPECT_EQ(loaded.plan.steps[0].loc.line, 8) << "the rendered plan keeps the template's line numbers";
  // Without items, {{items}} is the request.
  std::string plain = render_template(*t, SlotValues{"x", {}});
  EXPECT_NE(plain.find("Asked: x / x"), std::string::npos) << plain;
}

TEST(PlanTemplateTest, ASlotOutsideADoubleQuotedStringIsRefused) {
  std::string bad = kTemplate;
  bad += "  - {id: b, executor: builtin:echo, inputs: {text: '{{request}}'}}\n";
  bad += "  - id: c\n    executor: builtin:echo\n    inputs:\n      text: plain {{request}}\n";
  std::string e = error_of(bad, "bad.yaml");
  EXPECT_NE(e.find("bad.yaml:11: the slot '{{request}}' must be inside a double-quoted string"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("bad.yaml:15: the slot '{{request}}'"), std::string::npos) << e;
}

TEST(PlanTemplateTest, HeaderProblemsNameTheFileAndLine) {
  EXPECT_NE(error_of("steps: [{id: a, run: [true]}]\n").find("t.yaml:1: not a template: no 'x-template:'"),
            std::string::npos);
  std::string unknown_slot = std::string(kTemplate) + "x-note: \"{{reqest}}\"\n";
  EXPECT_NE(error_of(unknown_slot).find("t.yaml:11: unknown slot '{{reqest}}' (did you mean 'request'?)"),
            std::string::npos)
      << error_of(unknown_slot);
  EXPECT_NE(error_of("x-template:\n  match: {keywords: [a], threshold: 5}\nsteps: []\n")
                .find("t.yaml:2: x-template.match: can never match"),
            std::string::npos);
  EXPECT_NE(error_of("x-template:\n  match: {keyword: [a]}\nsteps: []\n")
                .find("unknown key 'keyword' (did you mean 'keywords'?)"),
            std::string::npos);
  EXPECT_NE(error_of("x-template:\n  match: {keywords: [two words]}\nsteps: []\n").find("put it in phrases"),
            std::string::npos);
  // YAML's own problems name the line too.
  const std::string broken = error_of("x-template:\n  description: d\n  match: {keywords: [a]\nsteps: []\n");
  EXPECT_NE(broken.find("t.yaml:4: not valid YAML: did not find expected ',' or '}'"), std::string::npos)
      << broken;
  const std::string twice = error_of(
      "x-template:\n  match: {keywords: [a]}\n  description: d\n  match: {keywords: [b]}\nsteps: []\n");
  EXPECT_NE(twice.find("t.yaml:4: x-template: key 'match' is written twice in one mapping (first at line 2)"),
            std::string::npos)
      << twice;
}

TEST(PlanTemplateTest, UserTemplatesOverrideShippedOnesByName) {
  TempDir dir;
  write_file(dir / "fix-failing-tests.yaml", kTemplate);
  write_file(dir / "zz-new.yaml", kTemplate);
  write_file(dir / "notes.txt", "not a template");
  auto lib = TemplateLibrary::load(dir.path());
  ASSERT_TRUE(lib) << lib.error().message;
  const PlanTemplate* t = lib->find("fix-failing-tests");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->file, (dir / "fix-failing-tests.yaml").string());
  EXPECT_NE(lib->find("zz-new"), nullptr);
  EXPECT_EQ(lib->templates().size(), TemplateLibrary::shipped().templates().size() + 1);
  write_file(dir / "broken.yaml", "x-template: [\n");
  auto broken = TemplateLibrary::load(dir.path());
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find((dir / "broken.yaml").string() + ":"), std::string::npos)
      << broken.error().message;
  EXPECT_TRUE(TemplateLibrary::load(dir / "missing")) << "a missing folder has no templates";
}

// Every shipped template parses, and renders to a plan the core validator accepts.
TEST(PlanTemplateTest, EveryShippedTemplateGivesAValidPlan) {
  ASSERT_GE(shipped_templates().size(), 4u);
  auto catalog = parse_llm_catalog(
      "providers: {p: {api: openai, base_url: 'http://127.0.0.1:9/v1'}}\n"
      "models: {m: {provider: p, model: x}}\ndefault_model: m\n",
      "models.yaml");
  ASSERT_TRUE(catalog) << catalog.error().message;
  ExecutorRegistry registry = ExecutorRegistry::with_builtins();
  auto llm = std::make_shared<LlmExecutor>(std::make_shared<LlmCatalog>(*catalog));
  registry.add("llm", llm);
  registry.add("llm:", llm);
  TempDir ws;
  for (const auto& f : shipped_templates()) {
    auto t = parse_plan_template(f.text, f.path);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_FALSE(t->description.empty()) << f.path;
    LoadResult loaded = parse_plan(render_template(*t, SlotValues{"do \"it\" ${now}", {"a", "b"}}), f.path);
    for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.to_string();
    for (const auto& d : validate_plan(loaded.plan, validate_options_for(ws.path(), "", registry)))
      ADD_FAILURE() << d.to_string();
  }
}

// Any text, escaped, parses back to exactly itself with no placeholder in it.
TEST(EscapePlaceholders, AnyTextRoundTripsAsALiteral) {
  for (std::string text : {"${steps.a.result}", "$${x}", "#E0 and #E12", "##E0", "color: #E0E0E0;", "$$",
                           "#E", "a$", "${", "#Error", "plain", "$$${x}", "$$$${", "$$$", "a$$$$$${b}c${"}) {
    const std::string escaped = escape_placeholders(text);
    auto t = parse_template(escaped);
    ASSERT_TRUE(t) << escaped << ": " << t.error().message;
    EXPECT_FALSE(t->has_placeholders()) << escaped;
    std::string back;
    for (const auto& seg : t->segments) back += seg.text;
    EXPECT_EQ(back, text) << "escaped as " << escaped;
  }
}

}  // namespace
}  // namespace orch::flows
