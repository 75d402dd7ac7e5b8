#include "flows/review_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/attempt_render.h"
#include "engine/phase_runner.h"
#include "engine/run_lock.h"
#include "flows/embedded_files.h"
#include "flows/plan_template.h"
#include "flows/review_gate.h"
#include "flows/review_rounds.h"
#include "flows/review_score.h"
#include "flows/stage_plan.h"
#include "orch/report.h"
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

// What drive_review does with the review once it holds its lock.
enum class DriveMode { Launch, Resume, Abandon };

constexpr const char* kReviewersPhase = "reviewers";
constexpr const char* kJudgePhase = "judge";
constexpr const char* kClaimsPhase = "claims";
constexpr const char* kFixPhase = "fix";

std::string phase_run_name(const std::string& id, int round, const char* phase) {
  return fmt::format("review {} round {} {}", id, round, phase);
}

const char* const kContract =
    "Reply with ONE JSON document and nothing else: "
    "{\"findings\": [...], \"scorecard\": {...}}.\n"
    "Each finding: file (as listed under artifacts), locus (the function, section or "
    "heading: where, by name), severity (CRITICAL, MAJOR, MINOR or NIT), claim (what is "
    "wrong), and when you can: line, rule, evidence (a VERBATIM quote from the file: it is "
    "checked, and a quote that is not there voids the finding), failing_case, "
    "suggested_fix, mechanical (true when the fix needs no judgement), confidence (0..1). "
    "No other fields. The scorecard is your own summary (an object). "
    "No findings: \"findings\": [].";

const char* const kJudgeBrief =
    "You are the judge of this review round. The lenses' findings are below, "
    "de-duplicated, each with its id. You may downgrade a finding's severity, or merge "
    "findings that are one defect: keep one and name each one you merged into it under "
    "\"merged\": {\"MERGED_ID\": \"KEPT_ID\"} beside \"findings\". A finding you leave out "
    "without merging it is kept as the lenses reported it. Keep the file, locus and rule "
    "of a finding you keep, so that it stays the same finding. Add a finding only for a "
    "defect the lenses missed, quoting the artifact verbatim as its evidence: a CRITICAL "
    "no lens raised is checked again before it counts.";

const char* const kClaimBrief =
    "Check one claim about the artifact, from the artifact alone. Reply with ONE JSON "
    "document and nothing else: {\"verdict\": \"confirmed\" or \"refuted\", \"evidence\": "
    "\"a VERBATIM quote from the file that shows the defect\", \"note\": \"...\"}. "
    "Confirm only what the quote shows.";

const char* const kClaimSchema = R"({"type": "object", "required": ["verdict"],
  "properties": {"verdict": {"enum": ["confirmed", "refuted"]},
                 "evidence": {"type": "string"}, "note": {"type": "string"}}})";

// The inputs of a review step. Every text orch passes (prompts, artifacts,
// findings, quotes, the verify command) is literal, never a placeholder: "${"
// and "#E0" in an artifact or a quote reach the worker or model as written.
ojson role_inputs(const std::string& executor, const std::string& prompt,
                  std::vector<std::pair<std::string, std::string>> extra, bool with_previous_failure) {
  for (auto& entry : extra) entry.second = escape_placeholders(entry.second);
  return stage_inputs(executor, escape_placeholders(prompt), extra, with_previous_failure);
}

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
  out.emplace_back("artifact_text", text);
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

// The judge answers like a reviewer, plus "merged": {MERGED_ID: KEPT_ID}.
ojson judge_schema_json() {
  ojson schema = finding_schema_json();
  schema["properties"]["merged"] = {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}};
  return schema;
}

std::string reviewer_step_id(const LensConfig& lens, int k, int reviewers) {
  return reviewers == 1 ? lens.name : fmt::format("{}-{}", lens.name, k);
}

