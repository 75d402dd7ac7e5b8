#include "flows/review_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "engine/run_lock.h"
#include "flows/embedded_files.h"
#include "flows/review_gate.h"
#include "flows/review_rounds.h"
#include "flows/review_score.h"
#include "flows/stage_plan.h"
#include "orch/workspace.h"
#include "util/atomic_file.h"
#include "util/iso_time.h"
#include "util/json_text.h"
#include "util/read_file.h"
#include "util/strings.h"

namespace orch::flows {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace review_run_detail {

constexpr const char* kReviewersPhase = "reviewers";
constexpr const char* kJudgePhase = "judge";
constexpr const char* kClaimsPhase = "claims";
constexpr const char* kFixPhase = "fix";

std::string phase_run_name(const std::string& id, int round, const char* phase) {
  return fmt::format("review {} round {} {}", id, round, phase);
}

const char* kContract =
    "Reply with ONE JSON document and nothing else: {\"findings\": [...], \"scorecard\": {...}}.\n"
    "Each finding: file (as listed under artifacts), locus (the function, section or heading: where, by "
    "name), "
    "severity (CRITICAL, MAJOR, MINOR or NIT), claim (what is wrong), and when you can: line, rule, evidence "
    "(a VERBATIM quote from the file: it is checked, and a quote that is not there voids the finding), "
    "failing_case, suggested_fix, mechanical (true when the fix needs no judgement), confidence (0..1). "
    "No other fields. The scorecard is your own summary (an object). No findings: \"findings\": [].";

const char* kClaimSchema = R"({"type": "object", "required": ["verdict"],
  "properties": {"verdict": {"enum": ["confirmed", "refuted"]}, "evidence": {"type": "string"}, "note": {"type": "string"}}})";

// The artifacts as inputs: their paths (a worker reads them in the workspace);
// for a model, their text as well.
std::vector<std::pair<std::string, std::string>> artifact_inputs(const ReviewEnv& env, const ReviewConfig& c,
                                                                 const std::string& executor) {
  std::vector<std::pair<std::string, std::string>> out = {{"artifacts", join(c.artifacts, "\n")}};
  if (executor.starts_with("worker:")) return out;
  std::string text;
  for (const auto& a : c.artifacts) {
    auto content = read_file_text(env.workspace / a);
    text += fmt::format("### {}\n```\n{}\n```\n", a,
                        content ? *content : "(unreadable: " + content.error().message + ")");
  }
  out.emplace_back("artifact text", text);
  return out;
}

ojson role_env(const std::string& id, int round, const std::string& role, const std::string& lens) {
  ojson env = {{"ORCH_REVIEW_ID", id},
               {"ORCH_REVIEW_ROUND", std::to_string(round)},
               {"ORCH_REVIEW_ROLE", role},
               {"ORCH_REVIEW_ATTEMPT", "${attempt.number}"}};
  if (!lens.empty()) env["ORCH_REVIEW_LENS"] = lens;
  return env;
}

ojson finding_schema_json() {
  return ojson::parse(finding_schema_text());
}

std::string reviewer_step_id(const LensConfig& lens, int k, int reviewers) {
  return reviewers == 1 ? lens.name : fmt::format("{}-{}", lens.name, k);
}

// The counted findings of earlier rounds, for a review without fresh context.
std::string previous_findings_text(const json& rounds) {
  if (rounds.empty()) return "(none)";
  json last = json::array();
  for (const auto& f : rounds.back()["findings"])
    last.push_back(
        {{"file", f["file"]}, {"locus", f["locus"]}, {"severity", f["severity"]}, {"claim", f["claim"]}});
  return last.dump(2);
}

ojson plan_of(const std::string& name, int concurrency, std::int64_t budget_tokens, ojson steps) {
  ojson plan = {{"name", name},
                {"concurrency", std::max(1, concurrency)},
                {"on_failure", "continue"},
                {"steps", std::move(steps)}};
  plan["budget"] = {{"tokens", std::max<std::int64_t>(1, budget_tokens)}};
  return plan;
}

ojson reviewers_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id, int round,
                     const json& rounds, std::int64_t budget) {
  ojson steps = ojson::array();
  for (const auto& lens : c.lenses) {
    for (int k = 1; k <= c.reviewers; ++k) {
      auto extra = artifact_inputs(env, c, lens.role.executor);
      if (!c.fresh_context) extra.emplace_back("previous round's findings", previous_findings_text(rounds));
      steps.push_back(
          {{"id", reviewer_step_id(lens, k, c.reviewers)},
           {"goal",
            fmt::format("Review the artifacts through the lens '{}' (review round {}).", lens.name, round)},
           {"executor", lens.role.executor},
           {"attempts", 2},
           {"env", role_env(id, round, "reviewer", lens.name)},
           {"inputs", stage_inputs(lens.role.executor, lens.prompt + "\n\n" + kContract, extra, true)},
           {"post", ojson::array({{{"result_json", finding_schema_json()}}})}});
    }
  }
  return plan_of(phase_run_name(id, round, kReviewersPhase), c.max_parallel, budget, std::move(steps));
}

