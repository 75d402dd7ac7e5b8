#include "flows/review_plans.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "engine/attempt_render.h"
#include "flows/embedded_files.h"
#include "flows/plan_template.h"
#include "flows/review_gate.h"
#include "flows/stage_plan.h"
#include "orch/workspace.h"
#include "util/json_text.h"
#include "util/read_file.h"
#include "util/strings.h"

namespace orch::flows::review_run_detail {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

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

}  // namespace orch::flows::review_run_detail
