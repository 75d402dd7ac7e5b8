// orch/field_lines.h — where each field of a plan or a step was written.
//
// A field name ("timeout", "budget.tokens", "run.2", "inputs.NAME") and the
// 1-based line of the plan's file it was written on; the file is the plan's
// (Plan::source_path, Step::loc.file). A sorted vector rather than a map of
// SourceLocs: a 100,000-step plan holds two or three of these a step, and a map
// node with its own copy of the file's name cost about 150 bytes each, a fifth
// of the plan's memory (docs/benchmarks.md, session 44).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace orch {

class FieldLines {
 public:
  // Records (or replaces) the line of a field.
  void set(std::string_view field, int line) {
    auto it = lower_bound(field);
    if (it != entries_.end() && it->first == field)
      it->second = line;
    else
      entries_.emplace(it, std::string(field), line);
  }
  // The line of a field; 0 when it was not written (or its line is unknown).
  int line(std::string_view field) const {
    auto it = lower_bound(field);
    return it != entries_.end() && it->first == field ? it->second : 0;
  }
  bool contains(std::string_view field) const {
    auto it = lower_bound(field);
    return it != entries_.end() && it->first == field;
  }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  using Entry = std::pair<std::string, int>;
  std::vector<Entry>::iterator lower_bound(std::string_view field) {
    return std::lower_bound(entries_.begin(), entries_.end(), field,
                            [](const Entry& e, std::string_view f) { return e.first < f; });
  }
  std::vector<Entry>::const_iterator lower_bound(std::string_view field) const {
    return std::lower_bound(entries_.begin(), entries_.end(), field,
                            [](const Entry& e, std::string_view f) { return e.first < f; });
  }

  std::vector<Entry> entries_;  // sorted by field name
};

}  // namespace orch