json brief_findings(const std::vector<Finding>& findings) {
  json out = json::array();
  for (const auto& f : findings) {
    json j = finding_json(f);
    j.erase("unverified");
    j.erase("judge_hallucinated");
    out.push_back(std::move(j));
  }
  return out;
}

ojson judge_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id, int round,
                 const std::vector<Finding>& reduced, std::int64_t budget) {
  auto extra = artifact_inputs(env, c, c.judge->executor);
  extra.emplace_back("findings", brief_findings(reduced).dump(2));
  const std::string prompt =
      "You are the judge of this review round. The lenses' findings are below, de-duplicated. You may "
      "downgrade a finding's severity or merge duplicates (keep one, drop the others); keep file, locus and "
      "rule "
      "of a finding you keep, so that it stays the same finding. Add a finding only if the lenses missed a "
      "real "
      "defect, and then quote the artifact verbatim as its evidence: a CRITICAL no lens raised is "
      "re-checked.\n\n" +
      std::string(kContract);
  ojson steps = ojson::array({{{"id", "judge"},
                               {"goal", fmt::format("Judge the findings of review round {}.", round)},
                               {"executor", c.judge->executor},
                               {"attempts", 2},
                               {"env", role_env(id, round, "judge", "")},
                               {"inputs", stage_inputs(c.judge->executor, prompt, extra, true)},
                               {"post", ojson::array({{{"result_json", finding_schema_json()}}})}}});
  return plan_of(phase_run_name(id, round, kJudgePhase), 1, budget, std::move(steps));
}

ojson claims_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id, int round,
                  const std::vector<Finding>& claims, std::int64_t budget) {
  ojson steps = ojson::array();
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const Finding& f = claims[i];
    auto extra = artifact_inputs(env, c, c.verifier->executor);
    extra.emplace_back(
        "claim",
        json{{"file", f.file}, {"locus", f.locus}, {"claim", f.claim}, {"evidence", f.evidence}}.dump(2));
    const std::string prompt =
        "Check one claim about the artifact, from the artifact alone. Reply with ONE JSON document and "
        "nothing "
        "else: {\"verdict\": \"confirmed\" or \"refuted\", \"evidence\": \"a VERBATIM quote from the file "
        "that "
        "shows the defect\", \"note\": \"...\"}. Confirm only what the quote shows.";
    steps.push_back(
        {{"id", fmt::format("claim-{}", f.id)},
         {"goal", fmt::format("Verify a CRITICAL claim the judge added (review round {}).", round)},
         {"executor", c.verifier->executor},
         {"attempts", 2},
         {"env", role_env(id, round, "verifier", "")},
         {"inputs", stage_inputs(c.verifier->executor, prompt, extra, true)},
         {"post", ojson::array({{{"result_json", ojson::parse(kClaimSchema)}}})}});
  }
  return plan_of(phase_run_name(id, round, kClaimsPhase), c.max_parallel, budget, std::move(steps));
}

ojson fix_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id, int round,
               const std::vector<Finding>& to_fix, std::int64_t budget) {
  auto extra = artifact_inputs(env, c, c.fixer->executor);
  extra.emplace_back("findings", brief_findings(to_fix).dump(2));
  const std::string prompt = fmt::format(
      "Fix these findings in the artifacts, in the order given (CRITICAL, then MAJOR, then MINOR), editing "
      "the "
      "files in place. Change nothing else. After you finish, `{}` must succeed, or every change is rolled "
      "back. "
      "Reply with a short account of what you changed.",
      c.verify);
  ojson post = ojson::array({"exit_zero"});
  if (!c.verify.empty()) post.push_back({{"kind", "shell_zero"}, {"cmd", c.verify}, {"timeout", "10m"}});
  ojson steps = ojson::array({{{"id", "fix"},
                               {"goal", fmt::format("Apply the mechanical fixes of review round {}.", round)},
                               {"executor", c.fixer->executor},
                               {"attempts", 1},
                               {"writes", c.artifacts},
                               {"env", role_env(id, round, "fixer", "")},
                               {"inputs", stage_inputs(c.fixer->executor, prompt, extra, false)},
                               {"post", post}}});
  return plan_of(phase_run_name(id, round, kFixPhase), 1, budget, std::move(steps));
}

// The text the evidence of a finding is checked against: its file, "" when it
// is not a readable file of the workspace.
std::string file_text(const ReviewEnv& env, const std::string& file) {
  auto path = resolve_in_workspace(env.workspace, file);
  if (!path) return {};
  auto text = read_file_text(*path);
  return text ? *text : std::string();
}

bool grounded(const ReviewEnv& env, const Finding& f, const std::string& quote) {
  const std::string text = file_text(env, f.file);
  const std::string q = collapse_whitespace(quote);
  return q.size() >= kMinEvidenceChars && !evidence_missing(q, text);
}

struct Phase {
  std::string run_id;
  RunStatus status = RunStatus::Failed;
  std::string reason;
  std::vector<StepRecord> steps;
  std::vector<AttemptRecord> attempts;
};

// Everything spent by the review's runs so far.
Expected<std::int64_t> spent_tokens(ReviewEnv& env, const std::string& id) {
  std::int64_t total = 0;
  const std::string prefix = fmt::format("review {} round ", id);
  for (const auto& r : ORCH_TRY(env.store->list_runs()))
    if (r.name.starts_with(prefix)) total += r.spent_tokens;
  return total;
}

