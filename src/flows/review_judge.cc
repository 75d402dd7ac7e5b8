#include "flows/review_judge.h"

#include <algorithm>
#include <set>

#include "flows/review_gate.h"
#include "flows/review_plans.h"

namespace orch::flows::review_run_detail {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

Judged apply_judge(const ReviewEnv& env, const std::vector<Finding>& lens_findings, ReviewOutput judge_out,
                   const json& merged) {
  Judged j;
  // One copy per id: the most severe (the judge may repeat an id).
  std::stable_sort(judge_out.findings.begin(), judge_out.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity < b.severity; });
  json introduced = json::array(), downgraded = json::array(), kept = json::array();
  std::set<std::string> seen;
  for (Finding& f : judge_out.findings) {
    if (!seen.insert(f.id).second) continue;
    auto lens = std::find_if(lens_findings.begin(), lens_findings.end(),
                             [&](const Finding& x) { return x.id == f.id; });
    const bool lens_raised_critical =
        lens != lens_findings.end() && lens->severity == Severity::Critical && counts_for_gate(*lens);
    if (lens != lens_findings.end()) {
      // The judge's copy of a lens finding changes its severity and nothing else:
      // the evidence and its check, the claim, the verdict stay the lens's, so the
      // judge can neither launder a fabricated quote nor void a good one by
      // rewriting it, nor refute a finding ("verdict" is the claim verifier's).
      if (f.severity > lens->severity) downgraded.push_back(f.id);
      Finding judged = *lens;
      judged.severity = f.severity;
      f = std::move(judged);
    } else {
      check_evidence(f, file_text(env, f.file));
    }
    if (f.severity == Severity::Critical && !lens_raised_critical) {
      introduced.push_back(f.id);
      if (counts_for_gate(f)) j.claims.push_back(f);
    }
    j.findings.push_back(std::move(f));
  }
  // A lens finding the judge left out is kept, unless the judge named the
  // finding it was merged into (settle_merges decides whether that merge holds).
  for (const Finding& f : lens_findings) {
    if (seen.contains(f.id)) continue;
    const std::string into = merged.is_object() && merged.contains(f.id) && merged[f.id].is_string()
                                 ? merged[f.id].get<std::string>()
                                 : std::string();
    if (!into.empty()) {
      j.merges.emplace_back(f, into);
      continue;
    }
    kept.push_back(f.id);
    j.findings.push_back(f);
  }
  std::stable_sort(j.findings.begin(), j.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity < b.severity; });
  j.doc = {{"introduced", introduced}, {"downgraded", downgraded}, {"kept", kept}};
  return j;
}

// Settles the judge's merges, after the claim verifier (a raise it refuted is
// undone by then). A merge holds only when its target is a lens finding still in
// the round (not itself merged away) that counts for the gate and is at least as
// severe as the merged finding, both as the lenses reported them (or the target
// as the judge raised it, when the raise stood). A merge folds two reports of one
// defect into one: it never makes a finding disappear into one that does not
// count (made up, unverified, hallucinated) or into a lesser one. The judge's
// downgrade of the target is its to make, and applies to the defect. A refused
// merge leaves the finding as the lenses reported it (kept, and merge_refused).
void settle_merges(Judged& j, const std::vector<Finding>& lens_findings) {
  json merged = json::object(), refused = json::object();
  json kept = j.doc.value("kept", json::array());
  std::vector<Finding> back;
  for (auto& [f, into] : j.merges) {
    auto target =
        std::find_if(j.findings.begin(), j.findings.end(), [&](const Finding& x) { return x.id == into; });
    auto lens_target = std::find_if(lens_findings.begin(), lens_findings.end(),
                                    [&](const Finding& x) { return x.id == into; });
    if (target != j.findings.end() && lens_target != lens_findings.end() && counts_for_gate(*target) &&
        std::min(lens_target->severity, target->severity) <= f.severity) {
      merged[f.id] = into;
      continue;
    }
    refused[f.id] = into;
    kept.push_back(f.id);
    back.push_back(std::move(f));
  }
  for (auto& f : back) j.findings.push_back(std::move(f));
  j.merges.clear();
  std::stable_sort(j.findings.begin(), j.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity < b.severity; });
  j.doc["merged"] = std::move(merged);
  j.doc["merge_refused"] = std::move(refused);
  j.doc["kept"] = std::move(kept);
}

}  // namespace orch::flows::review_run_detail
