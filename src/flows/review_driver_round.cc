// Driver::run_round and Driver::run_fix: one round of a review, its phases run
// through Driver::phase and, between them, what orch decides in code — the
// evidence check, reduce, the gate, the hallucination gate, the fix's guarded
// files (docs/review.md, "A round").
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "flows/review_driver.h"
#include "flows/review_gate.h"
#include "flows/review_judge.h"
#include "flows/review_plans.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::flows::review_run_detail {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// The round's reviewers, judge and claims; records the round. A returned outcome
// ends the drive (paused, or the spend cap).
Expected<std::optional<ReviewOutcome>> Driver::run_round(int round) {
  const json& rounds = doc_["rounds"];
  auto reviewers = ORCH_TRY(phase(round, kReviewersPhase, [&](std::int64_t budget) {
    return reviewers_plan(env_, c_, record_.id, round, rounds, budget);
  }));
  if (!reviewers) return paused_;
  if (reviewers->status == RunStatus::BudgetExhausted)
    return spend_cap_stop(round, kReviewersPhase, reviewers->reason);
  json round_doc = {{"round", round}, {"runs", {{"reviewers", reviewers->run_id}}}};

  // Each reviewer: its findings (evidence checked), or failed.
  std::vector<std::vector<Finding>> per_lens;
  json reviewer_docs = json::array();
  int failed = 0;
  for (const auto& lens : c_.lenses) {
    for (int k = 1; k <= c_.reviewers; ++k) {
      const std::string step = reviewer_step_id(lens, k, c_.reviewers);
      const StepRecord* s = step_of(*reviewers, step);
      json rd = {{"step", step}, {"lens", lens.name}, {"attempts", attempts_of(*reviewers, step)}};
      Expected<ReviewOutput> out = std::unexpected(Error{ErrorCode::InvalidInput, "did not run"});
      if (s && s->status == StepStatus::Done)
        out = parse_review_output_text(s->result, lens.name, workspace_roots(env_));
      if (!out) {
        ++failed;
        rd["status"] = role_status_name(RoleStatus::Failed);
        rd["reason"] = failure_of(s, out);
        per_lens.emplace_back();
      } else {
        for (auto& f : out->findings) check_evidence(f, file_text(env_, f.file));
        rd["status"] =
            role_status_name(rd["attempts"].get<int>() > 1 ? RoleStatus::Repaired : RoleStatus::Ok);
        rd["findings"] = out->findings.size();
        rd["scorecard"] = out->scorecard;
        per_lens.push_back(std::move(out->findings));
      }
      reviewer_docs.push_back(std::move(rd));
    }
  }
  round_doc["reviewers"] = std::move(reviewer_docs);
  round_doc["failed_lenses"] = failed;
  std::vector<Finding> findings = reduce(per_lens);
  round_doc["lens_verdict"] = gate_verdict_name(apply_gate(findings, failed).verdict);

  // The judge, and the claim verifier for the CRITICALs it introduced.
  int unchecked_claims = 0;
  if (c_.judge) {
    auto judged = ORCH_TRY(phase(round, kJudgePhase, [&](std::int64_t budget) {
      return judge_plan(env_, c_, record_.id, round, findings, budget);
    }));
    if (!judged) return paused_;
    if (judged->status == RunStatus::BudgetExhausted)
      return spend_cap_stop(round, kJudgePhase, judged->reason);
    round_doc["runs"]["judge"] = judged->run_id;
    const StepRecord* s = step_of(*judged, "judge");
    Expected<ReviewOutput> out = std::unexpected(Error{ErrorCode::InvalidInput, "did not run"});
    json merged = json::object();
    if (s && s->status == StepStatus::Done) {
      json answer = json::parse(s->result, nullptr, false);
      if (answer.is_object() && answer.contains("merged")) {
        merged = answer["merged"];
        answer.erase("merged");
      }
      out = answer.is_discarded() ? parse_review_output_text(s->result, "judge", workspace_roots(env_))
                                  : parse_review_output(answer, "judge", workspace_roots(env_));
    }
    json jd = {{"attempts", attempts_of(*judged, "judge")}};
    if (!out) {
      // The judge is optional: its failure leaves the lenses' findings as they are.
      jd["status"] = role_status_name(RoleStatus::Failed);
      jd["reason"] = failure_of(s, out);
    } else {
      Judged j = apply_judge(env_, findings, std::move(*out), merged);
      jd["status"] = role_status_name(RoleStatus::Ok);
      // The hallucination gate.
      json hallucinated = json::array(), grounded_ids = json::array(), unchecked = json::array();
      if (!j.claims.empty()) {
        auto checked = ORCH_TRY(phase(round, kClaimsPhase, [&](std::int64_t budget) {
          return claims_plan(env_, c_, record_.id, round, j.claims, budget);
        }));
        if (!checked) return paused_;
        if (checked->status == RunStatus::BudgetExhausted)
          return spend_cap_stop(round, kClaimsPhase, checked->reason);
        round_doc["runs"]["claims"] = checked->run_id;
        for (auto& f : j.findings) {
          if (std::none_of(j.claims.begin(), j.claims.end(), [&](const Finding& x) { return x.id == f.id; }))
            continue;
          const StepRecord* cs = step_of(*checked, "claim-" + f.id);
          if (!cs || cs->status != StepStatus::Done) {
            // The verifier could not answer: the claim stays (it may be real) and
            // the round cannot be trusted to PASS.
            unchecked.push_back(f.id);
            continue;
          }
          const json answer = json::parse(cs->result, nullptr, false);
          const bool confirmed =
              answer.is_object() && answer.contains("verdict") && answer["verdict"] == "confirmed";
          const std::string quote =
              answer.is_object() && answer.contains("evidence") && answer["evidence"].is_string()
                  ? answer["evidence"].get<std::string>()
                  : f.evidence;
          if (confirmed && evidence_found(quote, file_text(env_, f.file))) {
            f.verdict = FindingVerdict::Confirmed;
            grounded_ids.push_back(f.id);
            continue;
          }
          hallucinated.push_back(f.id);
          auto lens =
              std::find_if(findings.begin(), findings.end(), [&](const Finding& x) { return x.id == f.id; });
          if (lens != findings.end()) {
            f = *lens;  // the judge raised a lens finding to CRITICAL: the raise is dropped, the finding
                        // stays
          } else {
            f.verdict = FindingVerdict::Refuted;
            f.judge_hallucinated = true;
          }
        }
        std::stable_sort(j.findings.begin(), j.findings.end(),
                         [](const Finding& a, const Finding& b) { return a.severity < b.severity; });
      }
      settle_merges(j, findings);
      jd.update(j.doc);
      jd["hallucinated"] = hallucinated;
      jd["grounded"] = grounded_ids;
      jd["unchecked"] = unchecked;
      unchecked_claims = static_cast<int>(unchecked.size());
      findings = std::move(j.findings);
    }
    round_doc["judge"] = std::move(jd);
  }

  const GateResult gate = apply_gate(findings, failed + unchecked_claims);
  round_doc["verdict"] = gate_verdict_name(gate.verdict);
  round_doc["counts"] = {{"critical", gate.critical},
                         {"major", gate.major},
                         {"minor", gate.minor},
                         {"nit", gate.nit},
                         {"excluded", gate.excluded}};
  json fj = json::array();
  for (const auto& f : findings) fj.push_back(finding_json(f));
  round_doc["findings"] = std::move(fj);

  // Dry rounds and two-strikes over every round so far (this one's fix has not run).
  json all = doc_["rounds"];
  json provisional = round_doc;
  provisional["fix"] = {{"status", fix_status_name(FixStatus::NotRun)},
                        {"to_fix", json::array()},
                        {"for_human", json::array()}};
  all.push_back(provisional);
  const RoundProgress progress = track_rounds(findings_of_rounds(all), c_.dry_rounds, facts_of_rounds(all));
  const int added = progress.new_blocking.empty() ? 0 : progress.new_blocking.back();
  round_doc["new_blocking"] = added;
  round_doc["dry"] = progress.dry_streak > 0;
  json escalated_now = json::array();
  for (const auto& e : progress.escalated)
    if (e.round == round) escalated_now.push_back(e.id);
  round_doc["escalated"] = escalated_now;
  const bool last = progress.converged_round.has_value() || round >= c_.max_rounds;
  round_doc["final"] = last;
  // What the fixer gets: counted, mechanical, MINOR or worse, not escalated.
  std::set<std::string> escalated;
  for (const auto& e : progress.escalated) escalated.insert(e.id);
  json to_fix = json::array(), for_human = json::array();
  for (Severity sev : {Severity::Critical, Severity::Major, Severity::Minor})
    for (const auto& f : findings) {
      if (f.severity != sev || !counts_for_gate(f)) continue;
      if (f.mechanical && !escalated.contains(f.id) && c_.fixer && fixable_file(env_, f.file))
        to_fix.push_back(f.id);
      else
        for_human.push_back(f.id);
    }
  json fix = {{"to_fix", to_fix}, {"for_human", for_human}};
  fix["status"] = fix_status_name(last             ? FixStatus::NotRun
                                  : !c_.fixer      ? FixStatus::Off
                                  : to_fix.empty() ? FixStatus::NothingToFix
                                                   : FixStatus::Pending);
  round_doc["fix"] = std::move(fix);
  doc_["rounds"].push_back(std::move(round_doc));
  doc_.erase("rounds_in_progress");
  ORCH_TRY(save());
  note(fmt::format(
      "round {}: {} (CRITICAL {}, MAJOR {}, MINOR {}, NIT {}, excluded {}); {} new CRITICAL/MAJOR{}", round,
      gate_verdict_name(gate.verdict), gate.critical, gate.major, gate.minor, gate.nit, gate.excluded, added,
      escalated_now.empty() ? "" : fmt::format("; escalated {}", json_text(escalated_now))));
  return std::optional<ReviewOutcome>();
}