class Driver {
 public:
  Driver(ReviewEnv& env, ReviewRecord record, json doc, ReviewConfig config)
      : env_(env), record_(std::move(record)), doc_(std::move(doc)), c_(std::move(config)) {}

  Expected<ReviewOutcome> drive();

 private:
  void note(const std::string& line) {
    if (env_.on_note) env_.on_note(line);
  }
  Expected<void> save();
  Expected<std::optional<Phase>> phase(int round, const char* name,
                                       const std::function<ojson(std::int64_t)>& build);
  Expected<ReviewOutcome> stop(ReviewStatus status, const std::string& reason, int exit_code);
  Expected<std::optional<ReviewOutcome>> run_round(int round);
  Expected<std::optional<ReviewOutcome>> run_fix(int round);
  std::vector<std::vector<Finding>> rounds_findings() const;
  std::set<std::string> escalated_ids() const;

  ReviewEnv& env_;
  ReviewRecord record_;
  json doc_;
  ReviewConfig c_;
  std::optional<ReviewOutcome> paused_;  // a phase that did not end: interrupted, awaiting approval
};

Expected<void> Driver::save() {
  const std::int64_t spent = ORCH_TRY(spent_tokens(env_, record_.id));
  doc_["tokens"] = {{"spent", spent}, {"cap", c_.spend_cap_tokens}};
  doc_["config"] = review_config_json(c_);
  // Findings with their history, escalations, score: recomputed from the rounds.
  const auto per_round = rounds_findings();
  json findings = json::object();
  json order = json::array();
  for (std::size_t r = 0; r < per_round.size(); ++r) {
    for (const auto& f : per_round[r]) {
      if (!findings.contains(f.id)) {
        order.push_back(f.id);
        findings[f.id] = finding_json(f);
        findings[f.id]["history"] = json::array();
      } else {
        json keep_history = findings[f.id]["history"];
        findings[f.id] = finding_json(f);
        findings[f.id]["history"] = std::move(keep_history);
      }
      const char* status = f.judge_hallucinated                   ? "judge_hallucinated"
                           : f.unverified                         ? "unverified"
                           : f.verdict == FindingVerdict::Refuted ? "refuted"
                                                                  : "counted";
      findings[f.id]["history"].push_back(
          {{"round", r + 1}, {"severity", severity_name(f.severity)}, {"status", status}});
    }
  }
  const auto escalated = escalated_ids();
  json list = json::array();
  for (const auto& id : order) {
    json f = findings[id.get<std::string>()];
    const bool in_last =
        !per_round.empty() && std::any_of(per_round.back().begin(), per_round.back().end(),
                                          [&](const Finding& x) { return x.id == id.get<std::string>(); });
    f["state"] = escalated.contains(id.get<std::string>()) ? "escalated" : in_last ? "open" : "gone";
    list.push_back(std::move(f));
  }
  doc_["findings"] = std::move(list);
  json esc = json::array();
  const RoundProgress progress = track_rounds(per_round, c_.dry_rounds);
  for (const auto& e : progress.escalated) esc.push_back({{"id", e.id}, {"round", e.round}});
  doc_["escalations"] = std::move(esc);
  if (!per_round.empty()) {
    const QualityScore score = quality_score(per_round.back(), c_.rubric);
    json thresholds = json::object();
    for (const auto& [name, min] : c_.rubric.thresholds) thresholds[name] = min;
    doc_["score"] = {{"score", score.score}, {"band", score.band}, {"thresholds", thresholds}};
  }
  record_.rounds = static_cast<int>(doc_["rounds"].size());
  record_.verdict = doc_["rounds"].empty() ? "" : doc_["rounds"].back().value("verdict", std::string());
  doc_["status"] = review_status_name(record_.status);
  doc_["verdict"] = record_.verdict;
  record_.updated_at = env_.now_ms();
  doc_["updated_at"] = iso8601_utc(record_.updated_at, TimePrecision::Seconds);
  record_.doc_json = doc_.dump();
  ORCH_TRY(env_.reviews->update_review(record_));
  // A copy for people and tools: .orch/reviews/ID.json and ID.md (the ledger stays the authority).
  const fs::path dir = env_.workspace / ".orch" / "reviews";
  std::error_code ec;
  fs::create_directories(dir, ec);
  ORCH_TRY(
      write_file_atomically(dir / (record_.id + ".json"), json_text(doc_, 2) + "\n", Durability::RenameOnly));
  ORCH_TRY(write_file_atomically(dir / (record_.id + ".md"), review_markdown(doc_), Durability::RenameOnly));
  return {};
}

std::vector<std::vector<Finding>> Driver::rounds_findings() const {
  std::vector<std::vector<Finding>> out;
  for (const auto& r : doc_["rounds"]) {
    std::vector<Finding> fs_;
    for (const auto& f : r["findings"])
      if (auto parsed = finding_from_json(f)) fs_.push_back(std::move(*parsed));
    out.push_back(std::move(fs_));
  }
  return out;
}

std::set<std::string> Driver::escalated_ids() const {
  std::set<std::string> ids;
  for (const auto& e : track_rounds(rounds_findings(), c_.dry_rounds).escalated) ids.insert(e.id);
  return ids;
}

