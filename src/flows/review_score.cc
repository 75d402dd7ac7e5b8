#include "flows/review_score.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "flows/embedded_files.h"
#include "flows/review_gate.h"
#include "route/table_reader.h"
#include "util/strings.h"

namespace orch::flows {

Expected<Rubric> parse_rubric(std::string_view text, const std::string& file) {
  route::TableReader r(file);
  route::DocNode root = r.parse(text);
  Rubric rubric;
  if (r.ok() && r.expect_map(root, "", "rubric fields (version, deductions, thresholds)")) {
    r.only_keys(root, "", {"version", "deductions", "thresholds"});
    if (const auto* v = route::TableReader::find(root, "version"); v && !v->is_null()) {
      auto n = r.integer(root, "", "version", 1, false);
      if (n && *n != 1)
        r.problem(v->line, "version", fmt::format("must be 1 (the only format there is), not {}", *n));
    }

    const auto* deductions = route::TableReader::find(root, "deductions");
    if (!deductions || deductions->is_null()) {
      r.problem(deductions ? deductions->line : root.line, "deductions", "missing");
    } else if (r.expect_map(*deductions, "deductions", "severity to points")) {
      std::vector<std::string> names;
      for (Severity s : {Severity::Critical, Severity::Major, Severity::Minor, Severity::Nit})
        names.emplace_back(severity_name(s));
      r.only_keys(*deductions, "deductions", names);
      for (Severity s : {Severity::Critical, Severity::Major, Severity::Minor, Severity::Nit}) {
        auto points = r.integer(*deductions, "deductions", severity_name(s), 0, true);
        if (points && *points > 100) {
          r.problem(route::TableReader::find(*deductions, severity_name(s))->line,
                    route::field_name("deductions", severity_name(s)), "must be at most 100");
        } else if (points) {
          rubric.deductions.at(static_cast<std::size_t>(s)) = static_cast<int>(*points);
        }
      }
    }

    const auto* thresholds = route::TableReader::find(root, "thresholds");
    if (!thresholds || thresholds->is_null()) {
      r.problem(thresholds ? thresholds->line : root.line, "thresholds", "missing");
    } else if (r.expect_map(*thresholds, "thresholds", "names to minimum scores")) {
      std::set<std::string> seen;
      for (const auto& entry : thresholds->entries) {
        const std::string& name = entry.key.scalar;
        std::string field = route::field_name("thresholds", name);
        if (!seen.insert(name).second) {
          r.problem(entry.key.line, field, "repeated");
          continue;
        }
        auto minimum = r.integer(*thresholds, "thresholds", name, 0, true);
        if (minimum && *minimum > 100)
          r.problem(entry.value.line, field, fmt::format("must be at most 100, not {}", *minimum));
        else if (minimum)
          rubric.thresholds.emplace_back(name, static_cast<int>(*minimum));
      }
      if (thresholds->entries.empty())
        r.problem(thresholds->line, "thresholds", "must name at least one threshold");
    }
  }
  if (!r.ok()) return fail(ErrorCode::InvalidInput, join(r.problems(), "\n"));
  std::stable_sort(rubric.thresholds.begin(), rubric.thresholds.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return rubric;
}

Expected<Rubric> shipped_rubric() {
  return parse_rubric(review_rubric_text(), "data/review/rubric.yaml");
}

QualityScore quality_score(const std::vector<Finding>& findings, const Rubric& rubric) {
  int lost = 0;
  for (const Finding& f : findings)
    if (counts_for_gate(f)) lost += rubric.deductions.at(static_cast<std::size_t>(f.severity));
  QualityScore out;
  out.score = std::max(0, 100 - lost);
  for (const auto& [name, minimum] : rubric.thresholds) {
    if (out.score >= minimum) {
      out.band = name;
      return out;
    }
  }
  if (!rubric.thresholds.empty()) out.band = "below " + rubric.thresholds.back().first;
  return out;
}

}  // namespace orch::flows
