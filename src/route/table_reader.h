// route/table_reader.h — reading one route table (a YAML file) with every problem
// collected as "FILE:LINE: FIELD: message".
//
// The text is parsed by the plan layer's line-numbered YAML reader
// (plan/yaml_reader.h), so each node knows its line; scalars mean what the YAML 1.2
// core schema says (util/yaml_json.h: quoted scalars are strings, `true` a bool,
// `3` an integer). A reader walks the tree with the typed getters below, which
// report what is wrong (a missing key, a wrong type, an unknown key with a
// did-you-mean, a repeated key) and return nothing for a bad value, so the caller
// goes on and every problem of the file is found at once.
//
// Not thread-safe (one reader per file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "orch/error.h"
#include "route/words.h"
#include "util/doc_node.h"

namespace orch {
class JsonSchema;
}

namespace orch::route {

using detail::DocNode;

class TableReader {
 public:
  explicit TableReader(std::string file) : file_(std::move(file)) {}

  // Parses `text`; a syntax error is a problem (and the result a Null node).
  DocNode parse(std::string_view text);

  const std::string& file() const { return file_; }
  void problem(int line, std::string_view field, std::string_view message);
  bool ok() const { return problems_.empty(); }
  // How many problems so far: a caller compares counts to tell whether a part
  // of the file it just read had any.
  std::size_t problem_count() const { return problems_.size(); }
  // The problems in line order, each "FILE:LINE: FIELD: message".
  std::vector<std::string> problems() const;

  // `node` must be a mapping; a problem (and false) otherwise. `what` ends the
  // message: "must be a mapping of WHAT".
  bool expect_map(const DocNode& node, std::string_view field, std::string_view what);
  // A problem for each key of `map` not in `known` (did-you-mean) and each repeated key.
  void only_keys(const DocNode& map, std::string_view field, const std::vector<std::string>& known);
  // The value of `key` in `map` (the first, when repeated); nullptr when absent.
  static const DocNode* find(const DocNode& map, std::string_view key);

  // Typed values of `map[key]`. Absent (or null): a problem only when `required`.
  std::optional<std::string> string(const DocNode& map, std::string_view field, std::string_view key,
                                    bool required);
  std::optional<std::int64_t> integer(const DocNode& map, std::string_view field, std::string_view key,
                                      std::int64_t min, bool required);
  std::optional<double> number(const DocNode& map, std::string_view field, std::string_view key, double min,
                               double max, bool required);
  std::optional<bool> boolean(const DocNode& map, std::string_view field, std::string_view key);

  // A whole number >= min, else a problem.
  std::optional<std::int64_t> integer_value(const DocNode& node, std::string_view field, std::int64_t min);
  // A non-empty string scalar, else a problem.
  std::optional<std::string> string_value(const DocNode& node, std::string_view field);
  // A list of non-empty strings (a problem for each item that is not one).
  std::vector<std::string> string_list(const DocNode& node, std::string_view field);

  // The schema as a net under the reader: a problem for each way `root` (as
  // JSON, its empty values left out, as the getters above read them) does not
  // satisfy `schema`, at the line of the node it names, prefixed with
  // `schema_name` ("schemas/cycle.schema.json"). What the reader let through
  // must still be what the file's published contract allows.
  void check_schema(const DocNode& root, const JsonSchema& schema, std::string_view schema_name);
  // The line of the node a JSON pointer ("/lenses/0/name") names in `root`: the
  // deepest node of the pointer that exists.
  static int line_of_pointer(const DocNode& root, std::string_view pointer);

  // A keyword entry (route/words.h; the forms in docs/routing.md), checked: every
  // word must be a whole word as words_of() cuts requests (a keyword "c++" or
  // "ci/cd" could never match as written), and every form of a stem must start
  // with it. A problem and nullopt when it is not usable.
  std::optional<Keyword> keyword(const DocNode& node, std::string_view field);
  // A list of keywords; a keyword repeated in the list is a problem.
  std::vector<Keyword> keywords(const DocNode& node, std::string_view field);

 private:
  std::string file_;
  std::vector<std::pair<int, std::string>> problems_;
};

// "a.b" (or "b" at the top); "a[3]" for an index.
std::string field_name(std::string_view field, std::string_view key);
std::string field_name(std::string_view field, std::size_t index);

}  // namespace orch::route