// Finds the phase's run (resuming it when it did not end) or starts it. nullopt:
// the review must pause (the outcome is in paused_).
Expected<std::optional<Phase>> Driver::phase(int round, const char* name,
                                             const std::function<ojson(std::int64_t)>& build) {
  const std::string run_name = phase_run_name(record_.id, round, name);
  std::optional<RunRecord> existing;
  for (const auto& r : ORCH_TRY(env_.store->list_runs()))  // newest first
    if (r.name == run_name) {
      existing = r;
      break;
    }
  Phase p;
  const std::int64_t left = c_.spend_cap_tokens - ORCH_TRY(spent_tokens(env_, record_.id));
  // A phase the old spend cap stopped goes on when the cap was raised (--resume --spend-cap).
  const bool raised = existing && existing->status == RunStatus::BudgetExhausted && left > 0;
  const bool ended = existing && existing->status != RunStatus::Running &&
                     existing->status != RunStatus::Interrupted &&
                     existing->status != RunStatus::AwaitingApproval && !raised;
  if (ended) {
    p.run_id = existing->id;
    p.status = existing->status;
    p.reason = existing->reason;
  } else {
    if (left <= 0 && !existing) {
      p.status = RunStatus::BudgetExhausted;
      p.reason = "nothing is left of the spend cap";
      return p;
    }
    EngineOptions eo;
    eo.workspace = env_.workspace;
    eo.executors = env_.executors;
    eo.handle_signals = env_.handle_signals;
    eo.ask_approval = env_.ask_approval;
    Engine engine(*env_.store, std::move(eo));
    Expected<RunOutcome> outcome = std::unexpected(Error{ErrorCode::Internal, "not run"});
    if (raised) {
      // The run's stored plan with a budget of what it spent plus what is left.
      const PlanVersion stored = ORCH_TRY(env_.store->latest_plan(existing->id));
      ojson plan = ojson::parse(stored.text, nullptr, false);
      if (plan.is_discarded())
        return fail(ErrorCode::Store, fmt::format("run {}: its plan is not JSON", existing->id));
      plan["budget"]["tokens"] = existing->spent_tokens + left;
      const fs::path replan = env_.store->folder() / "reviews" / (run_name + ".json");
      std::error_code ec;
      fs::create_directories(replan.parent_path(), ec);
      ORCH_TRY(write_file_atomically(replan, json_text(plan, 2), Durability::RenameOnly));
      note(
          fmt::format("round {}: {}: resuming run {} under the raised spend cap", round, name, existing->id));
      outcome = engine.resume(existing->id, replan.string());
    } else if (existing) {
      note(fmt::format("round {}: {}: resuming run {}", round, name, existing->id));
      outcome = engine.resume(existing->id, std::nullopt);
    } else {
      const std::string text = json_text(build(left), 2);
      const Plan plan = ORCH_TRY(load_built_plan(env_.workspace, *env_.executors, text, run_name,
                                                 "the review's " + std::string(name) + " plan"));
      note(fmt::format("round {}: {}", round, name));
      outcome = engine.run(plan, text);
    }
    if (!outcome) return std::unexpected(outcome.error());
    p.run_id = outcome->run_id;
    p.status = outcome->status;
    p.reason = outcome->reason;
    if (p.status == RunStatus::Interrupted || p.status == RunStatus::AwaitingApproval ||
        p.status == RunStatus::Running) {
      doc_["rounds_in_progress"] = round;
      ORCH_TRY(save());
      ReviewOutcome out;
      out.id = record_.id;
      out.status = ReviewStatus::Running;
      out.doc = doc_;
      out.exit_code = exit_code_for(p.status);
      out.reason = p.status == RunStatus::AwaitingApproval
                       ? fmt::format("round {}: {}: {} (then `orch review --resume {}`)", round, name,
                                     p.reason, record_.id)
                       : fmt::format("interrupted in round {} ({}): continue with `orch review --resume {}`",
                                     round, name, record_.id);
      paused_ = std::move(out);
      return std::optional<Phase>();
    }
  }
  p.steps = ORCH_TRY(env_.store->steps(p.run_id));
  p.attempts = ORCH_TRY(env_.store->attempts(p.run_id));
  return std::optional<Phase>(std::move(p));
}

Expected<ReviewOutcome> Driver::stop(ReviewStatus status, const std::string& reason, int exit_code) {
  record_.status = status;
  doc_["stop_reason"] = reason;
  doc_.erase("rounds_in_progress");
  ORCH_TRY(save());
  note(fmt::format("review {}: {} ({})", record_.id, review_status_name(status), reason));
  ReviewOutcome out;
  out.id = record_.id;
  out.status = status;
  out.doc = doc_;
  out.exit_code = exit_code;
  out.reason = reason;
  return out;
}

const StepRecord* step_of(const Phase& p, const std::string& id) {
  for (const auto& s : p.steps)
    if (s.step_id == id) return &s;
  return nullptr;
}

int attempts_of(const Phase& p, const std::string& id) {
  int n = 0;
  for (const auto& a : p.attempts)
    if (a.step_id == id && a.counted) ++n;
  return n;
}

