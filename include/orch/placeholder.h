// orch/placeholder.h — the placeholder language of run/sh/inputs/env strings.
//
//   ${steps.ID.result}        the result text of step ID
//   ${steps.ID.json.a.b.0}    a value inside step ID's result parsed as JSON
//                             (strings verbatim, anything else as compact JSON)
//   ${inputs.NAME}            this step's rendered input NAME
//   ${attempt.number}         1, 2, ... (the attempt being started)
//   ${attempt.previous_failure}  why the previous attempt failed ("" on the first)
//   #E<idx>                   the seed's form: result of the step at position idx (0-based)
//   $${                       a literal "${"
//
// A rendered value fills exactly the place it was written in (one argv element,
// one environment value); it is never split or re-parsed by a shell.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch {

struct Segment {
  enum class Kind { Literal, StepResult, StepJson, Input, AttemptNumber, PreviousFailure, IndexResult };
  Kind kind = Kind::Literal;
  std::string text;                    // Literal: the text; StepResult/StepJson: step id; Input: name
  std::vector<std::string> json_path;  // StepJson
  int index = -1;                      // IndexResult
  std::size_t offset = 0;              // byte offset in the source string (for messages)
  std::string source;                  // the placeholder as written, e.g. "${steps.a.result}"
};

struct Template {
  std::vector<Segment> segments;
  bool has_placeholders() const;
};

// Parses a template. Errors name the offending placeholder ("unknown placeholder
// '${step.a.result}' (did you mean '${steps.a.result}'?)", "unterminated '${'").
Expected<Template> parse_template(std::string_view text);

// Where rendering gets values from. Each lookup returns nullopt when the value is
// not available, which makes render fail with a message naming the placeholder.
// Step results parsed as JSON, kept across the renders of one step: each
// `${steps.ID.json...}` of a step's command, env and inputs parses ID's result once.
struct ParsedResults;
std::shared_ptr<ParsedResults> new_parsed_results();

struct RenderContext {
  std::function<std::optional<std::string>(const std::string& step_id)> step_result;
  std::function<std::optional<std::string>(int index)> index_result;
  std::function<std::optional<std::string>(const std::string& name)> input;
  // Said after a `${steps.ID.json...}` that fails, when something is known about
  // the step's result that explains it (it was cut at the output cap); may be null.
  std::function<std::string(const std::string& step_id)> result_note;
  int attempt_number = 1;
  std::string previous_failure;
  std::shared_ptr<ParsedResults> parsed;  // null: each placeholder parses for itself
};

Expected<std::string> render(const Template& tmpl, const RenderContext& ctx);

// How many `$` start at `at` when a `{` follows them, else 0. In a template such
// a run stands for half as many literal `$`, and an odd one left starts a
// placeholder; text that rewrites or escapes templates reads runs the same way.
std::size_t dollar_run(std::string_view text, std::size_t at);

// Looks up a dotted path in JSON text: "a.b.0". Strings come back unquoted.
// A result nested deeper than this is refused (InvalidInput), like a plan (kMaxJsonDepth).
inline constexpr int kMaxResultDepth = 500;
Expected<std::string> json_path_value(std::string_view json_text, const std::vector<std::string>& path);

}  // namespace orch