// The counted findings of the last round, for a review without fresh context.
std::string previous_findings_text(const json& rounds) {
  if (rounds.empty()) return "(none)";
  json last = json::array();
  for (const auto& f : rounds.back()["findings"]) {
    auto parsed = finding_from_json(f);
    if (!parsed || !counts_for_gate(*parsed)) continue;
    last.push_back({{"file", parsed->file},
                    {"locus", parsed->locus},
                    {"severity", severity_name(parsed->severity)},
                    {"claim", parsed->claim}});
  }
  return json_text(last, 2);
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
      if (!c.fresh_context) extra.emplace_back("previous_findings", previous_findings_text(rounds));
      steps.push_back(
          {{"id", reviewer_step_id(lens, k, c.reviewers)},
           {"goal",
            fmt::format("Review the artifacts through the lens '{}' (review round {}).", lens.name, round)},
           {"executor", lens.role.executor},
           {"attempts", 2},
           {"env", role_env(id, round, "reviewer", lens.name)},
           {"inputs", role_inputs(lens.role.executor, lens.prompt + "\n\n" + kContract, extra, true)},
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
  extra.emplace_back("findings", json_text(brief_findings(reduced), 2));
  const std::string prompt = std::string(kJudgeBrief) + "\n\n" + kContract;
  ojson steps = ojson::array({{{"id", "judge"},
                               {"goal", fmt::format("Judge the findings of review round {}.", round)},
                               {"executor", c.judge->executor},
                               {"attempts", 2},
                               {"env", role_env(id, round, "judge", "")},
                               {"inputs", role_inputs(c.judge->executor, prompt, extra, true)},
                               {"post", ojson::array({{{"result_json", judge_schema_json()}}})}}});
  return plan_of(phase_run_name(id, round, kJudgePhase), 1, budget, std::move(steps));
}

ojson claims_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id, int round,
                  const std::vector<Finding>& claims, std::int64_t budget) {
  ojson steps = ojson::array();
  for (const Finding& f : claims) {
    auto extra = artifact_inputs(env, c, c.verifier->executor);
    const json claim = {{"file", f.file}, {"locus", f.locus}, {"claim", f.claim}, {"evidence", f.evidence}};
    extra.emplace_back("claim", json_text(claim, 2));
    steps.push_back(
        {{"id", fmt::format("claim-{}", f.id)},
         {"goal", fmt::format("Verify a CRITICAL claim the judge added (review round {}).", round)},
         {"executor", c.verifier->executor},
         {"attempts", 2},
         {"env", role_env(id, round, "verifier", "")},
         {"inputs", role_inputs(c.verifier->executor, kClaimBrief, extra, true)},
         {"post", ojson::array({{{"result_json", ojson::parse(kClaimSchema)}}})}});
  }
  return plan_of(phase_run_name(id, round, kClaimsPhase), c.max_parallel, budget, std::move(steps));
}

// Whether a finding on `file` may go to the fixer: the file is one the fix
// step's `writes` can snapshot and a rollback restore — inside the workspace (not
// the workspace itself) and outside orch's own folders (the ledger, the reports).
bool fixable_file(const ReviewEnv& env, const std::string& file) {
  auto path = resolve_in_workspace(env.workspace, file);
  auto root = resolve_in_workspace(env.workspace, ".");
  if (!path || !root || *path == *root) return false;
  auto inside = [&](const fs::path& folder) {
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(folder, ec);
    if (ec) return false;
    const fs::path rel = path->lexically_relative(real);
    return !rel.empty() && *rel.begin() != "..";
  };
  return !inside(env.store->folder()) && !inside(env.workspace / ".orch");
}

// What the fix step may write, and so what is snapshotted before it and restored
// when the verify command fails: the artifacts and every file the fixer is given
// a finding on (run_round gives it only fixable_file ones).
std::vector<std::string> fix_writes(const ReviewConfig& c, const std::vector<Finding>& to_fix) {
  std::vector<std::string> writes = c.artifacts;
  for (const Finding& f : to_fix)
    if (std::find(writes.begin(), writes.end(), f.file) == writes.end()) writes.push_back(f.file);
  return writes;
}

// The content of a workspace file, as a fingerprint: "" when it cannot be read
// (absent), so a file the fix creates or removes shows as changed.
std::string content_fingerprint(const ReviewEnv& env, const std::string& file) {
  auto path = resolve_in_workspace(env.workspace, file);
  if (!path) return {};
  auto text = read_file_text(*path);
  return text ? fingerprint_of(*text) : std::string();
}

// The files the fix must leave alone that the review can check cheaply: those of
// the review's findings (any round) that are not the fix's writes. A change to
// one could void a finding's quote without a check; a rollback would not undo it.
json guarded_files(const ReviewEnv& env, const json& rounds, const std::vector<std::string>& writes) {
  json guarded = json::object();
  for (const auto& r : rounds)
    for (const auto& f : r["findings"]) {
      const std::string file = f.value("file", std::string());
      if (file.empty() || guarded.contains(file) || !fixable_file(env, file) ||
          std::find(writes.begin(), writes.end(), file) != writes.end())
        continue;
      guarded[file] = content_fingerprint(env, file);
    }
  return guarded;
}

ojson fix_plan(const ReviewEnv& env, const ReviewConfig& c, const std::string& id, int round,
               const std::vector<Finding>& to_fix, std::int64_t budget) {
  auto extra = artifact_inputs(env, c, c.fixer->executor);
  extra.emplace_back("findings", json_text(brief_findings(to_fix), 2));
  const std::vector<std::string> writes = fix_writes(c, to_fix);
  const std::string prompt = fmt::format(
      "Fix these findings in the files they name, in the order given (CRITICAL, then MAJOR, then "
      "MINOR), editing the files in place. Change nothing else: only these files may change: {}. "
      "After you finish, `{}` must succeed, or every change to them is rolled back. Reply with a "
      "short account of what you changed.",
      join(writes, ", "), c.verify);
  ojson post = ojson::array({"exit_zero"});
  if (!c.verify.empty()) post.push_back({{"kind", "shell_zero"}, {"cmd", c.verify}, {"timeout", "10m"}});
  ojson steps = ojson::array({{{"id", "fix"},
                               {"goal", fmt::format("Apply the mechanical fixes of review round {}.", round)},
                               {"executor", c.fixer->executor},
                               {"attempts", 1},
                               {"writes", writes},
                               {"env", role_env(id, round, "fixer", "")},
                               {"inputs", role_inputs(c.fixer->executor, prompt, extra, false)},
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

// The absolute spellings of the workspace a reviewer may write a path under: as
// given and with its symlinks resolved (a worker's getcwd() gives the latter).
std::vector<std::string> workspace_roots(const ReviewEnv& env) {
  std::error_code ec;
  std::vector<std::string> roots = {normalise_path(fs::absolute(env.workspace, ec).string())};
  const fs::path real = fs::weakly_canonical(env.workspace, ec);
  if (!ec && normalise_path(real.string()) != roots.front()) roots.push_back(normalise_path(real.string()));
  return roots;
}

struct Phase {
  std::string run_id;
  RunStatus status = RunStatus::Failed;
  std::string reason;
  std::vector<StepRecord> steps;
  std::vector<AttemptRecord> attempts;
};

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

// Why a reviewer (or the judge) is recorded failed: the step's own reason when it
// failed, the parse error when it ended done but its answer could not be read.
std::string failure_of(const StepRecord* s, const Expected<ReviewOutput>& out) {
  if (s && s->status != StepStatus::Done && !s->reason.empty()) return s->reason;
  return out ? std::string() : out.error().message;
}

// Everything spent by the review's runs so far.
Expected<std::int64_t> spent_tokens(ReviewEnv& env, const std::string& id) {
  return owner_spent_tokens(*env.store, OwnerKind::Review, id);
}

std::vector<std::vector<Finding>> findings_of_rounds(const json& rounds) {
  std::vector<std::vector<Finding>> out;
  for (const auto& r : rounds) {
    std::vector<Finding> list;
    for (const auto& f : r["findings"])
      if (auto parsed = finding_from_json(f)) list.push_back(std::move(*parsed));
    out.push_back(std::move(list));
  }
  return out;
}

bool round_complete(const json& r) {
  const bool unchecked = r.contains("judge") && !r["judge"].value("unchecked", json::array()).empty();
  return r.value("failed_lenses", 0) == 0 && !unchecked;
}

// What track_rounds needs besides the findings: whether each round was complete
// and which ids were handed to the fixer after it (a fix that ran).
std::vector<RoundFacts> facts_of_rounds(const json& rounds) {
  std::vector<RoundFacts> out;
  for (const auto& r : rounds) {
    RoundFacts f;
    f.complete = round_complete(r);
    const std::string status = r["fix"].value("status", std::string());
    if (status == "applied" || status == "rolled_back")
      for (const auto& id : r["fix"]["to_fix"]) f.patched.insert(id.get<std::string>());
    out.push_back(std::move(f));
  }
  return out;
}

// What the judge did to the round's findings (see docs/review.md, "A round").
struct Judged {
  std::vector<Finding> findings;  // the round's findings after the judge
  std::vector<Finding> claims;    // CRITICALs no lens raised (counted ones): for the claim verifier
  // Lens findings the judge left out naming the finding it merged each into:
  // settled by settle_merges once the claims are checked.
  std::vector<std::pair<Finding, std::string>> merges;
  json doc = json::object();  // introduced, downgraded, kept; merged and merge_refused by settle_merges
};

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

class Driver {
 public:
  Driver(ReviewEnv& env, ReviewRecord record, json doc, ReviewConfig config, LaterEdits later_edits)
      : env_(env),
        record_(std::move(record)),
        doc_(std::move(doc)),
        c_(std::move(config)),
        later_edits_(later_edits) {}

  Expected<ReviewOutcome> drive();
  // Ends a review that has not ended (running, or stopped by its spend cap) as
  // abandoned: recorded like any stop, nothing run, the files left as they are.
  Expected<ReviewOutcome> abandon(ReviewStatus was);

 private:
  void note(const std::string& line) {
    if (env_.on_note) env_.on_note(line);
  }
  Expected<void> save();
  Expected<std::optional<Phase>> phase(int round, const char* name,
                                       const std::function<ojson(std::int64_t)>& build);
  Expected<ReviewOutcome> stop(ReviewStatus status, const std::string& reason, int exit_code);
  Expected<std::optional<ReviewOutcome>> spend_cap_stop(int round, const char* phase, const std::string& why);
  Expected<std::optional<ReviewOutcome>> run_round(int round);
  Expected<std::optional<ReviewOutcome>> run_fix(int round);
  RoundProgress progress() const {
    return track_rounds(findings_of_rounds(doc_["rounds"]), c_.dry_rounds, facts_of_rounds(doc_["rounds"]));
  }

  ReviewEnv& env_;
  ReviewRecord record_;
  json doc_;
  ReviewConfig c_;
  LaterEdits later_edits_;
  std::optional<ReviewOutcome> paused_;  // a phase that did not end: interrupted, awaiting approval
};

Expected<void> Driver::save() {
  const std::int64_t spent = ORCH_TRY(spent_tokens(env_, record_.id));
  doc_["tokens"] = {{"spent", spent}, {"cap", c_.spend_cap_tokens}};
  doc_["config"] = review_config_json(c_);
  // Findings with their history, escalations, score: recomputed from the rounds.
  const json& rounds = doc_["rounds"];
  const auto per_round = findings_of_rounds(rounds);
  std::map<std::string, json> findings;
  std::vector<std::string> order;
  for (std::size_t r = 0; r < per_round.size(); ++r) {
    for (const auto& f : per_round[r]) {
      json history = json::array();
      if (auto it = findings.find(f.id); it != findings.end())
        history = std::move(it->second["history"]);
      else
        order.push_back(f.id);
      const char* status = f.judge_hallucinated                   ? "judge_hallucinated"
                           : f.unverified                         ? "unverified"
                           : f.verdict == FindingVerdict::Refuted ? "refuted"
                                                                  : "counted";
      history.push_back({{"round", r + 1}, {"severity", severity_name(f.severity)}, {"status", status}});
      json latest = finding_json(f);
      latest["history"] = std::move(history);
      findings[f.id] = std::move(latest);
    }
  }
  // "gone" is judged by the last complete round: one where a lens failed says
  // nothing about what is left.
  std::set<std::string> in_last;
  for (std::size_t r = per_round.size(); r-- > 0;) {
    if (!round_complete(rounds[r])) continue;
    for (const auto& f : per_round[r]) in_last.insert(f.id);
    break;
  }
  const RoundProgress p = progress();
  std::set<std::string> escalated;
  json esc = json::array();
  for (const auto& e : p.escalated) {
    escalated.insert(e.id);
    esc.push_back({{"id", e.id}, {"round", e.round}});
  }
  json list = json::array();
  for (const auto& id : order) {
    json f = std::move(findings[id]);
    f["state"] = escalated.contains(id) ? "escalated" : in_last.contains(id) ? "open" : "gone";
    list.push_back(std::move(f));
  }
  doc_["findings"] = std::move(list);
  doc_["escalations"] = std::move(esc);
  // The score is that of the last complete round (every lens ran, every claim
  // checked): a round in which a lens failed found nothing that can be scored,
  // and a review with no complete round has no score at all (null), never 100.
  doc_["score"] = nullptr;
  for (std::size_t r = per_round.size(); r-- > 0;) {
    if (!round_complete(rounds[r])) continue;
    const QualityScore score = quality_score(per_round[r], c_.rubric);
    json thresholds = json::object();
    for (const auto& [name, min] : c_.rubric.thresholds) thresholds[name] = min;
    doc_["score"] = {{"score", score.score},
                     {"band", score.band},
                     {"thresholds", thresholds},
                     {"round", static_cast<int>(r) + 1}};
    break;
  }
  record_.rounds = static_cast<int>(rounds.size());
  record_.verdict = rounds.empty() ? "" : rounds.back().value("verdict", std::string());
  doc_["status"] = review_status_name(record_.status);
  doc_["verdict"] = record_.verdict;
  record_.updated_at = env_.now_ms();
  doc_["updated_at"] = iso8601_utc(record_.updated_at, TimePrecision::Seconds);
  record_.doc_json = json_text(doc_);
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

// Runs the round's phase through the engine's phase runner: its run is found by
// its owner key (this review, the round, the phase), started, resumed, or
// resumed under a raised spend cap. nullopt: the review must pause (the outcome
// is in paused_).
Expected<std::optional<Phase>> Driver::phase(int round, const char* name,
                                             const std::function<ojson(std::int64_t)>& build) {
  const std::string run_name = phase_run_name(record_.id, round, name);
  EngineOptions eo;
  eo.workspace = env_.workspace;
  eo.executors = env_.executors;
  eo.handle_signals = env_.handle_signals;
  eo.ask_approval = env_.ask_approval;
  PhaseRunner runner(*env_.store, std::move(eo));
  PhaseRequest request;
  request.key = RunOwner{OwnerKind::Review, record_.id, round, name};
  request.tokens_left =
      c_.spend_cap_tokens - ORCH_TRY(owner_spent_tokens(*env_.store, OwnerKind::Review, record_.id));
  request.build = [&](std::int64_t left) -> Expected<BuiltPlan> {
    std::string text = json_text(build(left), 2);
    Plan plan = ORCH_TRY(load_built_plan(env_.workspace, *env_.executors, text, run_name,
                                         "the review's " + std::string(name) + " plan"));
    return BuiltPlan{std::move(plan), std::move(text)};
  };
  request.later_edits = later_edits_;
  request.who = fmt::format("review {}: the {} of round {}", record_.id, name, round);
  request.resume_command = fmt::format("orch review --resume {}", record_.id);
  request.on_note = [this](const std::string& line) { note(line); };
  request.on_start = [&](PhaseStart start, const std::string& run_id) {
    note(start == PhaseStart::ResumedUnderRaisedCap
             ? fmt::format("round {}: {}: resuming run {} under the raised spend cap", round, name, run_id)
         : start == PhaseStart::Resumed ? fmt::format("round {}: {}: resuming run {}", round, name, run_id)
                                        : fmt::format("round {}: {}", round, name));
  };
  const PhaseResult ran = ORCH_TRY(runner.run(request));
  Phase p;
  p.run_id = ran.run_id;
  p.status = ran.status;
  // A run the cap stopped under an earlier, lower cap (one raised, but not past
  // what was spent): its reason counts against that cap, not the one now.
  p.reason = ran.start == PhaseStart::Ended && ran.status == RunStatus::BudgetExhausted
                 ? "nothing is left of the spend cap"
                 : ran.reason;
  if (ran.start == PhaseStart::NoBudget) return std::optional<Phase>(std::move(p));
  // A phase that did not end, or that `orch cancel` stopped, pauses the review:
  // nothing of the phase is recorded and no further phase runs (a cancelled
  // reviewer must not make the round INCOMPLETE and the loop go on).
  if (ran.start != PhaseStart::Ended &&
      (p.status == RunStatus::Interrupted || p.status == RunStatus::AwaitingApproval ||
       p.status == RunStatus::Running || p.status == RunStatus::Cancelled)) {
    ReviewOutcome out;
    out.id = record_.id;
    out.status = ReviewStatus::Running;
    out.exit_code = exit_code_for(p.status);
    out.reason = p.status == RunStatus::AwaitingApproval
                     ? fmt::format("round {}: {}: {} (then `orch review --resume {}`)", round, name, p.reason,
                                   record_.id)
                 : p.status == RunStatus::Cancelled
                     ? fmt::format(
                           "cancelled in round {} ({}): run {} was cancelled (orch cancel); the review "
                           "stopped: to go on, `orch review --resume {}`",
                           round, name, p.run_id, record_.id)
                     : fmt::format("interrupted in round {} ({}): continue with `orch review --resume {}`",
                                   round, name, record_.id);
    doc_["rounds_in_progress"] = round;
    if (p.status == RunStatus::Cancelled) doc_["stop_reason"] = out.reason;
    ORCH_TRY(save());
    out.doc = doc_;
    paused_ = std::move(out);
    return std::optional<Phase>();
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

Expected<ReviewOutcome> Driver::abandon(ReviewStatus was) {
  const int done = static_cast<int>(doc_["rounds"].size());
  const bool mid_round = doc_.contains("rounds_in_progress");
  return stop(
      ReviewStatus::Abandoned,
      fmt::format("abandoned by `orch review --abandon` ({}, {} round{} done{}); nothing more runs, and "
                  "the files are left as they are",
                  review_status_name(was), done, done == 1 ? "" : "s", mid_round ? ", one cut off" : ""),
      kExitSucceeded);
}

Expected<std::optional<ReviewOutcome>> Driver::spend_cap_stop(int round, const char* phase,
                                                              const std::string& why) {
  const std::int64_t spent = ORCH_TRY(spent_tokens(env_, record_.id));
  ReviewOutcome out = ORCH_TRY(
      stop(ReviewStatus::SpendCap,
           fmt::format("the spend cap of {} tokens was reached in round {} ({}) with {} spent: {}; raise it "
                       "with `orch review --resume {} --spend-cap N`",
                       c_.spend_cap_tokens, round, phase, spent, why, record_.id),
           kExitEscalated));
  return std::optional<ReviewOutcome>(std::move(out));
}

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
        rd["status"] = "failed";
        rd["reason"] = failure_of(s, out);
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
      jd["status"] = "failed";
      jd["reason"] = failure_of(s, out);
    } else {
      Judged j = apply_judge(env_, findings, std::move(*out), merged);
      jd["status"] = "ok";
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
  provisional["fix"] = {{"status", "not_run"}, {"to_fix", json::array()}, {"for_human", json::array()}};
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
  fix["status"] = last ? "not_run" : !c_.fixer ? "off" : to_fix.empty() ? "nothing_to_fix" : "pending";
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
    fix["status"] = "applied";
    fix["account"] = utf8_prefix(s->result, 2000);
    fix.erase("reason");
  } else {
    // The artifacts are the step's `writes`: the engine put them back as they were.
    fix["status"] = "rolled_back";
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

Expected<ReviewOutcome> Driver::drive() {
  record_.status = ReviewStatus::Running;
  doc_["stop_reason"] = "";  // a resumed review is running again
  while (true) {
    const json& rounds = doc_["rounds"];
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
        const RoundProgress p = progress();
        const std::string why =
            p.converged_round ? fmt::format("converged: {} dry round{} in a row at round {}", c_.dry_rounds,
                                            c_.dry_rounds == 1 ? "" : "s", *p.converged_round)
                              : fmt::format("max_rounds ({}) reached without converging", c_.max_rounds);
        if (!p.escalated.empty())
          return stop(ReviewStatus::Escalated,
                      fmt::format("{}; verdict {}; {} finding{} escalated by two-strikes", why, verdict,
                                  p.escalated.size(), p.escalated.size() == 1 ? "" : "s"),
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

// Takes the review's lock, reads its row as it is now (not as it was before the
// lock), and drives it (Launch, Resume) or ends it (Abandon). `spend_cap`:
// resume's --spend-cap.
Expected<ReviewOutcome> drive_review(ReviewEnv& env, const std::string& id, DriveMode mode,
                                     std::optional<std::int64_t> spend_cap, LaterEdits later_edits) {
  const bool resuming = mode != DriveMode::Launch;
  // The lock is the review's, not a run's: `orch cancel` does not know it, but an
  // interrupted review goes on with --resume.
  auto lock = RunLock::acquire(env.store->folder(), "review-" + id, [&](const std::string& pid) {
    return pid == "unknown"
               ? fmt::format(
                     "review {} is already being driven by another orch process; wait for it to "
                     "finish (`orch review --show {}`)",
                     id, id)
               : fmt::format(
                     "review {} is already being driven by another orch process (pid {}); wait for "
                     "it to finish, or stop it with `kill -INT {}` and {} with `orch review "
                     "--{} {}`",
                     id, pid, pid, mode == DriveMode::Abandon ? "end it" : "go on",
                     mode == DriveMode::Abandon ? "abandon" : "resume", id);
  });
  if (!lock) return std::unexpected(lock.error());
  auto found = ORCH_TRY(env.reviews->find_review(id));
  if (!found) return fail(ErrorCode::NotFound, fmt::format("no review '{}' in the ledger", id));
  ReviewRecord record = std::move(*found);
  if (resuming && record.status != ReviewStatus::Running && record.status != ReviewStatus::SpendCap)
    return fail(ErrorCode::InvalidInput, fmt::format("review '{}' has ended ({}): nothing to {}", record.id,
                                                     review_status_name(record.status),
                                                     mode == DriveMode::Abandon ? "abandon" : "resume"));
  const ReviewStatus was = record.status;
  json doc = json::parse(record.doc_json, nullptr, false);
  if (!doc.is_object() || !doc.contains("config") || !doc["config"].is_object())
    return fail(ErrorCode::Store,
                fmt::format("review '{}': its document in the ledger is damaged", record.id));
  const std::int64_t cap = doc["config"].value("spend_cap_tokens", std::int64_t{0});
  if (mode == DriveMode::Resume && record.status == ReviewStatus::SpendCap &&
      (!spend_cap || *spend_cap <= cap))
    return fail(ErrorCode::InvalidInput,
                fmt::format("review '{}' stopped at its spend cap of {} tokens: resume it with a higher "
                            "--spend-cap",
                            record.id, cap));
  if (spend_cap) doc["config"]["spend_cap_tokens"] = *spend_cap;
  ReviewConfig config = ORCH_TRY(review_config_from_json(doc["config"]));
  if (!doc.contains("rounds") || !doc["rounds"].is_array()) doc["rounds"] = json::array();
  Driver driver(env, std::move(record), std::move(doc), std::move(config), later_edits);
  if (mode == DriveMode::Abandon) return driver.abandon(was);
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
  for (const auto& lens : c.lenses) probe("lens-" + lens.name, lens.role.executor);
  if (c.judge) probe("role-judge", c.judge->executor);
  if (c.verifier) probe("role-verifier", c.verifier->executor);
  if (c.fixer) probe("role-fixer", c.fixer->executor);
  const ojson plan = {{"name", "review pre-flight"}, {"steps", steps}};
  auto checked = load_built_plan(env.workspace, *env.executors, json_text(plan), c.file, "the review");
  if (!checked) return std::unexpected(checked.error());
  // A reviewer that cannot start (its CLI not installed, its provider's key not
  // set) is a set-up error: said now, before anything runs, never as a lens that
  // FAILED in every round of a review that then has nothing to score.
  std::vector<std::string> cannot_start;
  for (const Step& step : checked->steps)
    if (const Executor* executor = env.executors->find(step.executor))
      if (auto why = executor->setup_problem(step))
        cannot_start.push_back(fmt::format(
            "{}: {}: {}", c.file,
            step.id.starts_with("lens-") ? fmt::format("lens '{}'", step.id.substr(5)) : step.id.substr(5),
            *why));
  if (!cannot_start.empty())
    return fail(ErrorCode::InvalidInput,
                fmt::format("{} of the review's roles cannot start, so nothing was run:\n{}",
                            cannot_start.size(), join(cannot_start, "\n")));
  // Every phase's plan, built as a round would build it (with a stand-in
  // finding), must be runnable: a plan orch cannot run must fail here, before
  // the review exists, never in the middle of a round.
  Finding sample;
  sample.id = "000000000000";
  sample.file = c.artifacts.empty() ? std::string("artifact") : c.artifacts.front();
  sample.locus = "locus";
  sample.severity = Severity::Critical;
  sample.claim = "claim";
  const std::string id = "preflight";
  const json rounds = json::array({{{"findings", json::array({finding_json(sample)})}}});
  std::vector<std::pair<std::string, ojson>> phases = {
      {rrd::kReviewersPhase, rrd::reviewers_plan(env, c, id, 2, rounds, 1000)}};
  if (c.judge) phases.emplace_back(rrd::kJudgePhase, rrd::judge_plan(env, c, id, 1, {sample}, 1000));
  if (c.judge && c.verifier)
    phases.emplace_back(rrd::kClaimsPhase, rrd::claims_plan(env, c, id, 1, {sample}, 1000));
  if (c.fixer) phases.emplace_back(rrd::kFixPhase, rrd::fix_plan(env, c, id, 1, {sample}, 1000));
  for (const auto& [name, phase_plan] : phases) {
    auto runnable = load_built_plan(env.workspace, *env.executors, json_text(phase_plan, 2), name,
                                    fmt::format("the review's {} plan", name));
    if (!runnable) return std::unexpected(runnable.error());
  }
  return {};
}

Expected<ReviewRecord> find_review(ReviewEnv& env, const std::string& id) {
  auto found = ORCH_TRY(env.reviews->find_review(id));
  if (found) return *found;
  std::vector<std::string> ids, matches;
  std::optional<ReviewRecord> match;
  for (auto& r : ORCH_TRY(env.reviews->list_reviews())) {
    ids.push_back(r.id);
    if (!id.empty() && r.id.starts_with(id)) {
      matches.push_back(r.id);
      match = std::move(r);
    }
  }
  if (matches.size() == 1) return *match;
  if (matches.size() > 1)
    return fail(ErrorCode::InvalidInput, fmt::format("'{}' names {} reviews: {}; give more of the id", id,
                                                     matches.size(), join(matches, ", ")));
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
  int n = 1;
  auto next_id = [&]() -> Expected<void> {
    for (; ORCH_TRY(env.reviews->find_review(id)); id = fmt::format("{}-{}", base, ++n)) {
    }
    return {};
  };
  ORCH_TRY(next_id());
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
  record.doc_json = json_text(doc);
  // Reviews launched in the same second take the next free id: one that another
  // launch took between the look-up and the insert is passed over, not an error.
  for (int tries = 0;; ++tries) {
    auto inserted = env.reviews->insert_review(record);
    if (inserted) break;
    if (tries >= 100 || !ORCH_TRY(env.reviews->find_review(id))) return std::unexpected(inserted.error());
    ORCH_TRY(next_id());
    record.id = id;
    doc["id"] = id;
    record.doc_json = json_text(doc);
  }
  if (env.on_note) env.on_note(fmt::format("review {} started", id));
  return rrd::drive_review(env, id, rrd::DriveMode::Launch, std::nullopt, LaterEdits::Refuse);
}

Expected<ReviewOutcome> resume_review(ReviewEnv& env, const std::string& id,
                                      std::optional<std::int64_t> spend_cap, LaterEdits later_edits) {
  const ReviewRecord record = ORCH_TRY(find_review(env, id));
  return rrd::drive_review(env, record.id, rrd::DriveMode::Resume, spend_cap, later_edits);
}

Expected<ReviewOutcome> abandon_review(ReviewEnv& env, const std::string& id) {
  const ReviewRecord record = ORCH_TRY(find_review(env, id));
  return rrd::drive_review(env, record.id, rrd::DriveMode::Abandon, std::nullopt, LaterEdits::Refuse);
}

Expected<std::vector<std::string>> unfinished_reviews_of(ReviewEnv& env,
                                                         const std::vector<std::string>& artifacts) {
  std::vector<std::string> out;
  for (const ReviewRecord& r : ORCH_TRY(env.reviews->list_reviews())) {
    if (r.status != ReviewStatus::Running && r.status != ReviewStatus::SpendCap) continue;
    if (fs::path(r.workspace) != env.workspace) continue;
    const json doc = json::parse(r.doc_json, nullptr, false);
    std::vector<std::string> shared;
    if (doc.is_object() && doc.contains("config") && doc["config"].is_object())
      for (const auto& a : doc["config"].value("artifacts", json::array()))
        if (a.is_string() &&
            std::find(artifacts.begin(), artifacts.end(), a.get<std::string>()) != artifacts.end())
          shared.push_back(a.get<std::string>());
    if (shared.empty()) continue;
    out.push_back(
        fmt::format("review {} ({}, {} round{} done) is unfinished on {}: go on with it with `orch review "
                    "--resume {}{}`, "
                    "or leave it unfinished (it runs and spends nothing more unless resumed)",
                    r.id, review_status_name(r.status), r.rounds, r.rounds == 1 ? "" : "s",
                    join(shared, ", "), r.id, r.status == ReviewStatus::SpendCap ? " --spend-cap N" : ""));
  }
  return out;
}

}  // namespace orch::flows
