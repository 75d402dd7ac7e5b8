// flows/plan_template.h — plan templates: ready-made plans chosen by the words of a request.
//
// A template is an orch plan file (docs/plan-format.md) with one extra mapping,
// `x-template:` (the plan loader ignores `x-` keys), saying when it applies:
//
//   x-template:
//     description: Run the tests, fix what fails, run them again.
//     match:
//       phrases: [failing tests, broken tests]   # 2 points each, whole words in order
//       keywords: [fix, tests, suite]            # 1 point each, whole words
//       threshold: 3                             # matches when the score reaches it (default 3)
//   name: fix failing tests
//   steps:
//     - id: diagnose
//       executor: llm
//       inputs: {prompt: "Fix this: {{request}}"}
//
// Slots — `{{request}}` (the request) and `{{items}}` (the enumerated items as
// "- item" lines, or the request when it has no list) — go inside double-quoted
// YAML strings; a slot anywhere else is refused when the template is loaded.
// A slot's value is written JSON-escaped and with `${` escaped as `$${`, so the
// request arrives as text, never as YAML structure or a placeholder, and the
// rendered plan has the template's line numbers: its problems name the template
// file and line like any plan's.
//
// Matching reads whole words only (flows/request_text.h): "test" does not match
// "latest", "ci" does not match "circuit". The library holds the shipped
// templates (templates/plans/, compiled into orch) and the user's (a folder of
// *.yaml, default .orch/templates/); a template's name is its file name without
// `.yaml`, and a later one replaces an earlier one of the same name.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch::flows {

struct TemplateMatchRule {
  std::vector<std::string> phrases;   // lower-cased words joined by one space
  std::vector<std::string> keywords;  // single lower-cased words
  int threshold = 3;
};

struct PlanTemplate {
  std::string name;  // file name without .yaml
  std::string file;  // where it came from, for messages
  std::string description;
  TemplateMatchRule match;
  std::string text;  // the template as written, slots included
};

struct TemplateMatch {
  const PlanTemplate* plan_template = nullptr;
  int score = 0;
  std::vector<std::string> matched;  // the phrases and keywords found
};

struct SlotValues {
  std::string request;
  std::vector<std::string> items;  // empty when the request has no list
};

// Reads one template. `file` labels messages ("FILE:LINE: ..."); every problem
// is reported, in one InvalidInput error, one per line.
Expected<PlanTemplate> parse_plan_template(std::string_view text, const std::string& file);

class TemplateLibrary {
 public:
  // The shipped templates, then every *.yaml of `user_dir` in name order (a
  // missing folder is no error: it has no templates). Problems in any file are
  // all reported at once.
  static Expected<TemplateLibrary> load(const std::filesystem::path& user_dir);
  static TemplateLibrary shipped();

  // Adds or replaces (same name) a template.
  void add(PlanTemplate t);
  const std::vector<PlanTemplate>& templates() const { return templates_; }
  const PlanTemplate* find(std::string_view name) const;

  // The best template whose score reaches its threshold: the highest score, then
  // the most phrases found, then the name first in alphabetical order.
  std::optional<TemplateMatch> best_match(std::string_view request) const;

 private:
  std::vector<PlanTemplate> templates_;
};

// Scores one template against a request (whatever its threshold).
TemplateMatch score_template(const PlanTemplate& t, std::string_view request);

// The plan text: every slot replaced by its escaped value.
std::string render_template(const PlanTemplate& t, const SlotValues& values);

// `text` made literal for a plan string: "${" becomes "$${" and "#E<digit>"
// "##E<digit>", so it parses back to exactly `text` with no placeholder.
std::string escape_placeholders(std::string_view text);

}  // namespace orch::flows