Expected<std::optional<ReviewOutcome>> Driver::run_fix(int round) {
  const std::size_t index = static_cast<std::size_t>(round - 1);
  std::vector<Finding> to_fix;
  for (const auto& id : doc_["rounds"][index]["fix"]["to_fix"])
    for (const auto& f : doc_["rounds"][index]["findings"])
      if (f["id"] == id)
        if (auto parsed = finding_from_json(f)) to_fix.push_back(std::move(*parsed));
  // Taken once, before the fixer first runs (kept in the document for a resume).
  if (!doc_["rounds"][index]["fix"].contains("guarded")) {
    doc_["rounds"][index]["fix"]["guarded"] = guarded_files(env_, doc_["rounds"], fix_writes(c_, to_fix));
    ORCH_TRY(save());
  }
  auto fixed = ORCH_TRY(phase(round, kFixPhase, [&](std::int64_t budget) {
    return fix_plan(env_, c_, record_.id, round, to_fix, budget);
  }));
  if (!fixed) return paused_;
  json& fix = doc_["rounds"][index]["fix"];
  if (!fixed->run_id.empty()) fix["run_id"] = fixed->run_id;
  if (fixed->status == RunStatus::BudgetExhausted) {
    // Still pending: `--resume --spend-cap N` runs (or resumes) it.
    fix["reason"] = fixed->reason;
    return spend_cap_stop(round, kFixPhase, fixed->reason);
  }
  const StepRecord* s = step_of(*fixed, "fix");
  if (s && s->status == StepStatus::Done) {
    fix["status"] = fix_status_name(FixStatus::Applied);
    fix["account"] = utf8_prefix(s->result, 2000);
    fix.erase("reason");
  } else {
    // The artifacts are the step's `writes`: the engine put them back as they were.
    fix["status"] = fix_status_name(FixStatus::RolledBack);
    fix["reason"] = s ? s->reason : fixed->reason;
  }
  json changed = json::array();
  for (const auto& [file, before] : fix["guarded"].items())
    if (content_fingerprint(env_, file) != before.get<std::string>()) changed.push_back(file);
  if (!changed.empty()) fix["changed_outside"] = changed;
  ORCH_TRY(save());
  note(fmt::format("round {}: fix {}{}", round, fix["status"].get<std::string>(),
                   fix.contains("reason") ? ": " + utf8_prefix(fix["reason"].get<std::string>(), 200) : ""));
  if (!changed.empty()) {
    // orch cannot put them back (they were not snapshotted) nor vouch for them:
    // a human looks before anything else runs on them.
    std::vector<std::string> files;
    for (const auto& f : changed) files.push_back(f.get<std::string>());
    ReviewOutcome out = ORCH_TRY(
        stop(ReviewStatus::Escalated,
             fmt::format("round {}: the fixer changed {}, which it was not given to fix and a rollback does "
                         "not restore; check {} before reviewing again",
                         round, join(files, ", "), files.size() == 1 ? "it" : "them"),
             kExitEscalated));
    return std::optional<ReviewOutcome>(std::move(out));
  }
  return std::optional<ReviewOutcome>();
}

}  // namespace orch::flows::review_run_detail