// The round's reviewers, judge and claims; records the round. A returned outcome
// ends the drive (paused, or the spend cap).
Expected<std::optional<ReviewOutcome>> Driver::run_round(int round) {
  const json& rounds = doc_["rounds"];
  auto reviewers = ORCH_TRY(phase(round, kReviewersPhase, [&](std::int64_t budget) {
    return reviewers_plan(env_, c_, record_.id, round, rounds, budget);
  }));
  if (!reviewers) return paused_;
  json round_doc = {{"round", round}, {"runs", {{"reviewers", reviewers->run_id}}}};
  if (reviewers->status == RunStatus::BudgetExhausted)
    return std::optional<ReviewOutcome>(
        ORCH_TRY(stop(ReviewStatus::SpendCap,
                      fmt::format("the spend cap of {} tokens was reached in round {}: {}",
                                  c_.spend_cap_tokens, round, reviewers->reason),
                      kExitEscalated)));

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
      if (s && s->status == StepStatus::Done) out = parse_review_output_text(s->result, lens.name);
      if (!out) {
        ++failed;
        rd["status"] = "failed";
        rd["reason"] = s && !s->reason.empty() ? s->reason : out.error().message;
        per_lens.emplace_back();
      } else {
        for (auto& f : out->findings) check_evidence(f, file_text(env_, f.file));
        rd["status"] = rd["attempts"].get<int>() > 1 ? "repaired" : "ok";
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
  if (c_.judge) {
    auto judged = ORCH_TRY(phase(round, kJudgePhase, [&](std::int64_t budget) {
      return judge_plan(env_, c_, record_.id, round, findings, budget);
    }));
    if (!judged) return paused_;
    round_doc["runs"]["judge"] = judged->run_id;
    if (judged->status == RunStatus::BudgetExhausted)
      return std::optional<ReviewOutcome>(
          ORCH_TRY(stop(ReviewStatus::SpendCap,
                        fmt::format("the spend cap of {} tokens was reached in round {} (judge)",
                                    c_.spend_cap_tokens, round),
                        kExitEscalated)));
    const StepRecord* s = step_of(*judged, "judge");
    Expected<ReviewOutput> out = std::unexpected(Error{ErrorCode::InvalidInput, "did not run"});
    if (s && s->status == StepStatus::Done) out = parse_review_output_text(s->result, "judge");
    json jd = {{"attempts", attempts_of(*judged, "judge")}};
    if (!out) {
      // The judge is optional: its failure leaves the lenses' findings as they are.
      jd["status"] = "failed";
      jd["reason"] = s && !s->reason.empty() ? s->reason : out.error().message;
    } else {
      jd["status"] = "ok";
      std::vector<Finding> judged_findings;
      json introduced = json::array(), downgraded = json::array(), dropped = json::array();
      std::vector<Finding> claims;
      for (auto& f : out->findings) {
        check_evidence(f, file_text(env_, f.file));
        auto lens_copy =
            std::find_if(findings.begin(), findings.end(), [&](const Finding& x) { return x.id == f.id; });
        if (lens_copy != findings.end()) {
          f.lenses = lens_copy->lenses;
          if (f.severity > lens_copy->severity) downgraded.push_back(f.id);
        }
        const bool lens_raised_critical =
            lens_copy != findings.end() && lens_copy->severity == Severity::Critical;
        if (f.severity == Severity::Critical && !lens_raised_critical) {
          introduced.push_back(f.id);
          if (counts_for_gate(f)) claims.push_back(f);
        }
        if (std::none_of(judged_findings.begin(), judged_findings.end(),
                         [&](const Finding& x) { return x.id == f.id; }))
          judged_findings.push_back(std::move(f));
      }
      for (const auto& f : findings)
        if (std::none_of(judged_findings.begin(), judged_findings.end(),
                         [&](const Finding& x) { return x.id == f.id; }))
          dropped.push_back(f.id);
      jd["introduced"] = introduced;
      jd["downgraded"] = downgraded;
      jd["dropped"] = dropped;
      // The hallucination gate.
      json hallucinated = json::array(), grounded_ids = json::array();
      if (!claims.empty()) {
        auto checked = ORCH_TRY(phase(round, kClaimsPhase, [&](std::int64_t budget) {
          return claims_plan(env_, c_, record_.id, round, claims, budget);
        }));
        if (!checked) return paused_;
        round_doc["runs"]["claims"] = checked->run_id;
        if (checked->status == RunStatus::BudgetExhausted)
          return std::optional<ReviewOutcome>(
              ORCH_TRY(stop(ReviewStatus::SpendCap,
                            fmt::format("the spend cap of {} tokens was reached in round {} (claim verifier)",
                                        c_.spend_cap_tokens, round),
                            kExitEscalated)));
        for (auto& f : judged_findings) {
          if (std::none_of(claims.begin(), claims.end(), [&](const Finding& x) { return x.id == f.id; }))
            continue;
          const StepRecord* cs = step_of(*checked, "claim-" + f.id);
          bool ok = false;
          if (cs && cs->status == StepStatus::Done) {
            const json answer = json::parse(cs->result, nullptr, false);
            if (answer.is_object() && answer.value("verdict", std::string()) == "confirmed") {
              const std::string quote = answer.value("evidence", f.evidence);
              ok = grounded(env_, f, quote);
            }
            f.verdict = ok ? FindingVerdict::Confirmed : FindingVerdict::Refuted;
          }
          if (!ok) {
            f.judge_hallucinated = true;
            hallucinated.push_back(f.id);
          } else {
            grounded_ids.push_back(f.id);
          }
        }
      }
      jd["hallucinated"] = hallucinated;
      jd["grounded"] = grounded_ids;
      findings = std::move(judged_findings);
      std::stable_sort(findings.begin(), findings.end(),
                       [](const Finding& a, const Finding& b) { return a.severity < b.severity; });
    }
    round_doc["judge"] = std::move(jd);
  }

  const GateResult gate = apply_gate(findings, failed);
  round_doc["verdict"] = gate_verdict_name(gate.verdict);
  round_doc["counts"] = {{"critical", gate.critical},
                         {"major", gate.major},
                         {"minor", gate.minor},
                         {"nit", gate.nit},
                         {"excluded", gate.excluded}};
  json fj = json::array();
  for (const auto& f : findings) fj.push_back(finding_json(f));
  round_doc["findings"] = std::move(fj);

  // Dry rounds and two-strikes over every round so far.
  auto all = rounds_findings();
  all.push_back(findings);
  const RoundProgress progress = track_rounds(all, c_.dry_rounds);
  const int added = progress.new_blocking.empty() ? 0 : progress.new_blocking.back();
  round_doc["new_blocking"] = added;
  round_doc["dry"] = added == 0;
  json escalated_now = json::array();
  for (const auto& e : progress.escalated)
    if (e.round == round) escalated_now.push_back(e.id);
  round_doc["escalated"] = escalated_now;
  const bool converged = progress.converged_round.has_value();
  const bool last = converged || round >= c_.max_rounds;
  round_doc["final"] = last;
  // What the fixer gets: counted, mechanical, MINOR or worse, not escalated.
  std::set<std::string> escalated;
  for (const auto& e : progress.escalated) escalated.insert(e.id);
  json to_fix = json::array(), for_human = json::array();
  for (Severity sev : {Severity::Critical, Severity::Major, Severity::Minor})
    for (const auto& f : findings) {
      if (f.severity != sev || !counts_for_gate(f)) continue;
      if (f.mechanical && !escalated.contains(f.id) && c_.fixer)
        to_fix.push_back(f.id);
      else
        for_human.push_back(f.id);
    }
  json fix = {{"to_fix", to_fix}, {"for_human", for_human}};
  fix["status"] = last ? "not_run" : !c_.fixer ? "off" : to_fix.empty() ? "nothing_to_fix" : "pending";
  round_doc["fix"] = std::move(fix);
  doc_["rounds"].push_back(std::move(round_doc));
  doc_.erase("rounds_in_progress");
  ORCH_TRY(save());
  note(fmt::format(
      "round {}: {} (CRITICAL {}, MAJOR {}, MINOR {}, NIT {}, excluded {}); {} new CRITICAL/MAJOR{}", round,
      gate_verdict_name(gate.verdict), gate.critical, gate.major, gate.minor, gate.nit, gate.excluded, added,
      escalated_now.empty() ? "" : fmt::format("; escalated {}", escalated_now.dump())));
  return std::optional<ReviewOutcome>();
}

Expected<std::optional<ReviewOutcome>> Driver::run_fix(int round) {
  json& rd = doc_["rounds"][static_cast<std::size_t>(round - 1)];
  std::vector<Finding> to_fix;
  for (const auto& id : rd["fix"]["to_fix"])
    for (const auto& f : rd["findings"])
      if (f["id"] == id)
        if (auto parsed = finding_from_json(f)) to_fix.push_back(std::move(*parsed));
  auto fixed = ORCH_TRY(phase(round, kFixPhase, [&](std::int64_t budget) {
    return fix_plan(env_, c_, record_.id, round, to_fix, budget);
  }));
  if (!fixed) return paused_;
  json& fix = doc_["rounds"][static_cast<std::size_t>(round - 1)]["fix"];
  fix["run_id"] = fixed->run_id;
  if (fixed->status == RunStatus::BudgetExhausted) {
    fix["status"] = "not_run";
    fix["reason"] = fixed->reason;
    return std::optional<ReviewOutcome>(ORCH_TRY(stop(
        ReviewStatus::SpendCap,
        fmt::format("the spend cap of {} tokens was reached in round {} (fix)", c_.spend_cap_tokens, round),
        kExitEscalated)));
  }
  const StepRecord* s = step_of(*fixed, "fix");
  if (s && s->status == StepStatus::Done) {
    fix["status"] = "applied";
    fix["account"] = s->result.substr(0, 2000);
  } else {
    // The artifacts are the step's `writes`: the engine put them back as they were.
    fix["status"] = "rolled_back";
    fix["reason"] = s ? s->reason : fixed->reason;
  }
  ORCH_TRY(save());
  note(fmt::format("round {}: fix {}{}", round, fix["status"].get<std::string>(),
                   fix.contains("reason") ? ": " + fix["reason"].get<std::string>().substr(0, 200) : ""));
  return std::optional<ReviewOutcome>();
}

Expected<ReviewOutcome> Driver::drive() {
  auto lock = RunLock::acquire(env_.store->folder(), "review-" + record_.id);
  if (!lock) return std::unexpected(lock.error());
  record_.status = ReviewStatus::Running;
  while (true) {
    json& rounds = doc_["rounds"];
    if (!rounds.empty()) {
      const json& last = rounds.back();
      const int n = last["round"].get<int>();
      if (last["fix"]["status"] == "pending") {
        auto paused = ORCH_TRY(run_fix(n));
        if (paused) return *paused;
        continue;
      }
      if (last["final"].get<bool>()) {
        const std::string verdict = last["verdict"].get<std::string>();
        const auto progress = track_rounds(rounds_findings(), c_.dry_rounds);
        const std::string why =
            progress.converged_round
                ? fmt::format("converged: {} dry round{} in a row at round {}", c_.dry_rounds,
                              c_.dry_rounds == 1 ? "" : "s", *progress.converged_round)
                : fmt::format("max_rounds ({}) reached without converging", c_.max_rounds);
        if (!progress.escalated.empty())
          return stop(ReviewStatus::Escalated,
                      fmt::format("{}; verdict {}; {} finding{} escalated by two-strikes", why, verdict,
                                  progress.escalated.size(), progress.escalated.size() == 1 ? "" : "s"),
                      kExitEscalated);
        if (verdict == "PASS") return stop(ReviewStatus::Passed, why + "; verdict PASS", kExitSucceeded);
        return stop(ReviewStatus::Failed, fmt::format("{}; verdict {}", why, verdict), kExitFailed);
      }
    }
    const int next = static_cast<int>(rounds.size()) + 1;
    auto ended = ORCH_TRY(run_round(next));
    if (ended) return *ended;
  }
}

Expected<ReviewOutcome> drive_review(ReviewEnv& env, ReviewRecord record) {
  json doc = json::parse(record.doc_json, nullptr, false);
  if (!doc.is_object() || !doc.contains("config"))
    return fail(ErrorCode::Store,
                fmt::format("review '{}': its document in the ledger is damaged", record.id));
  ReviewConfig config = ORCH_TRY(review_config_from_json(doc["config"]));
  if (!doc.contains("rounds")) doc["rounds"] = json::array();
  Driver driver(env, std::move(record), std::move(doc), std::move(config));
  return driver.drive();
}

std::string slug_of(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (std::isalnum(u))
      out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-')
      out += '-';
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "review" : out;
}

}  // namespace review_run_detail

