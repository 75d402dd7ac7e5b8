// plan/condition.h — a step's `when:` condition (docs/plan-format.md, "Conditions").
//
// A small, side-effect-free expression over what earlier steps did:
//
//   when: ${steps.review.result.verdict} == "PASS"
//   when: steps.build.status == done && steps.lint.result.warnings < 10
//   when: not (steps.probe.result == "skip")
//
// The grammar (every operator; `and`/`or`/`not` are the same as `&&`/`||`/`!`):
//
//   condition  := or
//   or         := and { ("||" | "or") and }
//   and        := unary { ("&&" | "and") unary }
//   unary      := ("!" | "not") unary | comparison
//   comparison := value [ ("==" | "!=" | "<" | "<=" | ">" | ">=") value ]
//   value      := "(" or ")" | reference | "${" reference "}" | literal
//   reference  := "steps." ID ".status" | "steps." ID ".result" { "." KEY }
//   literal    := "string" | 'string' | number | true | false | null | STATUS
//   STATUS     := done | skipped          (a bare word: the statuses a condition can see)
//
// Values: a status is its name; `steps.ID.result` is the step's result parsed as
// JSON when it is JSON, else its text without trailing whitespace (a shell
// step's stdout ends with a newline); `.result.KEY...` is a value inside the
// result parsed as JSON (a number KEY indexes an array). `==`/`!=` compare any
// two values (numbers by value); `<`, `<=`, `>`, `>=` two numbers or two
// strings. `&&`, `||`, `!` and the whole condition take true or false.
//
// Checked before the run (check_condition): the syntax, each step named
// (unknown: with a did-you-mean; not an ancestor of the step: "add it to deps"),
// and the types that are known then — a status compared with anything but a
// status, ordered, or used as true/false; a bare word that is not a status; a
// string or number literal used as true/false. What only the results can say
// (a key the result lacks, a string compared with `<` to a number) makes the
// evaluation fail with the reason, and the step with it: a condition never
// turns false because it could not be read.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "orch/error.h"

namespace orch {

struct ConditionNode;

// What a condition reads of one step.
struct ConditionRef {
  std::string step;
  bool status = false;  // .status; else .result
  std::vector<std::string> path;
  std::size_t column = 0;  // 1-based, in the condition's text
};

class Condition {
 public:
  // Parses `text`; an error says what was expected at which column.
  static Expected<Condition> parse(std::string_view text);

  Condition(Condition&&) noexcept;
  Condition& operator=(Condition&&) noexcept;
  ~Condition();

  const std::string& text() const { return text_; }
  // Every step reference, in the order written.
  std::vector<ConditionRef> refs() const;
  // The type problems known before the run (see above), one message each.
  std::vector<std::string> type_problems() const;

  // What evaluation reads: a settled step's status name ("done", "skipped") and
  // its result text; nullopt when the step has none.
  struct Inputs {
    std::function<std::optional<std::string>(const std::string& step)> status;
    std::function<std::optional<std::string>(const std::string& step)> result;
  };
  // True or false, or why the condition could not be evaluated.
  Expected<bool> evaluate(const Inputs& in) const;

 private:
  Condition() = default;
  std::string text_;
  std::unique_ptr<ConditionNode> root_;
};

// The statuses a condition may name: a condition is read once every ancestor
// has settled, and a dependency that failed skips its dependents first.
inline constexpr const char* kConditionStatuses[] = {"done", "skipped"};

}  // namespace orch
