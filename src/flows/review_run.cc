#include "flows/review_run.h"

#include <fmt/format.h>

#include <cctype>

#include "flows/review_driver.h"
#include "flows/review_plans.h"
#include "flows/stage_plan.h"
#include "util/iso_time.h"
#include "util/json_text.h"
#include "util/strings.h"

namespace orch::flows {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace review_run_detail {

// What drive_review does with the review once it holds its lock.
enum class DriveMode { Launch, Resume, Abandon };

// Takes the review's lock, reads its row as it is now (not as it was before the
// lock), and drives it (Launch, Resume) or ends it (Abandon). `spend_cap`:
// resume's --spend-cap.
Expected<ReviewOutcome> drive_review(ReviewEnv& env, const std::string& id, DriveMode mode,
                                     std::optional<std::int64_t> spend_cap, LaterEdits later_edits) {
  const bool resuming = mode != DriveMode::Launch;
  // The lock is the review's, not a run's: `orch cancel` does not know it, but an
  // interrupted review goes on with --resume.
  auto lock = env.store->lock("review-" + id, [&](const std::string& pid) {
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
  base = base.substr(0, 8) + "-" + base.substr(8) + "-" + name_slug(config.name, "review");
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
