// The ignore patterns of a scope snapshot. See IgnoreRules in
// cycle_scope_internal.h for the rules.
#include <fnmatch.h>

#include <algorithm>

#include "flows/cycle_scope_internal.h"

namespace orch::flows::scope_detail {

std::vector<std::string> split_rel(std::string_view rel) {
  std::vector<std::string> names;
  std::size_t begin = 0;
  while (begin <= rel.size()) {
    std::size_t end = rel.find('/', begin);
    if (end == std::string_view::npos) end = rel.size();
    if (end > begin) names.emplace_back(rel.substr(begin, end - begin));
    begin = end + 1;
  }
  return names;
}

IgnoreRules::IgnoreRules(const std::vector<std::string>& patterns, std::vector<std::string> own)
    : own_(std::move(own)) {
  // A submodule's or a linked worktree's `.git` is a file: ignored whatever it is.
  add(".git");
  add(".orch/");
  for (const std::string& p : patterns) add(p);
}

void IgnoreRules::add(std::string_view text) {
  Pattern p;
  while (text.ends_with('/')) {
    text.remove_suffix(1);
    p.folders_only = true;
  }
  // As in .gitignore, a `/` at the start or in the middle ties the pattern to
  // the workspace's top (`build/**` too); without one it matches a name at any
  // depth (`docs/`).
  p.anchored = text.find('/') != std::string_view::npos;
  // `x/**` is everything under x: x itself, as a folder, is what the walk skips.
  if (text.ends_with("/**")) {
    text.remove_suffix(3);
    p.folders_only = true;
  }
  while (text.starts_with('/')) text.remove_prefix(1);
  if (text.empty()) return;  // "/" or "/**": the whole workspace would be ignored, surely not meant
  if (p.anchored)
    p.parts = split_rel(text);
  else
    p.parts.emplace_back(text);
  patterns_.push_back(std::move(p));
}

// Whether parts[p...] match names[n...]; `**` takes any number of names.
// Backtracking, exponential only in the number of `**` of one pattern.
bool IgnoreRules::parts_match(const std::vector<std::string>& parts, std::size_t p,
                              const std::vector<std::string_view>& names, std::size_t n) {
  if (p == parts.size()) return n == names.size();
  if (parts[p] == "**") {
    for (std::size_t k = n; k <= names.size(); ++k)
      if (parts_match(parts, p + 1, names, k)) return true;
    return false;
  }
  if (n == names.size()) return false;
  const std::string name(names[n]);
  return ::fnmatch(parts[p].c_str(), name.c_str(), 0) == 0 && parts_match(parts, p + 1, names, n + 1);
}

bool IgnoreRules::ignored(std::string_view rel, bool folder) const {
  if (std::find(own_.begin(), own_.end(), rel) != own_.end()) return true;
  std::vector<std::string_view> names;
  for (std::size_t begin = 0; begin < rel.size();) {
    std::size_t end = rel.find('/', begin);
    if (end == std::string_view::npos) end = rel.size();
    if (end > begin) names.push_back(rel.substr(begin, end - begin));
    begin = end + 1;
  }
  if (names.empty()) return false;
  for (const Pattern& p : patterns_) {
    if (p.folders_only && !folder) continue;
    if (p.anchored ? parts_match(p.parts, 0, names, 0)
                   : ::fnmatch(p.parts[0].c_str(), std::string(names.back()).c_str(), 0) == 0)
      return true;
  }
  return false;
}

}  // namespace orch::flows::scope_detail