namespace rrd = review_run_detail;

Expected<void> check_review_executors(const ReviewEnv& env, const ReviewConfig& c) {
  ojson steps = ojson::array();
  auto probe = [&](const std::string& id, const std::string& executor) {
    steps.push_back(
        {{"id", id}, {"goal", "probe"}, {"executor", executor}, {"inputs", {{"prompt", "probe"}}}});
  };
  for (const auto& lens : c.lenses) probe(lens.name, lens.role.executor);
  if (c.judge) probe("judge", c.judge->executor);
  if (c.verifier) probe("verifier", c.verifier->executor);
  if (c.fixer) probe("fixer", c.fixer->executor);
  const ojson plan = {{"name", "review pre-flight"}, {"steps", steps}};
  auto checked = load_built_plan(env.workspace, *env.executors, json_text(plan), c.file, "the review");
  if (!checked) return std::unexpected(checked.error());
  return {};
}

Expected<ReviewRecord> find_review(ReviewEnv& env, const std::string& id) {
  auto found = ORCH_TRY(env.reviews->find_review(id));
  if (found) return *found;
  std::vector<std::string> ids;
  for (const auto& r : ORCH_TRY(env.reviews->list_reviews())) {
    if (r.id.starts_with(id)) return r;
    ids.push_back(r.id);
  }
  return fail(ErrorCode::NotFound, fmt::format("no review '{}' in the ledger{}", id, did_you_mean(id, ids)));
}

