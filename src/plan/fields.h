// plan/fields.h — reading typed fields out of document nodes, with diagnostics.
//
// The loader's shape checks in one place: each reader either returns the value or
// records a Diagnostic ("'attempts' must be an integer, got 'three'") and returns
// nullopt, so one pass over a document reports every problem it has. Nothing
// here throws.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "orch/diagnostic.h"
#include "orch/plan.h"
#include "util/doc_node.h"

namespace orch::detail {

// Where diagnostics go, and which step they belong to ("" for plan-level).
struct ReadContext {
  std::string file;
  Diagnostics* out = nullptr;
  std::string step_id;
  // A StepSpec list whose items look like orch steps (they have an `id`) was said
  // to be one once; its other items are not reported again key by key.
  bool said_orch_steps_in_a_list = false;
  // The document is not a plan whose step list could be read (its root is a
  // scalar, or `steps:` is not a list): the plan's own checks would only add
  // "plan has no steps" to what was said.
  bool no_step_list = false;

  void error(int line, std::string message) const;
  SourceLoc loc(int line) const { return SourceLoc{file, line}; }
};

// "a list", "a mapping", "nothing", or the scalar quoted: "'three'".
std::string describe(const DocNode& node);

// For values kept as data (inputs, inline schemas): reports what converting `node`
// to JSON would change without a word. A mapping inside it (itself included) that
// repeats a key, "duplicate key 'k' (first at line N)": the later value would be
// dropped. A plain scalar written as a number JSON cannot keep as written
// (number_not_kept in util/yaml_json.h: .inf, .nan, 1e999, more digits than a
// double keeps), with the way out: quote it.
void check_data_value(const ReadContext& ctx, const DocNode& node);

// One key of a mapping as seen by for_each_field.
struct Field {
  std::string key;
  int line = 0;  // the key's line: where a person looks for the field
  const DocNode& value;
};

// Calls `fn` for every key of `map` that is in `allowed`, in document order.
// Reports keys that are not (with a did-you-mean), repeated keys (only the first
// is used) and non-string keys. Keys starting with "x-" are skipped silently:
// they hold YAML anchors and notes (`x-common: &common {...}`). `map` must be a mapping.
void for_each_field(const ReadContext& ctx, const DocNode& map, const std::vector<std::string>& allowed,
                    const std::function<void(const Field&)>& fn);

// Typed readers. `name` is how the field is named in messages ("timeout",
// "budget.tokens"). All accept a quoted scalar whose text has the right form.
std::optional<std::string> read_string(const ReadContext& ctx, const Field& f, const std::string& name);
std::optional<std::int64_t> read_int(const ReadContext& ctx, const Field& f, const std::string& name);
std::optional<int> read_small_int(const ReadContext& ctx, const Field& f, const std::string& name);
std::optional<double> read_number(const ReadContext& ctx, const Field& f, const std::string& name);
std::optional<Millis> read_duration(const ReadContext& ctx, const Field& f, const std::string& name);
std::optional<std::int64_t> read_size(const ReadContext& ctx, const Field& f, const std::string& name);
// A list of scalars; with `allow_single`, one scalar is read as a list of one.
// `item_lines` (optional) receives the line of each item.
std::optional<std::vector<std::string>> read_string_list(const ReadContext& ctx, const Field& f,
                                                         const std::string& name, bool allow_single,
                                                         std::vector<int>* item_lines = nullptr);

}  // namespace orch::detail
