#include "flows/review_gate.h"

#include <algorithm>
#include <map>
#include <string>

namespace orch::flows {

const char* gate_verdict_name(GateVerdict verdict) {
  switch (verdict) {
    case GateVerdict::Pass:
      return "PASS";
    case GateVerdict::Revise:
      return "REVISE";
    case GateVerdict::Block:
      return "BLOCK";
    case GateVerdict::Incomplete:
      return "INCOMPLETE";
  }
  return "INCOMPLETE";
}

bool counts_for_gate(const Finding& finding) {
  return !finding.unverified && !finding.judge_hallucinated && finding.verdict != FindingVerdict::Refuted;
}

std::vector<Finding> reduce(const std::vector<std::vector<Finding>>& per_lens) {
  std::vector<Finding> kept;                   // first-appearance order
  std::map<std::string, std::size_t> slot_of;  // id -> index in kept
  for (const auto& lens_findings : per_lens) {
    for (const Finding& f : lens_findings) {
      auto [it, inserted] = slot_of.try_emplace(f.id, kept.size());
      if (inserted) {
        kept.push_back(f);
        continue;
      }
      Finding& old = kept[it->second];
      std::vector<std::string> lenses = old.lenses;
      for (const auto& lens : f.lenses)
        if (std::find(lenses.begin(), lenses.end(), lens) == lenses.end()) lenses.push_back(lens);
      const bool better =
          counts_for_gate(f) != counts_for_gate(old) ? counts_for_gate(f) : f.severity < old.severity;
      if (better) old = f;
      old.lenses = std::move(lenses);
    }
  }
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Finding& a, const Finding& b) { return a.severity < b.severity; });
  return kept;
}

GateResult apply_gate(const std::vector<Finding>& findings, int failed_lenses) {
  GateResult out;
  for (const Finding& f : findings) {
    if (!counts_for_gate(f)) {
      ++out.excluded;
      continue;
    }
    switch (f.severity) {
      case Severity::Critical:
        ++out.critical;
        break;
      case Severity::Major:
        ++out.major;
        break;
      case Severity::Minor:
        ++out.minor;
        break;
      case Severity::Nit:
        ++out.nit;
        break;
    }
  }
  if (failed_lenses > 0)
    out.verdict = GateVerdict::Incomplete;
  else if (out.critical > 0)
    out.verdict = GateVerdict::Block;
  else if (out.major > 0)
    out.verdict = GateVerdict::Revise;
  else
    out.verdict = GateVerdict::Pass;
  return out;
}

}  // namespace orch::flows