Expected<ReviewOutcome> start_review(ReviewEnv& env, const ReviewConfig& config) {
  ORCH_TRY(check_review_executors(env, config));
  const std::int64_t now = env.now_ms();
  const std::string stamp = iso8601_utc(now, TimePrecision::Seconds);  // 2026-11-30T15:02:00Z
  std::string base;
  for (char ch : stamp.substr(0, 19))
    if (std::isdigit(static_cast<unsigned char>(ch))) base += ch;
  base = base.substr(0, 8) + "-" + base.substr(8) + "-" + rrd::slug_of(config.name);
  std::string id = base;
  for (int n = 2; ORCH_TRY(env.reviews->find_review(id)); ++n) id = fmt::format("{}-{}", base, n);
  ReviewRecord record;
  record.id = id;
  record.name = config.name;
  record.workspace = env.workspace.string();
  record.created_at = now;
  record.updated_at = now;
  json doc = {{"id", id},
              {"name", config.name},
              {"workspace", env.workspace.string()},
              {"status", "running"},
              {"verdict", ""},
              {"stop_reason", ""},
              {"created_at", stamp},
              {"updated_at", stamp},
              {"config", review_config_json(config)},
              {"rounds", json::array()},
              {"findings", json::array()},
              {"escalations", json::array()},
              {"tokens", {{"spent", 0}, {"cap", config.spend_cap_tokens}}}};
  record.doc_json = doc.dump();
  ORCH_TRY(env.reviews->insert_review(record));
  if (env.on_note) env.on_note(fmt::format("review {} started", id));
  return rrd::drive_review(env, std::move(record));
}

Expected<ReviewOutcome> resume_review(ReviewEnv& env, const std::string& id,
                                      std::optional<std::int64_t> spend_cap) {
  ReviewRecord record = ORCH_TRY(find_review(env, id));
  if (record.status != ReviewStatus::Running && record.status != ReviewStatus::SpendCap)
    return fail(ErrorCode::InvalidInput, fmt::format("review '{}' has ended ({}): nothing to resume",
                                                     record.id, review_status_name(record.status)));
  json doc = json::parse(record.doc_json, nullptr, false);
  if (!doc.is_object() || !doc.contains("config"))
    return fail(ErrorCode::Store,
                fmt::format("review '{}': its document in the ledger is damaged", record.id));
  if (record.status == ReviewStatus::SpendCap) {
    const std::int64_t cap = doc["config"].value("spend_cap_tokens", std::int64_t{0});
    if (!spend_cap || *spend_cap <= cap)
      return fail(ErrorCode::InvalidInput,
                  fmt::format("review '{}' stopped at its spend cap of {} tokens: resume it with a higher "
                              "--spend-cap",
                              record.id, cap));
  }
  if (spend_cap) doc["config"]["spend_cap_tokens"] = *spend_cap;
  record.doc_json = doc.dump();
  record.status = ReviewStatus::Running;
  return rrd::drive_review(env, std::move(record));
}

namespace {
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 160 ? line.substr(0, 157) + "..." : line;
}
}  // namespace

std::string review_markdown(const json& doc) {
  std::string out =
      fmt::format("# Review {} — {}\n\n", doc.value("name", std::string()), doc.value("id", std::string()));
  out += fmt::format("- **Status:** {}\n", doc.value("status", std::string()));
  out += fmt::format("- **Verdict:** {}\n", doc.value("verdict", std::string()).empty()
                                                ? "(no round yet)"
                                                : doc.value("verdict", std::string()));
  if (!doc.value("stop_reason", std::string()).empty())
    out += fmt::format("- **Stopped:** {}\n", doc.value("stop_reason", std::string()));
  if (doc.contains("score"))
    out += fmt::format("- **Quality score:** {} ({}; thresholds {})\n", doc["score"].value("score", 0),
                       doc["score"].value("band", std::string()), doc["score"]["thresholds"].dump());
  if (doc.contains("tokens"))
    out += fmt::format("- **Tokens:** {} spent of a {} cap\n", doc["tokens"].value("spent", 0LL),
                       doc["tokens"].value("cap", 0LL));
  out +=
      "\n## Rounds\n\n| round | verdict | CRITICAL | MAJOR | MINOR | NIT | excluded | new CRITICAL/MAJOR | "
      "fix |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : doc.value("rounds", json::array())) {
    const json& c = r["counts"];
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.value("round", 0),
                       r.value("verdict", std::string()), c.value("critical", 0), c.value("major", 0),
                       c.value("minor", 0), c.value("nit", 0), c.value("excluded", 0),
                       r.value("new_blocking", 0), r["fix"].value("status", std::string()));
    for (const auto& rv : r.value("reviewers", json::array()))
      if (rv.value("status", std::string()) == "failed")
        out += fmt::format("|  | lens {} FAILED: {} |||||||| \n", rv.value("lens", std::string()),
                           first_line(rv.value("reason", std::string())));
  }
  const json escalations = doc.value("escalations", json::array());
  if (!escalations.empty()) {
    out += "\n## Escalated to you (two-strikes: not patched a third time)\n\n";
    for (const auto& e : escalations)
      out += fmt::format("- `{}` (round {})\n", e.value("id", std::string()), e.value("round", 0));
  }
  out += "\n## Findings\n\n";
  const json findings = doc.value("findings", json::array());
  if (findings.empty()) out += "None.\n";
  for (const auto& f : findings) {
    std::string tags;
    const json& h = f["history"];
    const std::string last_status = h.empty() ? "" : h.back().value("status", std::string());
    if (last_status == "judge_hallucinated") tags += " [JUDGE-HALLUCINATED]";
    if (last_status == "unverified") tags += " [UNVERIFIED: quote not in the file]";
    if (last_status == "refuted") tags += " [REFUTED]";
    std::string rounds;
    for (const auto& e : h)
      rounds += fmt::format("{}{}:{}", rounds.empty() ? "" : ", ", e.value("round", 0),
                            e.value("severity", std::string()));
    out += fmt::format("- **{}** `{}` {} — {}: {}{} ({}; rounds {}; {})\n",
                       f.value("severity", std::string()), f.value("id", std::string()),
                       f.value("file", std::string()), f.value("locus", std::string()),
                       f.value("claim", std::string()), tags, f.value("state", std::string()), rounds,
                       f.value("mechanical", false) ? "mechanical" : "needs judgement");
  }
  return out;
}

}  // namespace orch::flows
